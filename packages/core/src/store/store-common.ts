/**
 * The store logic both backends share (SQLite in `sqlite-store.ts`, PostgreSQL in `pg-store.ts`):
 * input checks, the values of new rows, query conditions written once over either dialect's drizzle
 * columns, and the mapping of rows to the API's shapes. The backends keep only what differs: how a
 * statement runs (synchronously inside a better-sqlite3 transaction, or awaited on a pool) and the
 * few expressions whose SQL differs.
 */
import {
  and,
  type Column,
  eq,
  gt,
  inArray,
  isNull,
  lt,
  notInArray,
  or,
  type Placeholder,
  type SQL,
  sql,
} from 'drizzle-orm';
import { HermesError } from '../errors.js';
import { weakestCostStatus } from '../providers/pricing.js';
import type { CostStatus, JsonObject, StoredToolCall, TitleSource } from '../types.js';
import { addUsage, zeroUsage } from '../usage.js';
import { countToolCalls } from './rows.js';
import { normalizeTitle, numberedTitle, titleBase } from './titles.js';
import type {
  CompactionPlan,
  ListQuery,
  NewMessage,
  NewSession,
  Page,
  RewindResult,
  SessionPatch,
  SessionRow,
  SessionSummary,
  StoredMessage,
  TurnCommit,
  UsageByModelRow,
  UsageEntry,
} from './types.js';

/** `display_kind` values of user rows that did not start a turn (spec/core.md §9.4.4). */
export const NON_TURN_USER_KINDS = ['steer', 'redirect', 'model_switch', 'compaction_summary'];
const PREVIEW_LENGTH = 120;
const CONTEXT_LENGTH = 200;
const DEFAULT_LIST_LIMIT = 50;
const MAX_LIST_LIMIT = 500;
const DEFAULT_SEARCH_LIMIT = 20;
const MAX_SEARCH_LIMIT = 500;

export function sessionNotFound(sessionId: string): HermesError {
  return new HermesError('session_not_found', `No session ${sessionId}`, { details: { sessionId } });
}

export function sessionExists(sessionId: string): HermesError {
  return new HermesError('session_exists', `Session ${sessionId} already exists`, { details: { sessionId } });
}

export function rowNotActive(sessionId: string, rowId: number): HermesError {
  return new HermesError('invalid_input', `Row ${rowId} is not an active row of session ${sessionId}`, {
    details: { sessionId, rowId },
  });
}

export function messageRowNotFound(rowId: number): HermesError {
  return new HermesError('invalid_input', `No message row ${rowId}`, { details: { rowId } });
}

function titleTaken(title: string, sessionId?: string): HermesError {
  return new HermesError('title_taken', `The title "${title}" is already used by another session`, {
    details: sessionId === undefined ? { title } : { title, sessionId },
  });
}

function collapseWhitespace(text: string): string {
  return text.replace(/\s+/gu, ' ').trim();
}

function cutCodePoints(text: string, length: number): string {
  const codePoints = Array.from(text);
  return codePoints.length > length ? codePoints.slice(0, length).join('') : text;
}

function encodeCursor(lastActivityAt: number, id: string): string {
  return Buffer.from(JSON.stringify([lastActivityAt, id]), 'utf8').toString('base64url');
}

function decodeCursor(cursor: string): { lastActivityAt: number; id: string } {
  try {
    const decoded: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (Array.isArray(decoded) && typeof decoded[0] === 'number' && typeof decoded[1] === 'string') {
      return { lastActivityAt: decoded[0], id: decoded[1] };
    }
  } catch {
    // Reported below.
  }
  throw new HermesError('invalid_input', 'Invalid session list cursor', { details: { cursor } });
}

/** `text` with LIKE's wildcards and the escape character escaped by a backslash. */
export function escapeLike(text: string): string {
  return text.replace(/[\\%_]/gu, (character) => `\\${character}`);
}

// ---------------------------------------------------------------- sessions

/** A seed of `createSession` may hold user, assistant and tool rows only. */
export function assertSeedRoles(seed: NewMessage[]): void {
  for (const message of seed) {
    if (!['user', 'assistant', 'tool'].includes(message.role)) {
      throw new HermesError('invalid_input', `A seed row cannot have role ${String(message.role)}`, {
        details: { role: String(message.role) },
      });
    }
  }
}

