import type { ContentPart, CostStatus, JsonObject, JsonValue, StoredToolCall, TitleSource, Usage } from '../types.js';

/** Kinds of session rows. */
export type SessionKind = 'root' | 'branch' | 'subagent';

/** `sessions.model_config` (spec/core.md §9.2.1). Never holds API keys. */
export interface SessionModelConfig {
  base_url?: string | null;
  reasoning_effort?: 'none' | 'low' | 'medium' | 'high' | null;
  max_tokens?: number | null;
  toolsets?: string[];
  disabled_tools?: string[];
  yolo?: boolean;
  prompt_fingerprint?: string;
  branched_from?: string;
  delegate_from?: string;
  compression_cooldown_until?: number;
  compression_failures?: number;
  [key: string]: JsonValue | undefined;
}

/** A `sessions` row in camelCase. */
export interface SessionRow {
  id: string;
  source: string;
  kind: SessionKind;
  title: string | null;
  titleSource: TitleSource | null;
  parentSessionId: string | null;
  model: string | null;
  modelConfig: SessionModelConfig;
  systemPrompt: string | null;
  cwd: string | null;
  startedAt: number;
  lastActivityAt: number;
  endedAt: number | null;
  endReason: string | null;
  messageCount: number;
  toolCallCount: number;
  apiCallCount: number;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  reasoningTokens: number;
  estimatedCostUsd: number;
  costStatus: CostStatus;
  rewindCount: number;
  hidden: boolean;
}

/** Input of `recordTurn`. */
export interface RecordedTurn {
  /** Creates the session with these fields (its id is the `sessionId` argument) when it is missing. */
  create?: Omit<NewSession, 'id'>;
  rows: NewMessage[];
  usage?: UsageEntry;
}

/**
 * Input of `commitTurn`: what a turn writes at one of its durability points, in one transaction
 * (ADR 0056). Every part is optional; an empty commit only touches `last_activity_at`.
 */
export interface TurnCommit {
  /** Rows appended in this order, exactly as `appendMessages` appends them. */
  rows?: NewMessage[];
  /** Usage of model calls, added exactly as one `recordUsage` per entry would add it. */
  usage?: UsageEntry[];
  /** Plain session fields the turn changed (the stored system prompt, the model config); never the title. */
  session?: Pick<SessionPatch, 'model' | 'modelConfig' | 'systemPrompt'>;
  /** New display metadata of rows of this session (a failed prompt's mark). */
  display?: { rowId: number; displayMetadata: JsonObject | null }[];
  /**
   * The turn lease this commit is written under. With `release`, the lease is deleted in the same transaction when
   * this owner still holds it: the turn's last write needs no transaction of its own to free the session.
   */
  lease?: { holder: string; turnId: string; release?: boolean };
}

/** Input of `createSession`. */
export interface NewSession {
  id: string;
  source?: string;
  kind?: SessionKind;
  title?: string | null;
  titleSource?: TitleSource | null;
  parentSessionId?: string | null;
  model?: string | null;
  modelConfig?: SessionModelConfig;
  systemPrompt?: string | null;
  cwd?: string | null;
  hidden?: boolean;
  /** Defaults to the store clock's now. */
  startedAt?: number;
}

/** Fields `updateSession` may change. */
export interface SessionPatch {
  model?: string | null;
  modelConfig?: SessionModelConfig;
  systemPrompt?: string | null;
  cwd?: string | null;
  title?: string | null;
  titleSource?: TitleSource | null;
  hidden?: boolean;
}

/** A message row to insert. */
export interface NewMessage {
  turnId?: string | null;
  role: 'user' | 'assistant' | 'tool';
  content: string;
  contentParts?: ContentPart[] | null;
  toolCalls?: StoredToolCall[] | null;
  toolCallId?: string | null;
  toolName?: string | null;
  reasoning?: string | null;
  providerMetadata?: JsonObject | null;
  /** Defaults to the store clock's now. */
  timestamp?: number;
  tokenCount?: number | null;
  finishReason?: string | null;
  displayKind?: string | null;
  displayMetadata?: JsonObject | null;
}

