import type { JsonObject, JsonValue } from '../types.js';
import type { ListeningInstances, RunRecord } from './types.js';

export type { ListeningInstances } from './types.js';

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

/** Options of {@link RunBus.append}. */
export interface AppendOptions {
  /** The run's final events (its terminal one among them): sent at once, not after another run's append in flight. */
  last?: boolean;
}

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
  /**
   * Appends events of a run (ascending `seq`; a `seq` already stored is kept) and wakes its watchers everywhere. A
   * run's appends must not overlap: the next is made once the last has resolved (the outbox does so), which is what
   * keeps each run's events in order. `options.last` marks the run's final events (its terminal one): readers on other
   * instances wait for them to close their streams, so they are not held behind another run's append in flight.
   */
  append(runId: string, events: RunEventRecord[], options?: AppendOptions): Promise<void>;
  /** Events with `seq > afterSeq`, oldest first, at most `limit` (default 500). */
  read(runId: string, afterSeq: number, limit?: number): Promise<RunEventRecord[]>;
  /** Every event of a run whose name is in `names`, oldest first. */
  readNamed(runId: string, names: string[]): Promise<RunEventRecord[]>;
  /** The newest event of a run, or null when it has none. */
  latest(runId: string): Promise<RunEventRecord | null>;
  /**
   * Calls `listener` with the newest seq whenever events of the run are appended (by any instance); returns the
   * unsubscribe. The appended events come along when they fit in the wake-up (PostgreSQL limits a notification to
   * 8,000 bytes), so a reader need not fetch them; without them, or after a gap, it reads them with {@link read}.
   */
  watch(runId: string, listener: (seq: number, events?: RunEventRecord[]) => void): () => void;
  /** Calls `listener` after the bus lost and regained its connection (wake-ups may have been missed). */
  onReconnect(listener: () => void): () => void;
  /**
   * Resolves once the bus hears the other instances (on PostgreSQL, once its connection listens): a message another
   * instance sends before that is never heard. The in-process bus is ready at once.
   */
  ready(): Promise<void>;
  /** Serves the control requests addressed to this instance. */
  serve(handler: (request: RunControlRequest) => Promise<RunControlReply>): void;
  /**
   * Sends a control request to the instance `holder` and resolves with its reply, or with null when no
   * reply came within `timeoutMs` (the caller then checks whether that instance still holds the turn).
   */
  request(holder: string, request: RunControlRequest, timeoutMs: number): Promise<RunControlReply | null>;
  /** The holder of an unexpired turn lease on the session, or null when nobody holds one (or the bus is in process). */
  leaseHolder(sessionId: string): Promise<string | null>;
  /** Whether `holder` holds an unexpired turn lease on the session. */
  leaseHeld(sessionId: string, holder: string): Promise<boolean>;
  /**
   * The other instances whose bus listens right now (on PostgreSQL, the listening connections of this database in
   * `pg_stat_activity`), or null when they could not be listed. An instance whose connection is down is not among
   * them, and cannot hear a relay message either. The in-process bus has no other instance.
   */
  listening(): Promise<ListeningInstances | null>;
  /**
   * Deletes the stored events of runs that turned terminal before `endedBefore` (epoch ms); returns how many
   * events went. A stream of such a run then gets its terminal event rebuilt from the row (spec §19.3).
   */
  prune(endedBefore: number): Promise<number>;
  /** Writes a terminal state on a run that is still `queued`, `running` or `stopping`; false when it had settled. */
  settleIfUnfinished(runId: string, settlement: RunSettlement): Promise<boolean>;
  /**
   * Sends a message to the instance `to`, or to every other instance with `'*'`, on the relay channel (the gateway's
   * attach across instances, ADR 0020). Messages from one instance arrive in the order sent, whatever their size.
   * Resolves once sent; the in-process bus has no other instance and drops them.
   */
  relay(to: string, message: JsonObject): Promise<void>;
  /** Calls `listener` with each relay message addressed to this instance (or to every instance); returns the unsubscribe. */
  onRelay(listener: (from: string, message: JsonObject) => void): () => void;
  /** Stops listening; the store stays open. */
  close(): Promise<void>;
}

/** Options of `createRunBus` (run-bus.ts). */
export interface RunBusOptions {
  /** Receives connection problems of the PostgreSQL bus. */
  onWarning?: (message: string, details: Record<string, JsonValue>) => void;
  /**
   * How many of a run's newest events the PostgreSQL bus keeps (default 1,000, the runs API's backlog,
   * spec §19.3); older ones are deleted as the run goes on. `read` then starts at the oldest kept one.
   */
  keepEvents?: number;
  /**
   * How long the PostgreSQL bus holds the first parts of a relay message cut into parts (default 60 s). A message
   * whose last part has not arrived by then (its sender died between statements, or the listening connection
   * dropped) is dropped with a warning instead of staying in memory.
   */
  relayPartsTimeoutMs?: number;
}