/** The `sessions` values of a new session with `seed` rows and its (already de-duplicated) title. */
export function newSessionValues(init: NewSession, seed: NewMessage[], title: string | null, now: number) {
  return {
    id: init.id,
    source: init.source ?? 'library',
    kind: init.kind ?? 'root',
    title,
    titleSource: title === null ? null : (init.titleSource ?? 'user'),
    parentSessionId: init.parentSessionId ?? null,
    model: init.model ?? null,
    modelConfig: init.modelConfig ?? {},
    systemPrompt: init.systemPrompt ?? null,
    cwd: init.cwd ?? null,
    startedAt: init.startedAt ?? now,
    lastActivityAt: now,
    hidden: init.hidden ?? false,
    messageCount: seed.length,
    toolCallCount: countToolCalls(seed),
  };
}

/** The `sessions` values of a branch of `parent` (its counters are set once the rows are copied). */
export function branchSessionValues(
  parent: SessionRow,
  branchId: string,
  title: string,
  givenTitle: string | null,
  source: string | undefined,
  now: number,
) {
  return {
    id: branchId,
    source: source ?? parent.source,
    kind: 'branch' as const,
    title,
    titleSource: givenTitle !== null ? ('user' as const) : ('branch' as const),
    parentSessionId: parent.id,
    model: parent.model,
    modelConfig: { ...parent.modelConfig, branched_from: parent.id },
    systemPrompt: parent.systemPrompt,
    cwd: parent.cwd,
    startedAt: now,
    lastActivityAt: now,
  };
}

/** The plain fields a {@link SessionPatch} changes; a new title goes through the title rules instead. */
export function patchFields(session: SessionRow, patch: SessionPatch): Partial<SessionRow> {
  const fields: Partial<SessionRow> = {};
  if (patch.model !== undefined) fields.model = patch.model;
  if (patch.modelConfig !== undefined) fields.modelConfig = patch.modelConfig;
  if (patch.systemPrompt !== undefined) fields.systemPrompt = patch.systemPrompt;
  if (patch.cwd !== undefined) fields.cwd = patch.cwd;
  if (patch.hidden !== undefined) fields.hidden = patch.hidden;
  if (patch.title === undefined && patch.titleSource !== undefined) {
    fields.titleSource = session.title === null ? null : patch.titleSource;
  }
  return fields;
}

/** The `sessions` columns the session list filters on. */
interface SessionListColumns {
  id: Column;
  kind: Column;
  hidden: Column;
  source: Column;
  cwd: Column;
  lastActivityAt: Column;
}

/**
 * The conditions of a session list, or `null` when the query cannot match anything. `titleLike`
 * and `idBefore` are the two expressions the dialects write differently.
 */
export function listConditions(
  sessions: SessionListColumns,
  query: ListQuery,
  dialect: { titleLike: (pattern: string) => SQL; idBefore: (id: string) => SQL },
): SQL[] | null {
  const conditions: SQL[] = [];
  const kinds = query.kinds ?? ['root', 'branch'];
  if (kinds.length === 0) return null;
  conditions.push(inArray(sessions.kind, kinds));
  if (query.includeHidden !== true) conditions.push(eq(sessions.hidden, false));
  if (query.sources !== undefined) {
    if (query.sources.length === 0) return null;
    conditions.push(inArray(sessions.source, query.sources));
  }
  if (query.excludeSources !== undefined && query.excludeSources.length > 0) {
    conditions.push(notInArray(sessions.source, query.excludeSources));
  }
  if (query.titlePrefix !== undefined && query.titlePrefix !== '') {
    conditions.push(dialect.titleLike(`${escapeLike(query.titlePrefix)}%`));
  }
  if (query.cwd !== undefined) conditions.push(eq(sessions.cwd, query.cwd));
  if (query.cursor !== undefined) {
    const cursor = decodeCursor(query.cursor);
    conditions.push(
      or(
        lt(sessions.lastActivityAt, cursor.lastActivityAt),
        and(eq(sessions.lastActivityAt, cursor.lastActivityAt), dialect.idBefore(cursor.id)),
      ) as SQL,
    );
  }
  return conditions;
}

/** How many sessions one list page holds. */
export function listLimit(query: ListQuery): number {
  return Math.max(1, Math.min(Math.floor(query.limit ?? DEFAULT_LIST_LIMIT), MAX_LIST_LIMIT));
}