/** A stored message row (spec/core.md §9.3). */
export interface StoredMessage {
  rowId: number;
  sessionId: string;
  turnId: string | null;
  role: 'user' | 'assistant' | 'tool';
  content: string;
  contentParts: ContentPart[] | null;
  toolCalls: StoredToolCall[] | null;
  toolCallId: string | null;
  toolName: string | null;
  reasoning: string | null;
  providerMetadata: JsonObject | null;
  timestamp: number;
  tokenCount: number | null;
  finishReason: string | null;
  active: boolean;
  compacted: boolean;
  supersededBy: number | null;
  displayKind: string | null;
  displayMetadata: JsonObject | null;
}

/** Result of a rewind or undo. */
export interface RewindResult {
  removed: StoredMessage[];
  removedUserText: string | null;
  /** Old survivor id → new copy id. */
  idMap: Record<number, number>;
  rewindCount: number;
}

/**
 * A turn's fencing token (issue 33.3, ADR 0049): the session and the epoch its turn lease was acquired with. Every
 * acquire or takeover of a session's lease adds one to `sessions.turn_epoch`; a write that carries a fence is applied
 * only while that column still equals `epoch`, so a turn whose lease another process took over (it was frozen or cut
 * off past its expiry) has every later write refused with `lease_lost` instead of interleaving with the new turn's.
 * Releasing a lease leaves the epoch as it is: the turn's own epilogue after its release still writes.
 */
export interface TurnFence {
  readonly sessionId: string;
  readonly epoch: number;
}

/** Options of the store writes a turn makes. */
export interface WriteOptions {
  /** Applies the write only while the turn still holds this epoch of its session's lease (`lease_lost` otherwise). */
  fence?: TurnFence | undefined;
}

/** A held turn lease (spec/core.md §9.4.9). */
export interface TurnLease {
  /** Aborts when a refresh finds another holder. */
  readonly lost: AbortSignal;
  /** The fencing token this acquire got (issue 33.3): pass it to the turn's writes. */
  readonly fence: TurnFence;
  refresh(): Promise<boolean>;
  release(): Promise<void>;
  /** The lease was deleted by a `commitTurn` with `lease.release`: stops using it without a write of its own. */
  markReleased(): void;
  /**
   * The session's generation (`generation()`) read with the take, so the turn needs no read of its own to learn
   * whether another process changed the session; `null` or absent when it is not known.
   */
  readonly generation?: { lastRowId: number; rewindCount: number } | null;
}

/** Options of `acquireTurnLease`. */
export interface LeaseOptions {
  holder: string;
  turnId: string;
  ttlMs: number;
  waitMs: number;
  signal?: AbortSignal;
  /** Called when the lease is held by someone else and the caller starts or keeps waiting. */
  onWait?: (info: { holder: string; waitedMs: number }) => void;
}

/** Session listing query (spec/core.md §9.4.7, §24.5). */
export interface ListQuery {
  sources?: string[];
  excludeSources?: string[];
  kinds?: SessionKind[];
  includeHidden?: boolean;
  titlePrefix?: string;
  cwd?: string;
  limit?: number;
  cursor?: string;
}

/** One page of results with an opaque cursor for the next. */
export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

/** A session in listings. */
export interface SessionSummary {
  id: string;
  title: string | null;
  source: string;
  kind: string;
  parentSessionId: string | null;
  model: string | null;
  cwd: string | null;
  startedAt: number;
  lastActivityAt: number;
  endedAt: number | null;
  endReason: string | null;
  messageCount: number;
  preview: string;
  costUsd: number;
  hidden: boolean;
}

/** Search options (spec/core.md §9.4.8). */
export interface SearchOptions {
  sources?: string[];
  excludeSources?: string[];
  roles?: ('user' | 'assistant' | 'tool')[];
  sessionId?: string;
  includeArchived?: boolean;
  includeHidden?: boolean;
  limit?: number;
}

/** One search hit. */
export interface SearchHit {
  sessionId: string;
  rowId: number;
  role: string;
  snippet: string;
  timestamp: number;
  active: boolean;
  compacted: boolean;
  session: { title: string | null; source: string; startedAt: number };
  context: { before?: { role: string; text: string }; after?: { role: string; text: string } };
}

