import { describe, expect, it } from 'vitest';
import { createFakeClock } from '../../src/testing/index.js';
import { retry } from '../../src/util/retry.js';

describe('retry', () => {
  it('retries after the delays the policy gives, each attempt right after the injected sleep, until one succeeds', async () => {
    const clock = createFakeClock();
    const attempts: number[] = [];
    const told: string[] = [];
    const result = retry(
      (attemptNumber) => {
        attempts.push(attemptNumber);
        if (attemptNumber < 3) throw new Error(`failure ${attemptNumber}`);
        return 'done';
      },
      {
        next: (_error, attemptNumber) => ({ retryInMs: attemptNumber * 100 }),
        onRetry: (error, attemptNumber, delayMs) =>
          told.push(`${(error as Error).message} #${attemptNumber} then ${delayMs} ms`),
        sleep: (ms, signal) => clock.sleep(ms, signal),
      },
    );
    // Each advance fires the pending wait and lets the next attempt run before it returns.
    await new Promise((resolve) => setImmediate(resolve));
    expect(attempts).toEqual([1]);
    await clock.advance(100);
    expect(attempts).toEqual([1, 2]);
    await clock.advance(200);
    await expect(result).resolves.toBe('done');
    expect(attempts).toEqual([1, 2, 3]);
    expect(clock.sleeps).toEqual([100, 200]);
    expect(told).toEqual(['failure 1 #1 then 100 ms', 'failure 2 #2 then 200 ms']);
  });

  it('throws the error the policy names, and the attempt’s own errors unchanged, TypeErrors and non-errors included', async () => {
    const typeError = new TypeError('not a network error');
    const seen: unknown[] = [];
    const thrown = await retry(
      (attemptNumber) => {
        throw attemptNumber === 1 ? typeError : 'a string';
      },
      {
        next: (error, attemptNumber) => {
          seen.push(error);
          return attemptNumber === 1 ? { retryInMs: 0 } : { fail: error };
        },
      },
    ).catch((error: unknown) => error);
    expect(thrown).toBe('a string');
    expect(seen).toEqual([typeError, 'a string']);
    // Thrown as is: p-retry never sees it, so neither its TypeError rule nor its non-Error wrapping applies.
    expect(Object.keys(typeError)).toEqual([]);

    const spent = new Error('budget spent');
    const original = new Error('locked');
    await expect(
      retry(
        () => {
          throw original;
        },
        { next: () => ({ fail: spent }) },
      ),
    ).rejects.toBe(spent);
    expect(Object.keys(original)).toEqual([]);
  });

  it('ends at once with the sleep’s rejection when the signal aborts the wait', async () => {
    const clock = createFakeClock();
    const abort = new AbortController();
    let attempts = 0;
    const result = retry(
      () => {
        attempts += 1;
        throw new Error('overloaded');
      },
      {
        next: () => ({ retryInMs: 5_000 }),
        sleep: (ms, signal) => clock.sleep(ms, signal),
        signal: abort.signal,
      },
    ).catch((error: unknown) => error);
    await new Promise((resolve) => setImmediate(resolve));
    const reason = new Error('cancelled by the user');
    abort.abort(reason);
    expect(await result).toBe(reason);
    expect(attempts).toBe(1);
    expect(Object.keys(reason)).toEqual([]);
  });

  it('runs the first attempt synchronously, within the call', () => {
    let started = false;
    void retry(
      () => {
        started = true;
      },
      { next: (error) => ({ fail: error }) },
    );
    expect(started).toBe(true);
  });
});