/** One page of the session list from up to `limit + 1` rows (the extra one says a next page exists). */
export function summaryPage(
  rows: Array<Omit<SessionSummary, 'preview'> & { firstUserText: string | null }>,
  limit: number,
): Page<SessionSummary> {
  const items: SessionSummary[] = rows.slice(0, limit).map(({ firstUserText, ...row }) => ({
    ...row,
    preview: cutCodePoints(collapseWhitespace(firstUserText ?? ''), PREVIEW_LENGTH),
  }));
  const last = items[items.length - 1];
  const nextCursor = rows.length > limit && last ? encodeCursor(last.lastActivityAt, last.id) : null;
  return { items, nextCursor };
}

// -------------------------------------------------------------- transcript

/** The `messages` columns the transcript queries use. */
interface MessageColumns {
  sessionId: Column;
  active: Column;
  role: Column;
  displayKind: Column;
}

/** Active user rows that started a turn (the rows `undo` rewinds to). */
export function turnStartCondition(messages: MessageColumns, sessionId: string): SQL {
  return and(
    eq(messages.sessionId, sessionId),
    eq(messages.active, true),
    eq(messages.role, 'user'),
    or(isNull(messages.displayKind), notInArray(messages.displayKind, NON_TURN_USER_KINDS)),
  ) as SQL;
}

/** The rewind's answer once its rows are moved. */
export function rewindResult(
  target: { role: string; content: string },
  removedRows: StoredMessage[],
  idMap: Record<number, number>,
  rewindCount: number,
): RewindResult {
  return {
    removed: removedRows.map((row) => ({ ...row, active: false })),
    removedUserText: target.role === 'user' ? target.content : null,
    idMap,
    rewindCount,
  };
}

/** The display metadata of a row a rewind carries over. */
export function rewoundMetadata(row: { id: number; displayMetadata: JsonObject | null }): JsonObject {
  return { ...row.displayMetadata, rewound_from: row.id };
}

/** A compaction plan's middle and tail rows, de-duplicated and sorted; checks their shape. */
export function compactionRows(plan: CompactionPlan): {
  middleIds: number[];
  tailIds: number[];
  firstMiddle: number;
  planned: Set<number>;
} {
  const middleIds = [...new Set(plan.middleRowIds)].sort((a, b) => a - b);
  const tailIds = [...new Set(plan.tailRowIds)].sort((a, b) => a - b);
  const firstMiddle = middleIds[0];
  if (firstMiddle === undefined) {
    throw new HermesError('invalid_input', 'A compaction plan needs at least one middle row');
  }
  const planned = new Set([...middleIds, ...tailIds]);
  if (planned.size !== middleIds.length + tailIds.length) {
    throw new HermesError('invalid_input', 'A row cannot be both in the middle and in the tail of a compaction');
  }
  return { middleIds, tailIds, firstMiddle, planned };
}

/**
 * Checks that the plan covers exactly the active rows from its first middle row on (`affected`):
 * every one must be summarized or carried over, or id order would stop matching conversation order.
 */
export function checkCompactionCoverage(
  sessionId: string,
  affected: Array<{ id: number }>,
  rows: { middleIds: number[]; tailIds: number[]; planned: Set<number> },
): void {
  const affectedIds = new Set(affected.map((row) => row.id));
  for (const id of rows.planned) {
    if (!affectedIds.has(id)) {
      throw new HermesError('invalid_input', `Row ${id} is not an active row of session ${sessionId} after the head`, {
        details: { sessionId, rowId: id },
      });
    }
  }
  const uncovered = affected.find((row) => !rows.planned.has(row.id));
  if (uncovered) {
    throw new HermesError('invalid_input', `Active row ${uncovered.id} is neither in the middle nor in the tail`, {
      details: { sessionId, rowId: uncovered.id },
    });
  }
  const { middleIds, tailIds } = rows;
  if (tailIds.length > 0 && middleIds[middleIds.length - 1]! > tailIds[0]!) {
    throw new HermesError('invalid_input', 'Every tail row must come after every middle row');
  }
}

/** The summary row of a compaction. */
export function compactionSummary(plan: CompactionPlan): NewMessage {
  return { ...plan.summary, displayKind: plan.summary.displayKind ?? 'compaction_summary' };
}

