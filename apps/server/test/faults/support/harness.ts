import { randomUUID } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  delay,
  type ModelScript,
  type ScriptedServer,
  type ScriptStep,
  startScriptedOpenAIServer,
  step,
  text,
} from '@hermes/core/testing';
import Database from 'better-sqlite3';
import pg from 'pg';
import { cleanups, type StartedServer, startServer, temp } from '../../support/server-process.js';

/**
 * The fault suite's harness (issue 33 item 6): apps/server instances as real child processes on one store, a scripted
 * model, clients that drive turns and write down what they were told, and readers of the store itself. The invariants
 * are checked by `invariants.ts` from what this records.
 */

export const KEY = 'test-key-0123456789abcdef';
export const auth = { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' };

/** Every answer of the scripted model, whatever its pace: a turn's stored reply is compared with it. */
export const REPLY = 'alpha beta gamma';

/** A model answer in three parts with `pauseMs` between them, so a turn is in flight for about twice that. */
export function answer(pauseMs: number): ScriptStep {
  return step(text('alpha '), delay(pauseMs), text('beta '), delay(pauseMs), text('gamma'));
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls until `check` returns a value (bounded, generous: never a timing assertion). */
export async function until<T>(check: () => Promise<T | null>, timeoutMs = 60_000, what = 'condition'): Promise<T> {
  const started = Date.now();
  for (;;) {
    const value = await check().catch(() => null);
    if (value !== null) return value;
    if (Date.now() - started > timeoutMs) throw new Error(`${what} not met within ${timeoutMs} ms`);
    await sleep(100);
  }
}

/** The scripted model every instance of a scenario talks to; `script` is played first, then its last step repeats. */
export async function startModel(script: ModelScript): Promise<ScriptedServer> {
  const model = await startScriptedOpenAIServer({ script, onExhausted: 'repeat_last' });
  cleanups.push(() => model.close());
  return model;
}

/** One apps/server instance; `server` is replaced when the instance is started again after a kill. */
export interface Instance {
  readonly label: string;
  server: StartedServer;
  readonly env: Record<string, string>;
  /** How many times this instance was started. */
  lives: number;
}

export function alive(instance: Instance): boolean {
  return instance.server.child.exitCode === null && instance.server.child.signalCode === null;
}

/**
 * Starts an instance with its own HERMES_HOME holding `configYaml`. `database` is a PostgreSQL URL, or null for the
 * SQLite store in HERMES_HOME. Starting it again (see {@link restart}) keeps the same home, so on SQLite the same file,
 * and the same hostname: the restarted process reclaims the leases of its earlier life (ADR 0039).
 */
export async function startInstance(
  label: string,
  options: { model: ScriptedServer; database: string | null; configYaml: string },
): Promise<Instance> {
  const home = temp(`hermes-faults-${label}-`);
  writeFileSync(join(home, 'config.yaml'), options.configYaml);
  const env: Record<string, string> = {
    HERMES_HOME: home,
    HERMES_MODEL: 'custom:scripted',
    HERMES_BASE_URL: options.model.baseURL,
    API_SERVER_KEY: KEY,
    ...(options.database ? { HERMES_DATABASE_URL: options.database } : {}),
  };
  return { label, server: await startServer(env), env, lives: 1 };
}

/** SIGKILL: the process ends without a word, as on an OOM kill or a host loss. */
export async function killHard(instance: Instance): Promise<void> {
  if (!alive(instance)) return;
  instance.server.child.kill('SIGKILL');
  await instance.server.exited;
}

/** Starts the instance again on the same home and store. */
export async function restart(instance: Instance): Promise<void> {
  instance.server = await startServer(instance.env);
  instance.lives += 1;
}

/** The store's own rows, read beside the instances (never through them) so the checks see what is durable. */
export interface MessageRow {
  id: number;
  sessionId: string;
  turnId: string | null;
  role: string;
  content: string;
}
export interface RunRow {
  id: string;
  sessionId: string;
  status: string;
  exitReason: string | null;
}
export interface StoredRunEvent {
  runId: string;
  seq: number;
  event: string;
  payload: Record<string, unknown>;
}

export interface StoreReader {
  readonly backend: 'sqlite' | 'postgres';
  messages(): Promise<MessageRow[]>;
  runs(): Promise<RunRow[]>;
  /** `run_events` (PostgreSQL only: on SQLite a run's events live in its process). */
  runEvents(): Promise<StoredRunEvent[] | null>;
}

/** Reads a PostgreSQL store with a short-lived connection per query, so a terminated or stopped server costs nothing. */
export function postgresReader(url: string): StoreReader {
  const query = async <Row>(sql: string): Promise<Row[]> => {
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3_000 });
    client.on('error', () => {});
    await client.connect();
    try {
      return (await client.query(sql)).rows as Row[];
    } finally {
      await client.end().catch(() => {});
    }
  };
  return {
    backend: 'postgres',
    messages: async () =>
      (
        await query<{ id: string; session_id: string; turn_id: string | null; role: string; content: string }>(
          'SELECT id, session_id, turn_id, role, content FROM messages ORDER BY id',
        )
      ).map((row) => ({
        id: Number(row.id),
        sessionId: row.session_id,
        turnId: row.turn_id,
        role: row.role,
        content: row.content,
      })),
    runs: async () =>
      (
        await query<{ id: string; session_id: string; status: string; exit_reason: string | null }>(
          'SELECT id, session_id, status, exit_reason FROM runs',
        )
      ).map((row) => ({ id: row.id, sessionId: row.session_id, status: row.status, exitReason: row.exit_reason })),
    runEvents: async () =>
      (
        await query<{ run_id: string; seq: number; event: string; payload: Record<string, unknown> }>(
          'SELECT run_id, seq, event, payload FROM run_events ORDER BY run_id, seq',
        )
      ).map((row) => ({ runId: row.run_id, seq: row.seq, event: row.event, payload: row.payload })),
  };
}