/** A compression result to commit (spec/core.md §9.4.10). */
export interface CompactionPlan {
  /** Ids of the middle rows to archive as compacted. */
  middleRowIds: number[];
  /** Ids of the tail rows to re-insert after the summary. */
  tailRowIds: number[];
  summary: NewMessage;
}

/** What `compactInPlace` did. */
export interface CompactionCommit {
  summaryRowId: number;
  archivedRows: number;
  /** Old tail id → new copy id. */
  idMap: Record<number, number>;
}

/** Usage of one model call, recorded per task. */
export interface UsageEntry {
  provider: string;
  model: string;
  task: 'main' | 'title' | 'compression' | 'approval' | 'subagent';
  usage: Usage;
  costUsd: number;
  costStatus: CostStatus;
}

/** A `usage_by_model` row. */
export interface UsageByModelRow {
  sessionId: string;
  provider: string;
  model: string;
  task: string;
  usage: Usage;
  costUsd: number;
  costStatus: CostStatus;
  updatedAt: number;
}

/** A stored Responses API object (spec/core.md §9.2.4). */
export interface ResponseRecord {
  id: string;
  sessionId: string;
  previousResponseId: string | null;
  conversation: string | null;
  model: string;
  status: 'in_progress' | 'completed' | 'incomplete' | 'failed' | 'cancelled';
  request: JsonValue;
  output: JsonValue | null;
  usage: JsonValue | null;
  error: JsonValue | null;
  firstRowId: number | null;
  lastRowId: number | null;
  createdAt: number;
  completedAt: number | null;
}

/** Stored Responses API objects. */
export interface ResponseStore {
  put(record: ResponseRecord): Promise<void>;
  get(id: string): Promise<ResponseRecord | null>;
  delete(id: string): Promise<boolean>;
  latestForConversation(name: string): Promise<ResponseRecord | null>;
  /**
   * The records whose `output` holds an item with one of these ids, oldest first: how an `item_reference` input
   * item finds the item it names (spec/openai-api.md §14.3).
   */
  withOutputItems(itemIds: readonly string[]): Promise<ResponseRecord[]>;
  prune(olderThanMs: number): Promise<number>;
  /** How many records are stored. */
  count(): Promise<number>;
}

/** Status of a run. */
export type RunStatus = 'queued' | 'running' | 'stopping' | 'completed' | 'cancelled' | 'failed';

/** A `runs` row (spec/core.md §9.2.5). */
export interface RunRecord {
  id: string;
  sessionId: string;
  turnId: string | null;
  status: RunStatus;
  idempotencyKey: string | null;
  holder: string;
  input: JsonValue;
  result: JsonValue | null;
  exitReason: string | null;
  error: JsonValue | null;
  createdAt: number;
  startedAt: number | null;
  endedAt: number | null;
  updatedAt: number;
}

/** A run written with the session it is born in (`SessionStore.getOrCreateSession`): no idempotency key. */
export interface BornRun {
  id: string;
  input: JsonValue;
  holder: string;
}

/** Durable run records. */
export interface RunStore {
  create(input: {
    sessionId: string;
    input: JsonValue;
    idempotencyKey?: string | null;
    holder: string;
    id?: string;
  }): Promise<RunRecord & { existing: boolean }>;
  /**
   * Changes a run that has not ended. A terminal status (`completed`, `cancelled`, `failed`) never changes: an update of
   * a settled run writes nothing and fails with `run_settled` (issue 33.3). With a fence, the update is applied only
   * while the turn still holds that epoch of the session's lease (`lease_lost`).
   */
  update(
    id: string,
    patch: Partial<Pick<RunRecord, 'turnId' | 'status' | 'result' | 'exitReason' | 'error' | 'startedAt' | 'endedAt'>>,
    options?: WriteOptions,
  ): Promise<void>;
  get(id: string): Promise<RunRecord | null>;
  list(query?: { sessionId?: string; status?: RunStatus[]; limit?: number }): Promise<RunRecord[]>;
  /** The run that used this idempotency key within `withinMs` (default 24 h), without creating one. */
  findByIdempotencyKey(key: string, withinMs?: number): Promise<RunRecord | null>;
  /** Touches `updated_at` of this holder's unfinished runs. */
  heartbeat(holder: string): Promise<void>;
  /** Marks unfinished runs not updated since `staleBefore` as failed with error code `orphaned`. */
  markOrphaned(staleBefore: number): Promise<number>;
  /**
   * Start-up recovery (issue 33): deletes the turn leases of every holder `isDead` says is gone and ends its unfinished
   * runs as failed with error code `orphaned`, `exitReason` and `reason` as the error's message, in one transaction, so
   * the sessions it held take a new turn at once instead of after the lease's time to live. `isDead` sees each holder
   * of a lease or an unfinished run once.
   */
  reclaimHolders(
    isDead: (holder: string) => boolean,
    reason: { exitReason: string; message: string },
  ): Promise<{ holders: string[]; leases: number; runs: number }>;
}

