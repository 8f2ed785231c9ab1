/**
 * A short chat turn on PostgreSQL against the same turn on SQLite (issue 34.2): short streamed chat completions with an
 * `X-Hermes-Session-Id` header (a new session named by it each turn, auto-titles off), one after another, through two
 * apps/server instances against one model process: one on SQLite, one on PostgreSQL. Each instance runs in a CPU
 * group of its own with a quota; the PostgreSQL server (the embedded one, postgres.ts) in a group of its own on the
 * load group's CPUs, so that its CPU is read apart from the harness's and the model's.
 *
 * Round trips are counted for real: the PostgreSQL instance reaches the database through a TCP relay in the harness
 * that reads the frontend messages it forwards. node-postgres ends each query with one Sync (extended protocol) or
 * sends it as one Query message (simple protocol), and waits for its answer before it sends the next on that
 * connection (it does not pipeline), so Sync + Query messages are the round trips. Everything the instance sends during
 * the measured turns is counted, background work included. Parse messages are counted beside them: a prepared
 * (named) statement is parsed once per connection, an unnamed one every time.
 *
 * The two instances take turns in interleaved rounds (the order flipped each round); a figure is the median of the
 * rounds, the PG/SQLite ratio the median of the rounds' own ratios.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { step, text } from '@hermes/core/testing';
import { cpuMeter, setUpIsolation } from './cgroups.js';
import { ContentDeltaCounter } from './content-deltas.js';
import { send } from './http-load.js';
import { createDatabase, databaseIsGiven, findPostmaster, postgresCpuMeter, withDatabase } from './postgres.js';
import { startRemoteModel } from './remote-model.js';
import { startBenchServer, stopChild } from './server-process.js';

/** One short answer: 10 deltas of 2 characters (as turn-cpu.ts). */
const ANSWER = 'abcdefghijklmnopqrst';
const DELTAS = 10;

/** The CPU quota of each instance's group. */
export const PG_TURN_QUOTA = 0.5;

/** Frontend messages counted by the relay, by type byte. */
export type MessageCounts = Map<string, number>;

/** The figures of the section. */
export interface PgTurnResult {
  turns: number;
  rounds: number;
  /** (Sync + Query messages) ÷ turns, each round. */
  roundTripsPerTurn: number[];
  /**
   * Round trips per turn of a second turn on a stored session (one the warm-up made, whose agent the server let go
   * after its turn), one pass after the rounds: the session's transcript and usage are read back as well.
   */
  continuingRoundTripsPerTurn: number;
  /** Parse messages ÷ turns, each round. */
  parsesPerTurn: number[];
  /** Frontend messages per turn by type over all rounds, e.g. `{ B: 5, E: 5, S: 5 }`. */
  messagesPerTurn: Record<string, number>;
  /** PostgreSQL server CPU ÷ turns, each round (null: the server was given, its processes are not ours to read). */
  postgresCpuMsPerTurn: number[] | null;
  /** Instance CPU per turn, each round. */
  sqliteCpuMsPerTurn: number[];
  postgresInstanceCpuMsPerTurn: number[];
  /** Each round's PostgreSQL instance CPU over the SQLite instance's. */
  ratios: number[];
  errors: { sqlite: number; postgres: number };
  databaseGiven: boolean;
  /** How the PostgreSQL server's CPU was read. */
  postgresCpuSource: string;
}

/**
 * A TCP relay to `target` that counts the frontend (client → server) messages by type. The first message of a
 * connection (startup or SSL request) has no type byte and is not counted.
 */
