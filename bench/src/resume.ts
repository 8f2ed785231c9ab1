/**
 * `session.resume` on PostgreSQL against SQLite (issue 34.3): stored sessions of 40 messages, written through the
 * core's store and left open (as a crash leaves them), resumed one after another over a `hermes gateway`'s stdio, one
 * gateway per store, each in a CPU group of its own when the harness is isolated (cgroups.ts). Each resume is closed
 * again (`session.close`, which ends the session) before the next, and each round resumes sessions of its own: a
 * session resumed once is ended, and resuming an ended session takes another path (no owner to look for). The two gateways take turns in interleaved rounds (the order flipped each round); a round's figure
 * is the median time from the request to its response, and the ratio is the median of the rounds' own ratios.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type NewMessage, openPostgresStore, openSqliteStore, type SessionStore } from '@hermes/core';
import { cpuMeter, setUpIsolation } from './cgroups.js';
import { createDatabase, databaseIsGiven, withDatabase } from './postgres.js';
import { median } from './stats.js';

/** Figures of one store. */
export interface ResumeFigures {
  store: 'sqlite' | 'postgres';
  /** Median over the rounds of each round's median resume time. */
  medianMs: number;
  roundMedianMs: number[];
  /** Gateway CPU per resume (and close), median over the rounds. */
  cpuMsPerResume: number;
}

/** Both stores' figures and the rounds' PostgreSQL/SQLite ratios. */
export interface ResumeResult {
  sessions: number;
  sqlite: ResumeFigures;
  postgres: ResumeFigures;
  roundRatios: number[];
  databaseGiven: boolean;
}

/** A stored id shaped as the store makes them (`YYYYMMDD_HHMMSS_<6 hex>`). */
function storedId(): string {
  return `20261204_120000_${randomBytes(3).toString('hex')}`;
}

/** 10 turns of 4 rows: user, assistant with a tool call, tool result, answer. */
function transcript(): NewMessage[] {
  return Array.from({ length: 10 }, (_, turn): NewMessage[] => {
    const turnId = `turn_${turn}`;
    return [
      { role: 'user', content: `question ${turn}: what does the file say about the build?`, turnId },
      {
        role: 'assistant',
        content: '',
        toolCalls: [{ id: `call_${turn}`, name: 'read_file', arguments: '{"path":"a"}' }],
        turnId,
      },
      {
        role: 'tool',
        content: 'line one\nline two\nline three',
        toolCallId: `call_${turn}`,
        toolName: 'read_file',
        turnId,
      },
      { role: 'assistant', content: `The file says the build takes ${turn} steps.`, turnId },
    ];
  }).flat();
}

async function seed(store: SessionStore, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let index = 0; index < count; index += 1) {
    const id = storedId();
    await store.createSession({ id, source: 'tui', title: `bench resume ${index}` });
    await store.appendMessages(id, transcript());
    ids.push(id);
  }
  return ids;
}

/** A `hermes gateway` over stdio and a minimal JSON-RPC client. */
interface Gateway {
  child: ChildProcess;
  request(method: string, params: object): Promise<{ result?: Record<string, unknown>; error?: unknown }>;
  cpu(): number;
  close(): Promise<void>;
}

async function startGateway(
  bin: string,
  env: NodeJS.ProcessEnv,
  label: string,
  profileDir: string | undefined,
): Promise<Gateway> {
  const isolation = setUpIsolation();
  const group = isolation.serverGroup(`resume ${label}`, null);
  const profile = profileDir
    ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, `--cpu-prof-name=resume-${label}.cpuprofile`]
    : [];
  const child = spawn(process.execPath, [...profile, bin, 'gateway'], { env, stdio: ['pipe', 'pipe', 'ignore'] });
  if (group && child.pid !== undefined) group.add(child.pid);
  const waiters = new Map<number, (frame: { result?: Record<string, unknown>; error?: unknown }) => void>();
  let ready: () => void = () => {};
  const readied = new Promise<void>((resolve) => {
    ready = resolve;
  });
  let buffer = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    buffer += chunk.toString();
    let newline = buffer.indexOf('\n');
    while (newline >= 0) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(newline + 1);
      newline = buffer.indexOf('\n');
      const frame = JSON.parse(line) as {
        id?: number;
        params?: { type?: string };
        result?: Record<string, unknown>;
        error?: unknown;
      };
      if (frame.params?.type === 'gateway.ready') ready();
      if (typeof frame.id === 'number') {
        waiters.get(frame.id)?.(frame);
        waiters.delete(frame.id);
      }
    }
  });
  const exited = new Promise<never>((_resolve, reject) =>
    child.once('exit', (code) => reject(new Error(`hermes gateway (${label}) exited with ${code}`))),
  );
  exited.catch(() => {});
  await Promise.race([readied, exited]);
  let next = 0;
  return {
    child,
    request(method, params) {
      next += 1;
      const id = next;
      const answered = new Promise<{ result?: Record<string, unknown>; error?: unknown }>((resolve) =>
        waiters.set(id, resolve),
      );
      child.stdin?.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
      return Promise.race([answered, exited]);
    },
    cpu: cpuMeter(child.pid as number, group),
    async close() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      // SIGTERM lets `--cpu-prof` write its profile; SIGKILL after 10 s, or at once without a profile.
      const ended = new Promise((resolve) => child.once('exit', resolve));
      child.kill(profileDir ? 'SIGTERM' : 'SIGKILL');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await ended;
      clearTimeout(timer);
    },
  };
}

