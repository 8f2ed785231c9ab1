import { EventEmitter } from 'node:events';
import { HermesError } from '../errors.js';
import { type PgPool, PgRunBus } from './pg-bus.js';
import type {
  ListeningInstances,
  RunBus,
  RunBusOptions,
  RunControlReply,
  RunControlRequest,
  RunEventRecord,
  RunSettlement,
} from './run-bus-types.js';
import type { SessionStore } from './types.js';

export type {
  AppendOptions,
  ListeningInstances,
  RunBus,
  RunBusOptions,
  RunControlReply,
  RunControlRequest,
  RunEventRecord,
  RunSettlement,
} from './run-bus-types.js';

const UNFINISHED = new Set(['queued', 'running', 'stopping']);

/**
 * The bus of one process (SQLite, or embedding without PostgreSQL): events in memory, control
 * requests answered in-process, and a run's owner is alive exactly when it is this process.
 */
export class LocalRunBus implements RunBus {
  readonly shared = false;
  private readonly events = new Map<string, RunEventRecord[]>();
  private readonly emitter = new EventEmitter();
  private handler: ((request: RunControlRequest) => Promise<RunControlReply>) | null = null;

  constructor(
    readonly holder: string,
    private readonly store: SessionStore,
  ) {
    this.emitter.setMaxListeners(0);
  }

  async append(runId: string, events: RunEventRecord[]): Promise<void> {
    const list = this.events.get(runId) ?? [];
    this.events.set(runId, list);
    for (const event of events) if (!list.some((stored) => stored.seq === event.seq)) list.push(event);
    list.sort((left, right) => left.seq - right.seq);
    const last = events.at(-1);
    if (last) this.emitter.emit(runId, last.seq, events);
  }

  async read(runId: string, afterSeq: number, limit = 500): Promise<RunEventRecord[]> {
    return (this.events.get(runId) ?? []).filter((event) => event.seq > afterSeq).slice(0, limit);
  }

  async readNamed(runId: string, names: string[]): Promise<RunEventRecord[]> {
    return (this.events.get(runId) ?? []).filter((event) => names.includes(String(event.payload.event)));
  }

  async latest(runId: string): Promise<RunEventRecord | null> {
    return this.events.get(runId)?.at(-1) ?? null;
  }

  watch(runId: string, listener: (seq: number, events?: RunEventRecord[]) => void): () => void {
    this.emitter.on(runId, listener);
    return () => this.emitter.off(runId, listener);
  }

  onReconnect(): () => void {
    return () => {};
  }

  async ready(): Promise<void> {}

  serve(handler: (request: RunControlRequest) => Promise<RunControlReply>): void {
    this.handler = handler;
  }

  async request(holder: string, request: RunControlRequest): Promise<RunControlReply | null> {
    if (holder !== this.holder || !this.handler) return null;
    return this.handler(request);
  }

  async leaseHolder(): Promise<string | null> {
    return null;
  }

  async listening(): Promise<ListeningInstances | null> {
    return { size: 0, covers: () => true };
  }

  async leaseHeld(_sessionId: string, holder: string): Promise<boolean> {
    return holder === this.holder;
  }

  async prune(endedBefore: number): Promise<number> {
    let pruned = 0;
    for (const runId of this.events.keys()) {
      const row = await this.store.runs.get(runId);
      if (row && !UNFINISHED.has(row.status) && (row.endedAt ?? row.updatedAt) < endedBefore) {
        pruned += this.events.get(runId)?.length ?? 0;
        this.events.delete(runId);
      }
    }
    return pruned;
  }

  async settleIfUnfinished(runId: string, settlement: RunSettlement): Promise<boolean> {
    const row = await this.store.runs.get(runId);
    if (!row || !UNFINISHED.has(row.status)) return false;
    try {
      await this.store.runs.update(runId, settlement);
    } catch (error) {
      // Settled meanwhile: the store refuses to change a terminal status.
      if (HermesError.isInstance(error) && error.code === 'run_settled') return false;
      throw error;
    }
    return true;
  }

  async relay(): Promise<void> {}

  onRelay(): () => void {
    return () => {};
  }

  async close(): Promise<void> {
    this.emitter.removeAllListeners();
    this.events.clear();
  }
}

/** A store that can lend its PostgreSQL pool to a bus (the PostgreSQL store). */
interface PoolOwner {
  readonly pool: unknown;
}

function lendsPool(store: SessionStore): store is SessionStore & PoolOwner {
  const pool = (store as Partial<PoolOwner>).pool;
  return typeof pool === 'object' && pool !== null && typeof (pool as { query?: unknown }).query === 'function';
}

/**
 * The run bus for a store: the `LISTEN/NOTIFY` bus on a PostgreSQL store (it borrows the store's
 * pool and opens one more connection for `LISTEN`, in the background), else the in-process one.
 */
export function createRunBus(store: SessionStore, holder: string, options: RunBusOptions = {}): RunBus {
  if (!lendsPool(store)) return new LocalRunBus(holder, store);
  return new PgRunBus(store.pool as PgPool, holder, options);
}