/** A stored session as a resume reads it ({@link SessionStore.readSession}): all of it from one snapshot. */
export interface StoredSession {
  session: SessionRow;
  /** Every row of its transcript in id order, inactive ones included (`loadConversation` with `includeInactive`). */
  rows: StoredMessage[];
  /** As `usageByModel` returns it. */
  usage: UsageByModelRow[];
  /** The holder of an unexpired turn lease on the session, or null. */
  leaseHolder: string | null;
  /** With `listeningBesides`: the other instances whose run bus listens now, as `RunBus.listening` lists them. */
  listening?: ListeningInstances;
}

/** Options of {@link SessionStore.readSession}. */
export interface ReadSessionOptions {
  /**
   * Also list the other instances whose run bus listens right now (as `RunBus.listening` does), this instance being
   * the holder `listeningBesides`: a resume needs both, and on PostgreSQL they come from the same statement. The
   * SQLite store has no other instance.
   */
  listeningBesides?: string;
}

/** Options of {@link SessionStore.loadConversation}. */
export interface LoadConversationOptions {
  /** Inactive (rewound) rows too. */
  includeInactive?: boolean;
  /** Only rows whose id is this one or later. */
  fromRowId?: number;
}

/** The durable session store (spec/core.md §9.3). */
export interface SessionStore {
  /**
   * Compiles the statements a turn's writes use, which the store otherwise compiles on their first use: called by the
   * model warm-up, so that a process's first turn does not pay for them (ADR 0102). Optional: a store whose statements
   * cost nothing to have ready leaves it out.
   */
  prepareStatements?(): void;
  createSession(init: NewSession, seed?: NewMessage[]): Promise<SessionRow>;
  getSession(id: string): Promise<SessionRow | null>;
  /**
   * The session `init.id`, created from `init` (untitled, no rows) when it is missing; `created` says which. A session
   * created by another caller meanwhile is returned as found, never an error. With `lease`, a session this call
   * creates is born with that turn lease held (epoch 1, as its first acquire would give; generation 0/0) and `lease`
   * is it; a found session is never leased here. One statement on PostgreSQL (issue 34.2).
   *
   * With `run`, a session this creates also gets that run's row (queued, as `runs.create` makes it) in the same write:
   * one statement on PostgreSQL for a run's new session, its lease and its run (ADR 0088). A found session gets no run
   * row; `created` false tells the caller to create the run itself.
   */
  getOrCreateSession(
    init: Omit<NewSession, 'title' | 'titleSource'>,
    options?: { lease?: { holder: string; turnId: string; ttlMs: number }; run?: BornRun },
  ): Promise<{ row: SessionRow; created: boolean; lease: TurnLease | null }>;
  resolveSession(idOrTitle: string): Promise<SessionRow | null>;
  /**
   * The session with this id, else this title (as `resolveSession` finds it), with its whole transcript, its usage by
   * model and its lease holder, read in one snapshot; null when there is none. What a resume reads: on PostgreSQL one
   * statement, where the separate reads took a round trip each (issue 34, ADR 0065).
   */
  readSession(idOrTitle: string, options?: ReadSessionOptions): Promise<StoredSession | null>;
  listSessions(query?: ListQuery): Promise<Page<SessionSummary>>;
  updateSession(id: string, patch: SessionPatch, options?: WriteOptions): Promise<void>;
  endSession(id: string, endReason: string): Promise<void>;
  reopenSession(id: string): Promise<void>;
  deleteSession(id: string): Promise<void>;
  setHidden(id: string, hidden: boolean): Promise<void>;