/** Reads an instance's SQLite store (`state.db` in its home) read-only, beside the process that writes it (WAL). */
export function sqliteReader(home: string): StoreReader {
  const file = join(home, 'state.db');
  const query = async <Row>(sql: string): Promise<Row[]> => {
    if (!existsSync(file)) return [];
    const database = new Database(file, { readonly: true, fileMustExist: true });
    try {
      database.pragma('busy_timeout = 5000');
      return database.prepare(sql).all() as Row[];
    } finally {
      database.close();
    }
  };
  return {
    backend: 'sqlite',
    messages: async () =>
      (
        await query<{ id: number; session_id: string; turn_id: string | null; role: string; content: string }>(
          'SELECT id, session_id, turn_id, role, content FROM messages ORDER BY id',
        )
      ).map((row) => ({
        id: row.id,
        sessionId: row.session_id,
        turnId: row.turn_id,
        role: row.role,
        content: row.content,
      })),
    runs: async () =>
      (
        await query<{ id: string; session_id: string; status: string; exit_reason: string | null }>(
          'SELECT id, session_id, status, exit_reason FROM runs',
        )
      ).map((row) => ({ id: row.id, sessionId: row.session_id, status: row.status, exitReason: row.exit_reason })),
    runEvents: async () => null,
  };
}

/** One event of a run's SSE stream as a client received it. */
export type RunEvent = Record<string, unknown> & { event: string; seq?: number };

/** Parses the `data:` frames of an SSE body. */
export function sseEvents(body: string): RunEvent[] {
  return body
    .split('\n\n')
    .map((frame) => frame.split('\n').find((line) => line.startsWith('data: ')))
    .filter((line): line is string => line !== undefined && line !== 'data: [DONE]')
    .map((line) => JSON.parse(line.slice(6)) as RunEvent);
}

export const TERMINAL_EVENTS = new Set(['run.completed', 'run.failed', 'run.cancelled', 'run.interrupted']);
const TERMINAL_STATUSES = new Set(['completed', 'failed', 'cancelled', 'interrupted']);

/**
 * Every status of a run seen over time, from the store's rows and from the runs API (a client's terminal event, a
 * status read): once one source has seen a terminal status, it must never see another value.
 */
export class StatusHistory {
  private readonly seen = new Map<string, string[]>();

  /** `source`: `store`, or `api <instance>` for what the runs API of one instance said (its events, its status reads). */
  record(source: string, runId: string, status: string): void {
    const key = `${source} ${runId}`;
    const list = this.seen.get(key) ?? [];
    if (list.at(-1) !== status) list.push(status);
    this.seen.set(key, list);
  }

  /** One line per run whose terminal status was followed by a different one. */
  rewrites(): string[] {
    const found: string[] = [];
    for (const [key, statuses] of this.seen) {
      const first = statuses.findIndex((status) => TERMINAL_STATUSES.has(status.split(' ')[0] as string));
      if (first >= 0 && first < statuses.length - 1) found.push(`${key}: ${statuses.join(' → ')}`);
    }
    return found;
  }
}