// ------------------------------------------------------------------ titles

/** `base` normalized, then "`<stem> #n`" from 2 on: the candidates of the suffix rule (§9.4.6), in order. */
export function* titleCandidates(base: string): Generator<string, never> {
  const normalized = normalizeTitle(base) ?? 'Untitled';
  yield normalized;
  const stem = titleBase(normalized);
  for (let number = 2; ; number += 1) yield numberedTitle(stem, number);
}

/**
 * The first step of the title rules of §9.4.6 on one session: `{ keep }` when a title the user
 * chose must not be replaced by a generated one, else the normalized title to store (before the
 * check that no other session uses it).
 */
export function titleToApply(
  session: { title: string | null; titleSource: TitleSource | null },
  title: string | null,
  source: TitleSource,
): { keep: string | null } | { normalized: string | null } {
  if (session.titleSource === 'user' && source !== 'user') return { keep: session.title };
  return { normalized: normalizeTitle(title) };
}

/** A title another session already uses: refused for the user, else the suffix rule (`next`). */
export function resolveTakenTitle<T>(normalized: string, source: TitleSource, sessionId: string, next: () => T): T {
  if (source === 'user') throw titleTaken(normalized, sessionId);
  return next();
}

/** A branch title the caller gave is refused when another session has it. */
export function branchTitleTaken(title: string): HermesError {
  return titleTaken(title);
}

// ------------------------------------------------------------------ search

/** How many hits one search returns. */
export function searchLimit(limit: number | undefined): number {
  return Math.max(1, Math.min(Math.floor(limit ?? DEFAULT_SEARCH_LIMIT), MAX_SEARCH_LIMIT));
}

/**
 * The conditions of a search on the `m` (messages) and `s` (sessions) aliases, or `null` when it
 * cannot match; `inList` and the boolean literals are what the dialects write differently.
 */
export function searchConditions(
  options: {
    sources?: string[];
    excludeSources?: string[];
    roles?: string[];
    sessionId?: string;
    includeArchived?: boolean;
    includeHidden?: boolean;
  },
  dialect: { inList: (column: SQL, values: string[]) => SQL; isTrue: (column: SQL) => SQL },
): SQL[] | null {
  const conditions: SQL[] = [sql`m.superseded_by IS NULL`];
  const namesSubagent = options.sources?.includes('subagent') === true;
  const isSubagent = sql`(s.kind = 'subagent' OR s.source = 'subagent')`;
  if (options.sources !== undefined) {
    if (options.sources.length === 0) return null;
    conditions.push(dialect.inList(sql`s.source`, options.sources));
  }
  if (!namesSubagent) conditions.push(sql`NOT ${isSubagent}`);
  if (options.excludeSources !== undefined && options.excludeSources.length > 0) {
    conditions.push(sql`NOT (${dialect.inList(sql`s.source`, options.excludeSources)})`);
  }
  if (options.roles !== undefined) {
    if (options.roles.length === 0) return null;
    conditions.push(dialect.inList(sql`m.role`, options.roles));
  }
  if (options.sessionId !== undefined) conditions.push(sql`m.session_id = ${options.sessionId}`);
  if (options.includeArchived === false) conditions.push(dialect.isTrue(sql`m.active`));
  // Subagent sessions are hidden by construction; naming them in `sources` is what brings them back.
  if (options.includeHidden !== true) {
    const visible = sql`NOT ${dialect.isTrue(sql`s.hidden`)}`;
    conditions.push(namesSubagent ? sql`(${visible} OR ${isSubagent})` : visible);
  }
  return conditions;
}

/** The `messages` columns of a search hit's neighbour. */
export interface NeighbourColumns {
  sessionId: Column;
  id: Column;
  active: Column;
}

/** Where a search hit's neighbour on `side` is: a live hit's are the live rows around it. */
export function neighbourCondition(
  messages: NeighbourColumns,
  sessionId: string,
  rowId: number,
  active: boolean,
  side: 'before' | 'after',
): SQL {
  const conditions = [
    eq(messages.sessionId, sessionId),
    side === 'before' ? lt(messages.id, rowId) : gt(messages.id, rowId),
  ];
  if (active) conditions.push(eq(messages.active, true));
  return and(...conditions) as SQL;
}

