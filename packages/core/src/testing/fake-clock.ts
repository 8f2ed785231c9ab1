/**
 * A `Clock` whose time only moves when a test says so, or, in auto-advance mode, whenever nothing else is
 * happening (spec/core.md §22.2).
 */
import type { Clock } from '../types.js';
import { abortReason } from './script.js';

/** Tuning of auto-advance. */
export interface AutoAdvanceOptions {
  /**
   * Event-loop turns (`setImmediate` callbacks) that must pass with no timer scheduled or cancelled, and no
   * in-flight request reported busy, before the next timer fires. Default 3.
   */
  quietTurns?: number;
  /**
   * Extra work that must finish before time may jump, such as a child process the test started. Called once per
   * turn; while it returns true nothing fires. By default only the process's in-flight file-system and DNS
   * requests count (see `hasInFlightRequests`).
   */
  isBusy?: () => boolean;
}

/** Options of `createFakeClock`. */
export interface FakeClockOptions {
  /** Epoch milliseconds at creation. Default `FAKE_CLOCK_START` (2026-01-01T00:00:00Z). */
  startMs?: number;
  /** Fire pending sleeps and timers by themselves once the event loop is quiet. Default false. */
  autoAdvance?: boolean | AutoAdvanceOptions;
}

/** A clock driven by the test. */
export interface FakeClock extends Clock {
  /** Requested durations of every `sleep` call, in order (aborted ones included). */
  readonly sleeps: number[];
  /** Requested durations of every `setTimer` call, in order (cancelled ones included). */
  readonly timers: number[];
  /** Sleeps and timers not yet fired, cancelled or aborted. */
  readonly pendingCount: number;
  /**
   * Moves time forward by `ms`, firing every sleep and timer due by then in time order (ties in scheduling order),
   * including those scheduled while advancing, and lets pending microtasks and immediates run after each one.
   */
  advance(ms: number): Promise<void>;
  /** Fires pending sleeps and timers in time order until none is left (throws after 10,000, a runaway timer). */
  runAll(): Promise<void>;
  /** Turns auto-advance on (optionally with new tuning) or off. */
  setAutoAdvance(enabled: boolean | AutoAdvanceOptions): void;
}

/** Default start time of a fake clock: 2026-01-01T00:00:00.000Z. */
export const FAKE_CLOCK_START = Date.UTC(2026, 0, 1);

const RUN_ALL_LIMIT = 10_000;

/** Resource types of in-flight one-shot requests, as `process.getActiveResourcesInfo()` names them. */
const REQUEST_RESOURCES = new Set([
  'FSReqCallback',
  'FSReqPromise',
  'GetAddrInfoReqWrap',
  'GetNameInfoReqWrap',
  'QueryReqWrap',
  'TCPConnectWrap',
  'PipeConnectWrap',
]);

/**
 * True while the process has a file-system request, DNS lookup or connection attempt in flight. These are
 * short-lived, so waiting for them cannot stall auto-advance; long-lived handles (sockets, child processes, real
 * timers) are deliberately ignored.
 */
export function hasInFlightRequests(): boolean {
  return process.getActiveResourcesInfo().some((name) => REQUEST_RESOURCES.has(name));
}

interface PendingTimer {
  sequence: number;
  due: number;
  fire: () => void;
}

function settleTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

function normalizeDuration(ms: number): number {
  return Number.isFinite(ms) && ms > 0 ? ms : 0;
}

class ManualClock implements FakeClock {
  readonly sleeps: number[] = [];
  readonly timers: number[] = [];
  #now: number;
  #pending: PendingTimer[] = [];
  #sequence = 0;
  #auto: Required<AutoAdvanceOptions> | undefined;
  #autoScheduled = false;
  #activity = 0;
  #seenActivity = -1;
  #quietTurns = 0;

  constructor(options: FakeClockOptions) {
    this.#now = options.startMs ?? FAKE_CLOCK_START;
    if (options.autoAdvance !== undefined) this.setAutoAdvance(options.autoAdvance);
  }

  get pendingCount(): number {
    return this.#pending.length;
  }

  now(): number {
    return this.#now;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    this.sleeps.push(ms);
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(abortReason(signal));
        return;
      }
      const onAbort = () => {
        this.#remove(timer);
        reject(abortReason(signal as AbortSignal));
      };
      const timer = this.#schedule(ms, () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      });
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  setTimer(fn: () => void, ms: number): () => void {
    this.timers.push(ms);
    const timer = this.#schedule(ms, fn);
    return () => this.#remove(timer);
  }

