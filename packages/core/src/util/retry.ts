import pRetry from 'p-retry';

/**
 * What {@link retry} does after a failed attempt: how long to wait before the next attempt, or
 * which error to throw instead of retrying.
 */
export type RetryStep = { retryInMs: number } | { fail: unknown };

/** The retry discipline of one loop: which failures are retried, after which delay, and how the wait is made. */
export interface RetryPolicy {
  /**
   * Called after each failed attempt with its error and its number (1 for the first attempt). Returns the
   * delay before the next attempt, or the error to throw: the attempt's own, or one that says the budget is
   * spent. May read and keep state of its own (a budget, the previous delay).
   */
  next(error: unknown, attemptNumber: number): RetryStep;
  /** Told of each retry once it is decided, before the wait: a log line, a `retry` event. */
  onRetry?(error: unknown, attemptNumber: number, delayMs: number): void;
  /**
   * Waits `ms` before the next attempt; a rejection ends the retrying and is thrown as is. The core passes
   * its `Clock`'s sleep, so that a test's fake clock drives the waits. Without it the next attempt follows
   * at once.
   */
  sleep?(ms: number, signal?: AbortSignal): Promise<void>;
  /** Passed to `sleep`, so that an abort ends the wait at once. */
  signal?: AbortSignal;
}

/**
 * Carries an attempt's failure through p-retry, which never retries a `TypeError` that does not look like a
 * network error and replaces a thrown non-`Error`: the loops decide by their own rules, and the attempt's own
 * error comes out unchanged.
 */
class FailedAttempt extends Error {
  constructor(readonly failure: unknown) {
    super('attempt failed');
  }
}

/**
 * Runs `attempt` until it succeeds or `policy.next` returns an error to throw: the one retry loop of the core
 * (the SQLite and PostgreSQL stores' budgeted retries, the run bus's reconnects, the model calls of a turn and
 * the auxiliary calls; docs/adr/0046-one-retry-helper.md). p-retry runs and counts the attempts; the policy
 * decides, and waits through `policy.sleep`, because p-retry's own waits are real timers that a test's fake
 * clock cannot drive. p-retry's own wait is 0 ms, which it skips: each next attempt starts as soon as the
 * policy's wait ends, with no timer in between. The first attempt starts synchronously, within this call.
 */
export async function retry<T>(attempt: (attemptNumber: number) => T | Promise<T>, policy: RetryPolicy): Promise<T> {
  // The first attempt runs outside p-retry: nearly every call succeeds at once, and p-retry's set-up for each call
  // (its options, its abort plumbing, its promise chain) was a visible share of a short turn's CPU, paid on every
  // store read and write (issue 34.3). A failure goes through the same policy step p-retry's `shouldRetry` takes.
  try {
    return await attempt(1);
  } catch (error) {
    const step = policy.next(error, 1);
    if ('fail' in step) throw step.fail;
    policy.onRetry?.(error, 1, step.retryInMs);
    if (policy.sleep) await policy.sleep(step.retryInMs, policy.signal);
  }
  try {
    return await pRetry(
      async (attemptNumber) => {
        try {
          // p-retry counts from 1 again: its first attempt is this loop's second.
          return await attempt(attemptNumber + 1);
        } catch (error) {
          throw new FailedAttempt(error);
        }
      },
      {
        // Never stops by itself and never waits; no signal either, so that an abort reaches only the wait
        // (the attempt decides what an abort during it means).
        retries: Number.POSITIVE_INFINITY,
        minTimeout: 0,
        maxTimeout: 0,
        // Whatever this throws (the policy's error, the wait's rejection) p-retry throws as is.
        shouldRetry: async ({ error, attemptNumber }) => {
          const failure = (error as FailedAttempt).failure;
          const step = policy.next(failure, attemptNumber + 1);
          if ('fail' in step) throw step.fail;
          policy.onRetry?.(failure, attemptNumber + 1, step.retryInMs);
          if (policy.sleep) await policy.sleep(step.retryInMs, policy.signal);
          return true;
        },
      },
    );
  } catch (error) {
    // Unreachable with unlimited retries and no time limit, but never let the carrier out.
    throw error instanceof FailedAttempt ? error.failure : error;
  }
}
