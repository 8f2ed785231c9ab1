import { describe, expect, it } from 'vitest';
import { createFakeClock, FAKE_CLOCK_START } from './fake-clock.js';

function turn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

describe('createFakeClock (manual)', () => {
  it('starts at the given time or at the fixed default', () => {
    expect(createFakeClock(1_000).now()).toBe(1_000);
    expect(createFakeClock({ startMs: 42 }).now()).toBe(42);
    expect(createFakeClock().now()).toBe(FAKE_CLOCK_START);
    expect(new Date(FAKE_CLOCK_START).toISOString()).toBe('2026-01-01T00:00:00.000Z');
  });

  it('advance fires due sleeps and timers in time order, with now() at each due time', async () => {
    const clock = createFakeClock(0);
    const fired: string[] = [];
    clock.sleep(300).then(() => fired.push(`sleep 300 at ${clock.now()}`));
    clock.setTimer(() => fired.push(`timer 100 at ${clock.now()}`), 100);
    clock.sleep(100).then(() => fired.push(`sleep 100 at ${clock.now()}`));
    clock.setTimer(() => fired.push(`timer 500 at ${clock.now()}`), 500);

    await clock.advance(299);
    expect(fired).toEqual(['timer 100 at 100', 'sleep 100 at 100']);
    expect(clock.now()).toBe(299);
    await clock.advance(1);
    expect(fired).toEqual(['timer 100 at 100', 'sleep 100 at 100', 'sleep 300 at 300']);
    expect(clock.pendingCount).toBe(1);
    expect(clock.sleeps).toEqual([300, 100]);
    expect(clock.timers).toEqual([100, 500]);
  });

  it('advance also fires timers scheduled while advancing when they fall inside the window', async () => {
    const clock = createFakeClock(0);
    const fired: number[] = [];
    const loop = async () => {
      for (let index = 0; index < 5; index++) {
        await clock.sleep(10);
        fired.push(clock.now());
      }
    };
    const done = loop();
    await clock.advance(35);
    expect(fired).toEqual([10, 20, 30]);
    await clock.advance(100);
    await done;
    expect(fired).toEqual([10, 20, 30, 40, 50]);
    expect(clock.now()).toBe(135);
  });

  it('a cancelled timer never fires', async () => {
    const clock = createFakeClock(0);
    let fired = false;
    const cancel = clock.setTimer(() => {
      fired = true;
    }, 50);
    cancel();
    await clock.advance(100);
    expect(fired).toBe(false);
    expect(clock.pendingCount).toBe(0);
  });

  it('sleep rejects with the signal reason on abort, and at once when already aborted', async () => {
    const clock = createFakeClock(0);
    const abort = new AbortController();
    const sleeping = clock.sleep(1_000, abort.signal);
    const reason = new Error('stop');
    abort.abort(reason);
    await expect(sleeping).rejects.toBe(reason);
    expect(clock.pendingCount).toBe(0);
    await expect(clock.sleep(5, abort.signal)).rejects.toBe(reason);
    expect(clock.sleeps).toEqual([1_000, 5]);
  });

  it('runAll fires everything pending, including chains, and stops on runaway timers', async () => {
    const clock = createFakeClock(0);
    const fired: number[] = [];
    clock.setTimer(() => {
      fired.push(clock.now());
      clock.setTimer(() => fired.push(clock.now()), 1_000);
    }, 60_000);
    await clock.runAll();
    expect(fired).toEqual([60_000, 61_000]);

    const runaway = createFakeClock(0);
    const reschedule = () => {
      runaway.setTimer(reschedule, 1);
    };
    reschedule();
    await expect(runaway.runAll()).rejects.toThrow(/keeps rescheduling itself/);
  });

  it('nothing fires without advance', async () => {
    const clock = createFakeClock(0);
    let fired = false;
    clock.setTimer(() => {
      fired = true;
    }, 0);
    for (let index = 0; index < 10; index++) await turn();
    expect(fired).toBe(false);
    await clock.advance(0);
    expect(fired).toBe(true);
  });
});

describe('createFakeClock (autoAdvance)', () => {
  it('completes a 7 s sleep at once, moving now() by 7000 and recording the duration', async () => {
    const clock = createFakeClock({ startMs: 0, autoAdvance: true });
    const startedAt = performance.now();
    await clock.sleep(7_000);
    expect(clock.now()).toBe(7_000);
    expect(clock.sleeps).toEqual([7_000]);
    expect(performance.now() - startedAt).toBeLessThan(1_000);
  });

  it('fires pending timers in time order', async () => {
    const clock = createFakeClock({ startMs: 0, autoAdvance: true });
    const order: string[] = [];
    await Promise.all([
      clock.sleep(5_000).then(() => order.push(`five at ${clock.now()}`)),
      clock.sleep(1_000).then(() => order.push(`one at ${clock.now()}`)),
      new Promise<void>((resolve) =>
        clock.setTimer(() => {
          order.push(`three at ${clock.now()}`);
          resolve();
        }, 3_000),
      ),
    ]);
    expect(order).toEqual(['one at 1000', 'three at 3000', 'five at 5000']);
  });

  it('lets the code a timer guards finish first: a timeout fires only once nothing else is pending', async () => {
    const clock = createFakeClock({ startMs: 0, autoAdvance: true });
    let timedOut = false;
    const cancel = clock.setTimer(() => {
      timedOut = true;
    }, 30_000);
    // Work made of many microtask and immediate hops completes before the clock jumps.
    for (let index = 0; index < 50; index++) await Promise.resolve();
    await clock.sleep(100);
    expect(timedOut).toBe(false);
    cancel();
    expect(clock.pendingCount).toBe(0);
  });

  it('waits while isBusy reports work in flight', async () => {
    let busy = true;
    const clock = createFakeClock({ startMs: 0, autoAdvance: { isBusy: () => busy } });
    let fired = false;
    clock.setTimer(() => {
      fired = true;
    }, 10);
    for (let index = 0; index < 20; index++) await turn();
    expect(fired).toBe(false);
    busy = false;
    for (let index = 0; index < 20 && !fired; index++) await turn();
    expect(fired).toBe(true);
  });

  it('can be switched off and on', async () => {
    const clock = createFakeClock({ startMs: 0, autoAdvance: true });
    clock.setAutoAdvance(false);
    let fired = false;
    clock.setTimer(() => {
      fired = true;
    }, 10);
    for (let index = 0; index < 20; index++) await turn();
    expect(fired).toBe(false);
    clock.setAutoAdvance({ quietTurns: 1 });
    for (let index = 0; index < 20 && !fired; index++) await turn();
    expect(fired).toBe(true);
    expect(clock.now()).toBe(10);
  });
});
