import type { JsonValue } from '../types.js';
import { retry } from '../util/retry.js';
import type { RunBus, RunEventRecord } from './run-bus-types.js';

/** Default of {@link RunEventOutboxOptions.maxEvents}: ten times a run's backlog (spec §19.3). */
export const DEFAULT_RUN_EVENT_OUTBOX = 10_000;
/** Events written per append: a long outage's queue goes out in several statements, in order. */
const BATCH = 500;
/** Waits between failed appends: 100 ms doubling to 2 s, then every 2 s until the store answers. */
const RETRY_DELAYS_MS = [100, 200, 400, 800, 1_600, 2_000];

/** Options of {@link RunEventOutbox}. */
export interface RunEventOutboxOptions {
  /**
   * Most events of one run kept while they cannot be written (the store is unreachable); the next one overflows
   * the run's outbox (`add` returns false). Default {@link DEFAULT_RUN_EVENT_OUTBOX}.
   */
  maxEvents?: number;
  /** Told once per run when its events start waiting for the store, and when they are written again. */
  onWarning?: (message: string, details: Record<string, JsonValue>) => void;
}

interface RunQueue {
  events: RunEventRecord[];
  writing: Promise<void> | null;
  overflowed: boolean;
  ended: boolean;
}

/**
 * The events of the runs an instance owns on their way to the shared bus (issue 33.2, ADR 0050). Each run's events
 * are written in order, one append at a time (events added meanwhile go in the next); an append that fails (the
 * database is restarting) is retried with backoff until it succeeds, while the run's later events wait behind it,
 * so the stored seqs have no gap. At most `maxEvents` wait per run: past that the run's outbox overflows and keeps
 * nothing more but the run's terminal event, which the caller makes a `run.interrupted` saying so.
 */
export class RunEventOutbox {
  private readonly queues = new Map<string, RunQueue>();
  private readonly maxEvents: number;
  private closed = false;

  constructor(
    private readonly bus: RunBus,
    private readonly options: RunEventOutboxOptions = {},
  ) {
    this.maxEvents = Math.max(1, options.maxEvents ?? DEFAULT_RUN_EVENT_OUTBOX);
  }

  /**
   * Queues an event of a run and starts writing it. Returns false, keeping nothing, when the run's outbox has
   * overflowed (now or before): `maxEvents` events were waiting. An event added with `terminal` (the run's last) is
   * always kept, one past the bound, so the run's end reaches the store once it is back.
   */
  add(runId: string, event: RunEventRecord, terminal = false): boolean {
    if (this.closed) return false;
    let queue = this.queues.get(runId);
    if (!queue) {
      queue = { events: [], writing: null, overflowed: false, ended: false };
      this.queues.set(runId, queue);
    }
    if (queue.ended) return false;
    if (!terminal && (queue.overflowed || queue.events.length >= this.maxEvents)) {
      queue.overflowed = true;
      return false;
    }
    if (terminal) queue.ended = true;
    queue.events.push(event);
    queue.writing ??= this.write(runId, queue);
    return true;
  }

  /** True once the run's outbox overflowed: its later events (but the terminal one) are not kept. */
  overflowed(runId: string): boolean {
    return this.queues.get(runId)?.overflowed ?? false;
  }

  /** Events of the run waiting to be written. */
  pending(runId: string): number {
    return this.queues.get(runId)?.events.length ?? 0;
  }

  /** Resolves once every event of the run added so far is written (or the outbox is closed). */
  async drained(runId: string): Promise<void> {
    for (;;) {
      const writing = this.queues.get(runId)?.writing;
      if (!writing) return;
      await writing;
    }
  }

  /** Stops writing: events still waiting are dropped (the process is ending). */
  close(): void {
    this.closed = true;
  }

  private async write(runId: string, queue: RunQueue): Promise<void> {
    let waited = false;
    try {
      while (queue.events.length > 0 && !this.closed) {
        const batch = queue.events.slice(0, BATCH);
        // The run's terminal event is in this batch: it goes at once rather than behind another run's append.
        const last = queue.ended && batch.length === queue.events.length;
        const written = await retry(
          async () => {
            if (this.closed) return false;
            await this.bus.append(runId, batch, { last });
            return true;
          },
          {
            next: (_error, attempt) => ({
              retryInMs: RETRY_DELAYS_MS[Math.min(attempt - 1, RETRY_DELAYS_MS.length - 1)] ?? 2_000,
            }),
            onRetry: (error) => {
              if (waited) return;
              waited = true;
              this.options.onWarning?.('run events waiting for the store; retrying', {
                runId,
                pending: queue.events.length,
                error: String(error),
              });
            },
            // A real timer that does not keep the process alive, as the bus's own reconnects.
            sleep: (ms) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref()),
          },
        );
        if (!written) return;
        queue.events.splice(0, batch.length);
      }
      if (waited) this.options.onWarning?.('run events written after the store returned', { runId });
    } finally {
      queue.writing = null;
      // A run whose last event is written has nothing more to send; its overflow mark goes with it.
      if (queue.ended && queue.events.length === 0) this.queues.delete(runId);
    }
  }
}