/** The text shown for a search hit's neighbour row. */
export function neighbourText(row: { role: string; content: string; toolCalls: StoredToolCall[] | null }): {
  role: string;
  text: string;
} {
  const text = row.content !== '' ? row.content : (row.toolCalls ?? []).map((call) => call.name).join(', ');
  return { role: row.role, text: cutCodePoints(text, CONTEXT_LENGTH) };
}

// ------------------------------------------------------------------- usage

/** The `usage_by_model` values of a first call for one (provider, model, task). */
export function usageInsertValues(sessionId: string, entry: UsageEntry, now: number) {
  const { usage } = entry;
  return {
    sessionId,
    provider: entry.provider,
    model: entry.model,
    task: entry.task,
    apiCalls: usage.apiCalls,
    inputTokens: usage.inputTokens,
    outputTokens: usage.outputTokens,
    cacheReadTokens: usage.cacheReadTokens,
    cacheWriteTokens: usage.cacheWriteTokens,
    reasoningTokens: usage.reasoningTokens,
    costUsd: entry.costUsd,
    costStatus: entry.costStatus,
    updatedAt: now,
  };
}

/** The `usage_by_model` columns of its key and counters. */
interface UsageColumns {
  sessionId: Column;
  provider: Column;
  model: Column;
  task: Column;
  apiCalls: Column;
  inputTokens: Column;
  outputTokens: Column;
  cacheReadTokens: Column;
  cacheWriteTokens: Column;
  reasoningTokens: Column;
  costUsd: Column;
  updatedAt: Column;
}

/** `excluded.<column>`: the value the conflicting insert proposed (the same in SQLite and PostgreSQL). */
function excluded(column: Column): SQL {
  return sql`excluded.${sql.identifier(column.name)}`;
}

/**
 * The conflict clause adding a further call to an existing `usage_by_model` row: the counters add
 * the inserted values; `costStatus` is the weakest of the row's calls (a value, or an expression such as a placeholder).
 */
export function usageUpsert<T extends UsageColumns>(usageByModel: T, costStatus: CostStatus | SQL) {
  const add = (column: Column) => sql`${column} + ${excluded(column)}`;
  return {
    target: [usageByModel.sessionId, usageByModel.provider, usageByModel.model, usageByModel.task] as Array<
      T['sessionId'] | T['provider'] | T['model'] | T['task']
    >,
    set: {
      apiCalls: add(usageByModel.apiCalls),
      inputTokens: add(usageByModel.inputTokens),
      outputTokens: add(usageByModel.outputTokens),
      cacheReadTokens: add(usageByModel.cacheReadTokens),
      cacheWriteTokens: add(usageByModel.cacheWriteTokens),
      reasoningTokens: add(usageByModel.reasoningTokens),
      costUsd: add(usageByModel.costUsd),
      costStatus,
      updatedAt: excluded(usageByModel.updatedAt),
    },
  };
}

/** The cost status of a row after one more call: the weakest of its calls. */
export function nextCostStatus(current: { costStatus: CostStatus } | undefined, entry: UsageEntry): CostStatus {
  return current ? weakestCostStatus(current.costStatus, entry.costStatus) : entry.costStatus;
}

/** The `sessions` counter columns one model call adds to. */
interface SessionUsageColumns {
  apiCallCount: Column;
  inputTokens: Column;
  outputTokens: Column;
  cacheReadTokens: Column;
  cacheWriteTokens: Column;
  reasoningTokens: Column;
  estimatedCostUsd: Column;
}

/** A number, or a placeholder of a prepared statement that stands for one. */
type Numeric = number | Placeholder;

/** The usage one model call adds, as values or placeholders. */
export interface UsageAmounts {
  apiCalls: Numeric;
  inputTokens: Numeric;
  outputTokens: Numeric;
  cacheReadTokens: Numeric;
  cacheWriteTokens: Numeric;
  reasoningTokens: Numeric;
  costUsd: Numeric;
}

/** The amounts of one usage entry. */
export function usageAmounts(entry: UsageEntry): UsageAmounts {
  return { ...entry.usage, costUsd: entry.costUsd };
}