  async advance(ms: number): Promise<void> {
    const target = this.#now + normalizeDuration(ms);
    for (;;) {
      const next = this.#next();
      if (next === undefined || next.due > target) break;
      this.#fire(next);
      await settleTurn();
    }
    this.#now = Math.max(this.#now, target);
    await settleTurn();
  }

  async runAll(): Promise<void> {
    for (let fired = 0; ; fired++) {
      const next = this.#next();
      if (next === undefined) return;
      if (fired >= RUN_ALL_LIMIT) {
        throw new Error(
          `runAll fired ${RUN_ALL_LIMIT} timers and more are pending: a timer keeps rescheduling itself.`,
        );
      }
      this.#fire(next);
      await settleTurn();
    }
  }

  setAutoAdvance(enabled: boolean | AutoAdvanceOptions): void {
    if (enabled === false) {
      this.#auto = undefined;
      return;
    }
    const options = enabled === true ? {} : enabled;
    this.#auto = { quietTurns: options.quietTurns ?? 3, isBusy: options.isBusy ?? hasInFlightRequests };
    this.#kick();
  }

  #schedule(ms: number, fire: () => void): PendingTimer {
    const timer = { sequence: this.#sequence++, due: this.#now + normalizeDuration(ms), fire };
    this.#pending.push(timer);
    this.#activity++;
    this.#kick();
    return timer;
  }

  #remove(timer: PendingTimer): void {
    const index = this.#pending.indexOf(timer);
    if (index === -1) return;
    this.#pending.splice(index, 1);
    this.#activity++;
  }

  #next(): PendingTimer | undefined {
    let earliest: PendingTimer | undefined;
    for (const timer of this.#pending) {
      if (earliest === undefined || timer.due < earliest.due) earliest = timer;
    }
    return earliest;
  }

  #fire(timer: PendingTimer): void {
    this.#remove(timer);
    this.#now = Math.max(this.#now, timer.due);
    timer.fire();
  }

  #kick(): void {
    if (this.#auto === undefined || this.#autoScheduled || this.#pending.length === 0) return;
    this.#autoScheduled = true;
    // Not unref'd: an unref'd immediate does not stop the poll phase from blocking, so it would only run when some
    // unrelated I/O woke the loop. The loop stops by itself once nothing is pending.
    setImmediate(this.#tick);
  }

  readonly #tick = (): void => {
    this.#autoScheduled = false;
    const auto = this.#auto;
    if (auto === undefined || this.#pending.length === 0) return;
    if (this.#activity !== this.#seenActivity || auto.isBusy()) {
      this.#seenActivity = this.#activity;
      this.#quietTurns = 0;
    } else if (++this.#quietTurns >= auto.quietTurns) {
      this.#quietTurns = 0;
      const next = this.#next();
      if (next !== undefined) this.#fire(next);
    }
    this.#kick();
  };
}

/**
 * Creates a fake clock starting at `startMs` (or `options.startMs`; default 2026-01-01T00:00:00Z).
 *
 * Manual mode (the default): nothing fires until `advance(ms)` or `runAll()`.
 *
 * Auto-advance mode (`{ autoAdvance: true }`): while sleeps or timers are pending, the clock checks once per
 * event-loop turn (a `setImmediate` loop, which keeps the process alive while anything is pending). When `quietTurns`
 * consecutive turns (default 3) pass with no sleep or timer scheduled or cancelled and `isBusy()` false (default:
 * no file-system or DNS request in flight), it moves `now()` to the earliest due time and fires that one sleep or
 * timer, then waits for quiet again. The effect: a 7 s backoff sleep completes within a few turns with `now()`
 * 7000 ms later, timers fire in time order, and a timeout only fires once the code it guards has nothing else to
 * do. Auto-advance knows nothing about child processes, sockets or real timers: a long timeout guarding a real
 * subprocess fires as soon as the loop is otherwise quiet, unless `isBusy` reports the process.
 */
export function createFakeClock(startOrOptions?: number | FakeClockOptions): FakeClock {
  const options = typeof startOrOptions === 'number' ? { startMs: startOrOptions } : (startOrOptions ?? {});
  return new ManualClock(options);
}