/** A turn a client sent, and what it was told. */
export interface TurnRecord {
  surface: 'chat' | 'chat-stream' | 'run';
  instance: string;
  sessionId: string;
  prompt: string;
  /** The client got a completed response (a 200 with `finish_reason: "stop"`, or `run.completed`). */
  acknowledged: boolean;
  /** The reply the client was given, when acknowledged. */
  reply: string | null;
  /** What happened, for the report: `completed`, `503 store_unavailable`, `fetch failed`, `run.interrupted …`. */
  outcome: string;
  runId?: string;
  /** The events a live reader of the run received, one list per connection (it reconnects with Last-Event-ID). */
  segments: RunEvent[][];
  /** How many times the live reader had to open the run's stream again. */
  reconnects: number;
}

/**
 * What a scenario did and was told: the faults it injected, every turn a client sent with its outcome, the sessions
 * touched and the runs' statuses over time.
 */
export class FaultLedger {
  faults = 0;
  readonly turns: TurnRecord[] = [];
  readonly sessions = new Set<string>();
  readonly statuses = new StatusHistory();
  private counter = 0;

  constructor(readonly scenario: string) {}

  newSessionId(): string {
    return `faults-${randomUUID()}`;
  }

  private prompt(): string {
    this.counter += 1;
    return `turn ${this.counter} ${randomUUID().slice(0, 8)}`;
  }

  private add(record: TurnRecord): TurnRecord {
    this.turns.push(record);
    this.sessions.add(record.sessionId);
    return record;
  }