async function startRelay(target: { host: string; port: number }): Promise<{
  port: number;
  counts: MessageCounts;
  close(): Promise<void>;
}> {
  const counts: MessageCounts = new Map();
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(target.port, target.host);
    sockets.add(client);
    sockets.add(upstream);
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    // Parser state: the header bytes of the message being read, and the body bytes left to skip.
    let startup = true;
    let header = Buffer.alloc(0);
    let skip = 0;
    client.on('data', (chunk: Buffer) => {
      upstream.write(chunk);
      let offset = 0;
      while (offset < chunk.length) {
        if (skip > 0) {
          const taken = Math.min(skip, chunk.length - offset);
          skip -= taken;
          offset += taken;
          continue;
        }
        const headerLength = startup ? 4 : 5;
        const taken = Math.min(headerLength - header.length, chunk.length - offset);
        header = Buffer.concat([header, chunk.subarray(offset, offset + taken)]);
        offset += taken;
        if (header.length < headerLength) break;
        if (startup) {
          skip = header.readInt32BE(0) - 4;
          // An SSL request is answered with one byte and followed by the startup message; the relay is plain TCP,
          // so node-postgres (no ssl here) sends the startup message first.
          startup = false;
        } else {
          const type = String.fromCharCode(header[0] as number);
          counts.set(type, (counts.get(type) ?? 0) + 1);
          skip = header.readInt32BE(1) - 4;
        }
        header = Buffer.alloc(0);
      }
    });
    upstream.on('data', (chunk: Buffer) => client.write(chunk));
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('close', end);
    upstream.on('close', end);
    client.on('error', end);
    upstream.on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (typeof address !== 'object' || address === null) throw new Error('the relay has no port');
  return {
    port: address.port,
    counts,
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

interface Instance {
  store: 'sqlite' | 'postgres';
  child: ChildProcess;
  url: string;
  cpu(): number;
  agent: Agent;
  next: number;
  errors: number;
}

/**
 * `count` sequential short streamed turns, each naming a new session with the header; with `continuing`, each names
 * one of the sessions the first turns made instead (its second turn).
 */
async function turns(instance: Instance, count: number, continuing = false): Promise<void> {
  for (let turn = 0; turn < count; turn += 1) {
    const session = continuing ? turn + 1 : instance.next + 1;
    if (!continuing) instance.next += 1;
    try {
      const counter = new ContentDeltaCounter(ANSWER.length / DELTAS);
      let seen = 0;
      const { status } = await send(`${instance.url}/v1/chat/completions`, {
        agent: instance.agent,
        headers: { 'x-hermes-session-id': `bench-pgturn-${instance.store}-${session}` },
        body: JSON.stringify({
          model: 'hermes-agent',
          stream: true,
          messages: [{ role: 'user', content: `turn ${session}` }],
        }),
        onText: (piece) => {
          seen += counter.push(piece);
        },
      });
      if (status !== 200 || seen !== DELTAS) instance.errors += 1;
    } catch {
      instance.errors += 1;
    }
  }
}

function countsOf(counts: MessageCounts): Record<string, number> {
  return Object.fromEntries(counts);
}

function roundTrips(counts: Record<string, number>): number {
  return (counts.S ?? 0) + (counts.Q ?? 0);
}

/**
 * The section: one SQLite and one PostgreSQL instance, `rounds` interleaved rounds of `turns` turns each after as many
 * uncounted turns on each; `profileDir` starts both instances with `--cpu-prof`.
 */
export async function runPgTurn(
  options: { turns?: number; rounds?: number; profileDir?: string; quota?: number } = {},
): Promise<PgTurnResult> {
  const count = options.turns ?? 100;
  const rounds = Math.max(3, options.rounds ?? 3);
  const quota = options.quota ?? PG_TURN_QUOTA;
  const isolation = setUpIsolation();
  return withDatabase(async (serverUrl) => {
    const databaseUrl = new URL(await createDatabase(serverUrl));
    const postmaster = databaseIsGiven() ? null : findPostmaster(Number(databaseUrl.port));
    const postgresGroup = postmaster === null ? null : isolation.loadSideGroup('postgres');
    const postgresCpu = postmaster === null ? null : postgresCpuMeter(postmaster, postgresGroup);
    const relay = await startRelay({ host: databaseUrl.hostname, port: Number(databaseUrl.port) });
    const relayUrl = new URL(databaseUrl);
    relayUrl.hostname = '127.0.0.1';
    relayUrl.port = String(relay.port);
    const model = await startRemoteModel({ repeat: true });
    await model.push(step(text(ANSWER, ANSWER.length / DELTAS)));
    const homes: string[] = [];
    const instances: Instance[] = [];
    try {
      for (const store of ['sqlite', 'postgres'] as const) {
        const home = mkdtempSync(join(tmpdir(), `hermes-pgturn-${store}-`));
        homes.push(home);
        writeFileSync(join(home, 'config.yaml'), 'session:\n  auto_title: false\n');
        const group = isolation.serverGroup(`pgturn ${store}`, quota);
        const started = await startBenchServer({
          home,
          modelUrl: model.baseURL,
          group,
          ...(store === 'postgres' ? { env: { HERMES_DATABASE_URL: relayUrl.toString() } } : {}),
          ...(options.profileDir ? { profileDir: options.profileDir } : {}),
        });
        instances.push({
          store,
          child: started.child,
          url: started.url,
          cpu: cpuMeter(started.child.pid as number, group),
          agent: new Agent({ keepAlive: true, maxSockets: 1 }),
          next: 0,
          errors: 0,
        });
      }
      // Uncounted turns first: the figures are the steady state of compiled code and open connections.
      for (const instance of instances) await turns(instance, Math.max(30, count));
      const sqliteCpu: number[] = [];
      const postgresInstanceCpu: number[] = [];
      const postgresServerCpu: number[] = [];
      const trips: number[] = [];
      const parses: number[] = [];
      const totals = new Map<string, number>();
      for (let round = 0; round < rounds; round += 1) {
        const order = round % 2 === 0 ? instances : [...instances].reverse();
        for (const instance of order) {
          const before = instance.cpu();
          const databaseBefore = postgresCpu?.() ?? 0;
          const messagesBefore = countsOf(relay.counts);
          await turns(instance, count);
          // The end commit lands before the response ends; a moment for anything the turn left running.
          await new Promise((resolve) => setTimeout(resolve, 200));
          const cpuPerTurn = (instance.cpu() - before) / count;
          if (instance.store === 'sqlite') {
            sqliteCpu.push(cpuPerTurn);
            continue;
          }
          postgresInstanceCpu.push(cpuPerTurn);
          if (postgresCpu) postgresServerCpu.push((postgresCpu() - databaseBefore) / count);
          const messages = countsOf(relay.counts);
          const delta: Record<string, number> = {};
          for (const [type, value] of Object.entries(messages)) {
            delta[type] = value - (messagesBefore[type] ?? 0);
            totals.set(type, (totals.get(type) ?? 0) + delta[type]);
          }
          trips.push(roundTrips(delta) / count);
          parses.push((delta.P ?? 0) / count);
        }
      }
      const [sqlite, postgres] = instances as [Instance, Instance];
      const continuingBefore = countsOf(relay.counts);
      await turns(postgres, count, true);
      const continuingAfter = countsOf(relay.counts);
      const continuing = roundTrips(continuingAfter) - roundTrips(continuingBefore);
      return {
        turns: count,
        rounds,
        roundTripsPerTurn: trips,
        continuingRoundTripsPerTurn: continuing / count,
        parsesPerTurn: parses,
        messagesPerTurn: Object.fromEntries(
          [...totals.entries()].sort().map(([type, value]) => [type, value / (count * rounds)]),
        ),
        postgresCpuMsPerTurn: postgresCpu ? postgresServerCpu : null,
        sqliteCpuMsPerTurn: sqliteCpu,
        postgresInstanceCpuMsPerTurn: postgresInstanceCpu,
        ratios: postgresInstanceCpu.map((value, index) => value / (sqliteCpu[index] as number)),
        errors: { sqlite: sqlite.errors, postgres: postgres.errors },
        databaseGiven: databaseIsGiven(),
        postgresCpuSource:
          postmaster === null
            ? 'not measured (PostgreSQL from HERMES_BENCH_DATABASE_URL)'
            : postgresGroup
              ? 'its CPU group (postmaster and backends, on the load CPUs)'
              : '/proc/<pid>/stat of the postmaster (with reaped children) and its live children',
      };
    } finally {
      for (const instance of instances) {
        instance.agent.destroy();
        await stopChild(instance.child, options.profileDir ? 'SIGTERM' : 'SIGKILL');
      }
      await model.close();
      await relay.close();
      for (const home of homes) rmSync(home, { recursive: true, force: true });
    }
  });
}