  appendMessages(sessionId: string, rows: NewMessage[], options?: WriteOptions): Promise<number[]>;
  /** Changes the display fields of a stored row (tool status and diffs, todos). */
  updateMessageDisplay(rowId: number, displayMetadata: JsonObject | null, options?: WriteOptions): Promise<void>;
  /**
   * The session's rows in id order (active ones unless `includeInactive`); with `fromRowId`, only the rows from that
   * id on, so a caller that wants one turn's rows reads them and not the whole transcript (ADR 0093).
   */
  loadConversation(sessionId: string, options?: LoadConversationOptions): Promise<StoredMessage[]>;
  /** Highest active row id and rewind count, to detect changes made by another process. */
  generation(sessionId: string): Promise<{ lastRowId: number; rewindCount: number } | null>;
  rewind(sessionId: string, options: { beforeRowId: number }): Promise<RewindResult>;
  /** Rewinds before the last active user row that started a turn; an empty result when there is none. */
  undo(sessionId: string): Promise<RewindResult>;
  branch(
    sessionId: string,
    options?: { id?: string; title?: string; upToRowId?: number; source?: string },
  ): Promise<SessionRow>;
  compactInPlace(sessionId: string, plan: CompactionPlan, options?: WriteOptions): Promise<CompactionCommit>;

  /**
   * Sets the title by the rules of §9.4.6 and returns the stored one. `usage` (the call that wrote a generated title)
   * is added in the same transaction, as `recordUsage` would add it (ADR 0056).
   */
  setTitle(
    id: string,
    title: string | null,
    source: TitleSource,
    options?: { usage?: UsageEntry[] },
  ): Promise<string | null>;
  nextAvailableTitle(base: string): Promise<string>;
  /** True when a non-null title is used by another session (case-insensitive). */
  isTitleTaken(title: string, exceptSessionId?: string): Promise<boolean>;
  search(query: string, options?: SearchOptions): Promise<SearchHit[]>;
  recordUsage(sessionId: string, entry: UsageEntry, options?: WriteOptions): Promise<void>;
  /**
   * A finished turn's rows and usage in one transaction, as `appendMessages` then `recordUsage` would
   * write them; with `create`, the session is first created (without seed rows) when it does not
   * exist. Returns the row ids. One commit instead of up to four per turn (ADR 0021).
   */
  recordTurn(sessionId: string, turn: RecordedTurn, options?: WriteOptions): Promise<number[]>;
  /**
   * A turn's writes at one durability point in one transaction (ADR 0056): its rows, the usage of its model calls,
   * the session fields it changed, display marks and, for the last one, the release of its lease. Counters and
   * `last_activity_at` move as the single-purpose calls would move them. Returns the new rows' ids in order.
   * With a fence, the commit is applied only while the turn still holds that epoch of the session's lease.
   * @throws HermesError `session_not_found` or `lease_lost` (nothing is written).
   */
  commitTurn(sessionId: string, commit: TurnCommit, options?: WriteOptions): Promise<number[]>;
  usageByModel(sessionId: string): Promise<UsageByModelRow[]>;
  /** Adds to message/tool-call counters and touches `last_activity_at` (epilogue, §7.12). */
  touchSession(id: string, options?: WriteOptions): Promise<void>;
  acquireTurnLease(sessionId: string, options: LeaseOptions): Promise<TurnLease>;

  readonly responses: ResponseStore;
  readonly runs: RunStore;
  close(): Promise<void>;
}

/** The other instances listening on the run bus at one moment (`RunBus.listening`, `SessionStore.readSession`). */
export interface ListeningInstances {
  /** How many there are. */
  readonly size: number;
  /** Whether every one of them is among `holders` (holder ids); true when there are none. */
  covers(holders: Iterable<string>): boolean;
}
