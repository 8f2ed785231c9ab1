import { EventEmitter } from 'node:events';
import type { JsonObject, JsonValue } from '../types.js';
import { type PgPool, PgRunBus } from './pg-bus.js';
import type { RunRecord, SessionStore } from './types.js';

/** One wire event of a run, as the runs API sends it (`seq` is its position, from 0). */
export interface RunEventRecord {
  seq: number;
  payload: JsonObject;
}

/** A control request for the instance running a run: an approval answer, a steer or a stop (issue 17.2). */
export interface RunControlRequest {
  kind: 'approval' | 'steer' | 'stop';
  runId: string;
  body: JsonObject;
}

/** The owner's answer to a control request: the HTTP status and body it would have sent itself. */
export interface RunControlReply {
  status: number;
  body: JsonObject;
  headers?: Record<string, string>;
}

/** The terminal fields written by {@link RunBus.settleIfUnfinished}. */
export type RunSettlement = Pick<RunRecord, 'status' | 'result' | 'exitReason' | 'error'> & { endedAt: number };

/**
 * What the runs API needs to serve a run from any instance (ADR 0018): durable wire events with
 * wake-ups, control requests routed to the instance that owns the run's turn, and the liveness of
 * that owner. On PostgreSQL ({@link createRunBus} over a PostgreSQL store) events are rows of
 * `run_events`, wake-ups and control requests are `LISTEN/NOTIFY`; otherwise one process holds
 * everything and the bus is in memory ({@link LocalRunBus}, `shared` false).
 */
export interface RunBus {
  /** The lease holder id of this instance (the host's `holderId`). */
  readonly holder: string;
  /** True when other instances may serve the same runs (the events must then be appended here). */
  readonly shared: boolean;
  /** Appends events of a run (ascending `seq`; a `seq` already stored is kept) and wakes its watchers everywhere. */
  append(runId: string, events: RunEventRecord[]): Promise<void>;
  /** Events with `seq > afterSeq`, oldest first, at most `limit` (default 500). */
  read(runId: string, afterSeq: number, limit?: number): Promise<RunEventRecord[]>;
  /** Every event of a run whose name is in `names`, oldest first. */
  readNamed(runId: string, names: string[]): Promise<RunEventRecord[]>;
  /** The newest event of a run, or null when it has none. */
  latest(runId: string): Promise<RunEventRecord | null>;
  /** Calls `listener` with the newest seq whenever events of the run are appended (by any instance); returns the unsubscribe. */
  watch(runId: string, listener: (seq: number) => void): () => void;
  /** Calls `listener` after the bus lost and regained its connection (wake-ups may have been missed). */
  onReconnect(listener: () => void): () => void;
  /** Serves the control requests addressed to this instance. */
  serve(handler: (request: RunControlRequest) => Promise<RunControlReply>): void;
  /**
   * Sends a control request to the instance `holder` and resolves with its reply, or with null when no
   * reply came within `timeoutMs` (the caller then checks whether that instance still holds the turn).
   */
  request(holder: string, request: RunControlRequest, timeoutMs: number): Promise<RunControlReply | null>;
  /** Whether `holder` holds an unexpired turn lease on the session. */
  leaseHeld(sessionId: string, holder: string): Promise<boolean>;
  /** Writes a terminal state on a run that is still `queued`, `running` or `stopping`; false when it had settled. */
  settleIfUnfinished(runId: string, settlement: RunSettlement): Promise<boolean>;
  /** Stops listening; the store stays open. */
  close(): Promise<void>;
}

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
    if (last) this.emitter.emit(runId, last.seq);
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

  watch(runId: string, listener: (seq: number) => void): () => void {
    this.emitter.on(runId, listener);
    return () => this.emitter.off(runId, listener);
  }

  onReconnect(): () => void {
    return () => {};
  }

  serve(handler: (request: RunControlRequest) => Promise<RunControlReply>): void {
    this.handler = handler;
  }

  async request(holder: string, request: RunControlRequest): Promise<RunControlReply | null> {
    if (holder !== this.holder || !this.handler) return null;
    return this.handler(request);
  }

  async leaseHeld(_sessionId: string, holder: string): Promise<boolean> {
    return holder === this.holder;
  }

  async settleIfUnfinished(runId: string, settlement: RunSettlement): Promise<boolean> {
    const row = await this.store.runs.get(runId);
    if (!row || !UNFINISHED.has(row.status)) return false;
    await this.store.runs.update(runId, settlement);
    return true;
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

/** Options of {@link createRunBus}. */
export interface RunBusOptions {
  /** Receives connection problems of the PostgreSQL bus. */
  onWarning?: (message: string, details: Record<string, JsonValue>) => void;
}

/**
 * The run bus for a store: the `LISTEN/NOTIFY` bus on a PostgreSQL store (it borrows the store's
 * pool and opens one more connection for `LISTEN`, in the background), else the in-process one.
 */
export function createRunBus(store: SessionStore, holder: string, options: RunBusOptions = {}): RunBus {
  if (!lendsPool(store)) return new LocalRunBus(holder, store);
  return new PgRunBus(store.pool as PgPool, holder, options);
}