  /**
   * A chat completion on a stored session (`X-Hermes-Session-Id`), plain or streamed. Never throws: a refused or
   * broken request is an outcome.
   */
  async chat(
    instance: Instance,
    sessionId: string,
    options: { stream?: boolean; timeoutMs?: number } = {},
  ): Promise<TurnRecord> {
    const record: TurnRecord = {
      surface: options.stream ? 'chat-stream' : 'chat',
      instance: instance.label,
      sessionId,
      prompt: this.prompt(),
      acknowledged: false,
      reply: null,
      outcome: 'pending',
      segments: [],
      reconnects: 0,
    };
    this.add(record);
    try {
      const response = await fetch(`${instance.server.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { ...auth, 'X-Hermes-Session-Id': sessionId },
        body: JSON.stringify({
          model: 'hermes-agent',
          stream: options.stream === true,
          messages: [{ role: 'user', content: record.prompt }],
        }),
        signal: AbortSignal.timeout(options.timeoutMs ?? 120_000),
      });
      if (response.status !== 200) {
        const body = (await response.json().catch(() => ({}))) as { error?: { code?: string } };
        record.outcome = `${response.status} ${body.error?.code ?? ''}`.trim();
        return record;
      }
      if (!options.stream) {
        const body = (await response.json()) as {
          choices: { message: { content: string | null }; finish_reason: string | null }[];
        };
        const choice = body.choices[0];
        record.outcome = `200 finish_reason=${choice?.finish_reason}`;
        if (choice?.finish_reason === 'stop') {
          record.acknowledged = true;
          record.reply = choice.message.content ?? '';
          record.outcome = 'completed';
        }
        return record;
      }
      const frames = await response.text();
      const chunks = sseEvents(frames) as unknown as {
        choices?: { delta?: { content?: string }; finish_reason?: string | null }[];
        error?: unknown;
      }[];
      const finish = chunks.flatMap((chunk) => chunk.choices ?? []).find((choice) => choice.finish_reason);
      const failed = chunks.some((chunk) => chunk.error !== undefined);
      record.outcome = `stream finish_reason=${finish?.finish_reason} done=${frames.includes('data: [DONE]')}`;
      if (!failed && finish?.finish_reason === 'stop' && frames.includes('data: [DONE]')) {
        record.acknowledged = true;
        record.reply = chunks
          .flatMap((chunk) => chunk.choices ?? [])
          .map((choice) => choice.delta?.content ?? '')
          .join('');
        record.outcome = 'completed';
      }
    } catch (error) {
      record.outcome = `error ${(error as Error).message}`;
    }
    return record;
  }

  /**
   * A run (`POST /v1/runs`) on `sessionId`, its events read live from `readFrom` (another instance, to go through the
   * shared events) until its terminal event, reconnecting as a client does, for `readForMs` at most (180 s). `started` resolves once the run is admitted (or
   * refused), before its events are read.
   */
  run(
    instance: Instance,
    sessionId: string,
    options: { readFrom?: Instance; readForMs?: number } = {},
  ): { started: Promise<TurnRecord>; done: Promise<TurnRecord> } {
    const record: TurnRecord = {
      surface: 'run',
      instance: instance.label,
      sessionId,
      prompt: this.prompt(),
      acknowledged: false,
      reply: null,
      outcome: 'pending',
      segments: [],
      reconnects: 0,
    };
    this.add(record);
    const started = (async () => {
      try {
        const response = await fetch(`${instance.server.url}/v1/runs`, {
          method: 'POST',
          headers: auth,
          body: JSON.stringify({ input: record.prompt, session_id: sessionId }),
          signal: AbortSignal.timeout(120_000),
        });
        if (response.status !== 202) {
          const body = (await response.json().catch(() => ({}))) as { error?: { code?: string } };
          record.outcome = `${response.status} ${body.error?.code ?? ''}`.trim();
          return record;
        }
        record.runId = ((await response.json()) as { run_id: string }).run_id;
      } catch (error) {
        record.outcome = `error ${(error as Error).message}`;
      }
      return record;
    })();
    const done = (async () => {
      await started;
      if (!record.runId) return record;
      const reader = options.readFrom ?? instance;
      const deadline = Date.now() + (options.readForMs ?? 180_000);
      let lastSeq: number | null = null;
      let terminal: RunEvent | undefined;
      // As a client does (the SDK's runs client too): a stream that closes or breaks before the terminal event is
      // opened again with Last-Event-ID, on the same instance (started again if it was killed), until the end.
      while (terminal === undefined && Date.now() < deadline) {
        if (record.segments.length > 0) {
          record.reconnects += 1;
          await sleep(500);
        }
        let received = '';
        try {
          const response = await fetch(`${reader.server.url}/v1/runs/${record.runId}/events`, {
            headers: { ...auth, ...(lastSeq === null ? {} : { 'Last-Event-ID': String(lastSeq) }) },
            signal: AbortSignal.timeout(Math.max(1, deadline - Date.now())),
          });
          if (response.status !== 200) {
            record.outcome = `events ${response.status}`;
            record.segments.push([]);
            continue;
          }
          const body = (response.body as ReadableStream<Uint8Array>).getReader();
          const decoder = new TextDecoder();
          for (;;) {
            const chunk = await body.read();
            if (chunk.done) break;
            received += decoder.decode(chunk.value, { stream: true });
          }
          record.outcome = 'stream ended without a terminal event';
        } catch (error) {
          record.outcome = `stream broke: ${(error as Error).message}`;
        }
        const events = sseEvents(received);
        record.segments.push(events);
        for (const event of events) if (typeof event.seq === 'number') lastSeq = event.seq;
        terminal = events.find((event) => TERMINAL_EVENTS.has(event.event));
      }
      if (terminal) {
        this.statuses.record(`api ${reader.label}`, record.runId, terminal.event.slice('run.'.length));
        record.outcome = `${terminal.event}${terminal.turn_exit_reason ? ` ${String(terminal.turn_exit_reason)}` : ''}`;
        if (terminal.event === 'run.completed') {
          record.acknowledged = true;
          record.reply = typeof terminal.output === 'string' ? terminal.output : '';
        }
      }
      return record;
    })();
    return { started, done };
  }
}

/**
 * Reads every run's status from the store every `intervalMs` into the ledger's history until stopped; a read that
 * fails (the database is down) is skipped.
 */
export function watchStatuses(store: StoreReader, ledger: FaultLedger, intervalMs = 300): { stop(): Promise<void> } {
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      try {
        for (const run of await store.runs())
          ledger.statuses.record('store', run.id, `${run.status} ${run.exitReason ?? ''}`.trim());
      } catch {
        // The store is unreachable: nothing to see this time.
      }
      await sleep(intervalMs);
    }
  })();
  const stop = async () => {
    stopped = true;
    await loop;
  };
  cleanups.push(stop);
  return { stop };
}

/** Waits until the scripted model has received `count` calls in all (a turn is then in flight on its instance). */
export function modelCalls(model: ScriptedServer, count: number, timeoutMs = 60_000): Promise<true> {
  return until(async () => (model.calls.length >= count ? true : null), timeoutMs, `${count} model calls`);
}
