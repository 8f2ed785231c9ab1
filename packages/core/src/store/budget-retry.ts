import type { Clock, Logger } from '../types.js';
import { retry } from '../util/retry.js';

const FIRST_DELAY_MS = 50;
const LONGEST_DELAY_MS = 1_000;

/** Delay before retry number `attempt` (0-based): doubling from 50 ms up to 1 s, jittered to half–full. */
export function retryDelay(attempt: number, random: () => number = Math.random): number {
  const ceiling = Math.min(LONGEST_DELAY_MS, FIRST_DELAY_MS * 2 ** Math.min(attempt, 10));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

/** What {@link retryWithinBudget} needs besides the attempt itself. */
export interface BudgetRetryOptions {
  /** How long retrying may go on, in ms of the clock (or of slept time, when the clock stands still). */
  budgetMs: number;
  clock: Clock;
  logger: Logger;
  /** True for an error another attempt may get past; any other error is thrown as is. */
  isRetryable: (error: unknown) => boolean;
  /** True for a retryable error that will not go away: reported with `exhausted` at once. */
  isPermanent?: (error: unknown) => boolean;
  /** The error thrown once the next delay would overrun the budget. */
  exhausted: (error: unknown, attempts: number, elapsedMs: number) => Error;
  /** Logged (at `logLevel`, default debug) before each sleep, with the attempt and delay. */
  logMessage: string;
  logLevel?: 'debug' | 'warn';
  logFields?: (error: unknown) => Record<string, unknown>;
  /** Multiplies {@link retryDelay}; default 1. */
  delayScale?: number;
  /** Checked before the first attempt and after every sleep (a store closed meanwhile). */
  assertOpen?: () => void;
}

/**
 * Runs `attempt` until it succeeds, throws an error that is not retryable, or the budget is spent:
 * the one retry discipline of the SQLite store (lock errors), the PostgreSQL store (serialization
 * failures and lost races) and the PostgreSQL connect at open (an unreachable server).
 */
export async function retryWithinBudget<T>(attempt: () => T | Promise<T>, options: BudgetRetryOptions): Promise<T> {
  options.assertOpen?.();
  const { clock } = options;
  const started = clock.now();
  // Counting the slept time too keeps the budget finite under a clock whose `now` stands still.
  let slept = 0;
  return retry(() => attempt(), {
    next(error, attemptNumber) {
      if (!options.isRetryable(error)) return { fail: error };
      const delay = retryDelay(attemptNumber - 1) * (options.delayScale ?? 1);
      const elapsed = Math.max(clock.now() - started, slept);
      if (options.isPermanent?.(error) === true || elapsed + delay > options.budgetMs)
        return { fail: options.exhausted(error, attemptNumber, elapsed) };
      return { retryInMs: delay };
    },
    onRetry(error, attemptNumber, delayMs) {
      options.logger[options.logLevel ?? 'debug'](options.logMessage, {
        ...options.logFields?.(error),
        attempt: attemptNumber,
        delayMs,
      });
    },
    async sleep(ms) {
      await clock.sleep(ms);
      slept += ms;
      options.assertOpen?.();
    },
  });
}
