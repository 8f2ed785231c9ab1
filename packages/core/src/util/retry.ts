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
 * Runs `attempt` until it succeeds or `policy.next` returns an error to throw: the one retry loop of the core
 * (the SQLite and PostgreSQL stores' budgeted retries, the run bus's reconnects, the model calls of a turn and
 * the auxiliary calls; docs/adr/0046-one-retry-helper.md). The first attempt starts synchronously, within
 * this call, and each next one as soon as the wait ends: no timer of its own between them, so a test's fake
 * clock alone decides when an attempt runs.
 */
export async function retry<T>(attempt: (attemptNumber: number) => T | Promise<T>, policy: RetryPolicy): Promise<T> {
  for (let attemptNumber = 1; ; attemptNumber += 1) {
    try {
      return await attempt(attemptNumber);
    } catch (error) {
      const step = policy.next(error, attemptNumber);
      if ('fail' in step) throw step.fail;
      policy.onRetry?.(error, attemptNumber, step.retryInMs);
      if (policy.sleep) await policy.sleep(step.retryInMs, policy.signal);
    }
  }
}