/** The `sessions` update adding one model call's usage (a subagent's is counted on its own session). */
export function sessionUsageIncrements(
  sessions: SessionUsageColumns,
  amounts: UsageAmounts,
  costStatus: CostStatus | SQL,
  now: number | SQL,
) {
  return {
    apiCallCount: sql`${sessions.apiCallCount} + ${amounts.apiCalls}`,
    inputTokens: sql`${sessions.inputTokens} + ${amounts.inputTokens}`,
    outputTokens: sql`${sessions.outputTokens} + ${amounts.outputTokens}`,
    cacheReadTokens: sql`${sessions.cacheReadTokens} + ${amounts.cacheReadTokens}`,
    cacheWriteTokens: sql`${sessions.cacheWriteTokens} + ${amounts.cacheWriteTokens}`,
    reasoningTokens: sql`${sessions.reasoningTokens} + ${amounts.reasoningTokens}`,
    estimatedCostUsd: sql`${sessions.estimatedCostUsd} + ${amounts.costUsd}`,
    costStatus,
    lastActivityAt: now,
  };
}

/** A `usage_by_model` row in the API's shape. */
export function toUsageByModelRow(row: {
  sessionId: string;
  provider: string;
  model: string;
  task: string;
  apiCalls: number;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  reasoningTokens: number;
  costUsd: number;
  costStatus: CostStatus;
  updatedAt: number;
}): UsageByModelRow {
  return {
    sessionId: row.sessionId,
    provider: row.provider,
    model: row.model,
    task: row.task,
    usage: {
      inputTokens: row.inputTokens,
      outputTokens: row.outputTokens,
      cacheReadTokens: row.cacheReadTokens,
      cacheWriteTokens: row.cacheWriteTokens,
      reasoningTokens: row.reasoningTokens,
      totalTokens: row.inputTokens + row.outputTokens,
      apiCalls: row.apiCalls,
    },
    costUsd: row.costUsd,
    costStatus: row.costStatus,
    updatedAt: row.updatedAt,
  };
}

// ------------------------------------------------------------- turn commits

/**
 * The usage entries of one commit merged per (provider, model, task): what one `recordUsage` per entry would add, as
 * one row change per key. Amounts add up; a cost status is the weakest of its calls (the merge is order-free).
 */
export function mergeUsageEntries(entries: readonly UsageEntry[]): UsageEntry[] {
  const merged = new Map<string, UsageEntry>();
  for (const entry of entries) {
    const key = `${entry.provider}\u0000${entry.model}\u0000${entry.task}`;
    const previous = merged.get(key);
    if (!previous) {
      merged.set(key, { ...entry, usage: { ...entry.usage } });
      continue;
    }
    previous.usage = addUsage(previous.usage, entry.usage);
    previous.costUsd += entry.costUsd;
    previous.costStatus = weakestCostStatus(previous.costStatus, entry.costStatus);
  }
  return [...merged.values()];
}

/**
 * What a commit's usage adds to the session's own counters: every task but `subagent` (counted on the child
 * sessions). `costStatus` is the weakest of those calls, `null` when there are none (the session's stays).
 */
export function sessionUsageOf(entries: readonly UsageEntry[]): UsageAmounts & { costStatus: CostStatus | null } {
  let usage = zeroUsage();
  let costUsd = 0;
  let costStatus: CostStatus | null = null;
  for (const entry of entries) {
    if (entry.task === 'subagent') continue;
    usage = addUsage(usage, entry.usage);
    costUsd += entry.costUsd;
    costStatus = costStatus === null ? entry.costStatus : weakestCostStatus(costStatus, entry.costStatus);
  }
  // The session keeps no total of its own (it is derived) and no estimate flag.
  const { totalTokens: _total, estimated: _estimated, ...amounts } = usage;
  return { ...amounts, costUsd, costStatus };
}

/** The plain session fields a turn commit sets, `null` when it sets none. */
export function turnSessionFields(
  patch: TurnCommit['session'],
): Partial<Pick<SessionRow, 'model' | 'modelConfig' | 'systemPrompt'>> | null {
  if (!patch) return null;
  const fields: Partial<Pick<SessionRow, 'model' | 'modelConfig' | 'systemPrompt'>> = {};
  if (patch.model !== undefined) fields.model = patch.model;
  if (patch.modelConfig !== undefined) fields.modelConfig = patch.modelConfig;
  if (patch.systemPrompt !== undefined) fields.systemPrompt = patch.systemPrompt;
  return Object.keys(fields).length > 0 ? fields : null;
}