/** Resumes (and closes) each of `ids` in turn: the median resume time and the gateway's CPU per resume. */
async function resumeAll(gateway: Gateway, ids: string[]): Promise<{ medianMs: number; cpuMs: number }> {
  const times: number[] = [];
  const cpuBefore = gateway.cpu();
  for (const id of ids) {
    const started = performance.now();
    const answer = await gateway.request('session.resume', { session_id: id });
    times.push(performance.now() - started);
    if (!answer.result) throw new Error(`session.resume failed: ${JSON.stringify(answer.error)}`);
    await gateway.request('session.close', { session_id: answer.result.session_id });
  }
  return { medianMs: median(times), cpuMs: (gateway.cpu() - cpuBefore) / ids.length };
}

/** The benchmark: `sessions` stored sessions per store, `rounds` interleaved rounds of resuming all of them. */
export async function runResume(
  bin: string,
  options: { sessions?: number; rounds?: number; profileDir?: string } = {},
): Promise<ResumeResult> {
  const sessions = options.sessions ?? 30;
  const rounds = Math.max(3, options.rounds ?? 3);
  return withDatabase(async (serverUrl) => {
    const home = mkdtempSync(join(tmpdir(), 'hermes-resume-'));
    const gateways: Gateway[] = [];
    try {
      const sqlitePath = join(home, 'state.db');
      const sqliteStore = await openSqliteStore({ path: sqlitePath });
      // One set per round and 5 for the uncounted pass.
      const total = rounds * sessions + 5;
      const sqliteIds = await seed(sqliteStore, total);
      await sqliteStore.close();
      const databaseUrl = await createDatabase(serverUrl);
      const postgresStore = await openPostgresStore({ url: databaseUrl });
      const postgresIds = await seed(postgresStore, total);
      await postgresStore.close();
      const env = { PATH: process.env.PATH ?? '', HOME: home, HERMES_HOME: home };
      const sqlite = await startGateway(bin, env, 'sqlite', options.profileDir);
      gateways.push(sqlite);
      const postgres = await startGateway(
        bin,
        { ...env, HERMES_DATABASE_URL: databaseUrl },
        'postgres',
        options.profileDir,
      );
      gateways.push(postgres);
      // One uncounted pass each: the first resumes compile the code and open the connections.
      await resumeAll(sqlite, sqliteIds.slice(rounds * sessions));
      await resumeAll(postgres, postgresIds.slice(rounds * sessions));
      type Pass = { medianMs: number; cpuMs: number };
      const figures: Record<'sqlite' | 'postgres', Pass[]> = { sqlite: [], postgres: [] };
      for (let round = 0; round < rounds; round += 1) {
        const order = round % 2 === 0 ? (['sqlite', 'postgres'] as const) : (['postgres', 'sqlite'] as const);
        for (const store of order) {
          const ids = (store === 'sqlite' ? sqliteIds : postgresIds).slice(round * sessions, (round + 1) * sessions);
          figures[store].push(await resumeAll(store === 'sqlite' ? sqlite : postgres, ids));
        }
      }
      const summary = (store: 'sqlite' | 'postgres'): ResumeFigures => ({
        store,
        medianMs: median(figures[store].map((entry) => entry.medianMs)),
        roundMedianMs: figures[store].map((entry) => entry.medianMs),
        cpuMsPerResume: median(figures[store].map((entry) => entry.cpuMs)),
      });
      return {
        sessions,
        sqlite: summary('sqlite'),
        postgres: summary('postgres'),
        roundRatios: figures.postgres.map((entry, index) => entry.medianMs / (figures.sqlite[index] as Pass).medianMs),
        databaseGiven: databaseIsGiven(),
      };
    } finally {
      for (const gateway of gateways) await gateway.close();
      rmSync(home, { recursive: true, force: true });
    }
  });
}
