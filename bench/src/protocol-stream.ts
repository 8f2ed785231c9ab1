/**
 * Stream path through each protocol to its client (issues 11 and 18): 10,000 text deltas from the scripted
 * OpenAI-compatible server through a spawned agent process to a real client of that protocol —
 * the ACP SDK's client over stdio, the gateway client over stdio and over WebSocket, the `openai`
 * client on chat completions and the runs client on runs events. For each path: client wall time and
 * time to first delta, the agent process's CPU time (its CPU group's, or its threads' run times from
 * /proc/<pid>/task/<tid>/schedstat, in ns) and its peak RSS
 * (VmHWM), after a 1,000-delta warm-up and after the 10,000-delta runs, to show whether peak memory
 * grows with the number of deltas. Issue 18 also asks for the first turn of a fresh process: each
 * path is started again in new processes whose very first turn is the 10,000-delta one (cold JIT and
 * whatever the turn loads lazily land in it), read by a client in a fresh process of its own
 * (fresh-turn-process.ts). A turn is measured from its prompt to its last delta; opening its session
 * (ACP `session/new`, gateway `session.create`) comes before.
 */
import { type ChildProcess, fork, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { client as createAcpClient, ndJsonStream } from '@agentclientprotocol/sdk/unstable';
import { GatewayClient, RunsClient } from '@hermes/client-sdk';
import { step, text } from '@hermes/core/testing';
import OpenAI from 'openai';
import { type CpuGroup, processRunTimeMs, setUpIsolation } from './cgroups.js';
import { type DirectRead, startDirectClient } from './direct-client.js';
import { type RemoteModel, startRemoteModel } from './remote-model.js';
import { agentEnvironment, agentNodeArguments } from './server-process.js';
import { fieldMedians, median } from './stats.js';

/** What one turn measures. */
export interface TurnFigures {
  /**
   * The model's deltas the client received, counted as characters of streamed text (each delta is one character):
   * a path that hands a lagging client several deltas in one chunk (ACP, ADR 0025) still counts every one.
   */
  deltasSeen: number;
  wallMs: number;
  firstDeltaMs: number;
  agentCpuMs: number;
  /** CPU time of this process (the protocol's client) during the run. */
  clientCpuMs: number;
}

/** One protocol path's figures (each the median of its runs). */
export interface ProtocolStreamMeasurement extends TurnFigures {
  name: string;
  peakRssWarmMb: number;
  peakRssMb: number;
  /** Peak RSS after one more turn of `longCount` deltas, when asked for. */
  peakRssLongMb?: number;
  /**
   * The first turn of a fresh process: the same 10,000 deltas with no warm-up turn before them, read by a client in a
   * fresh process too; each figure the median of `firstWallsMs.length` such pairs of processes.
   */
  first: TurnFigures;
  /** The wall time of each of those first turns, in the order they ran. */
  firstWallsMs: number[];
  /**
   * The first turn of another fresh process, started after the warm runs: the agent is as cold as in `first`, but the
   * client in this process has already read this path's runs, so what is left is the agent's own first-turn cost.
   */
  firstWarmClient: TurnFigures;
  /**
   * The direct client (direct-client-process.mjs) read just before each measured warm turn, in the same rounds: each
   * figure its median; and each turn's wall and agent CPU over the direct read of its pair.
   */
  floor: FloorFigures;
  /** The direct client's first read in a fresh process, one before each first-turn sample, and the pairs' ratios. */
  firstFloor: FloorFigures;
}

/** The direct client's figures beside one path's turns. */
export interface FloorFigures {
  wallMs: number;
  cpuMs: number;
  firstDeltaMs: number;
  /** Each pair's path wall over the floor's wall, and path agent CPU over the floor client's CPU. */
  wallRatios: number[];
  cpuRatios: number[];
}

type TurnSample = TurnFigures & { name: string };

/** Each figure the median of the samples' (as on the floors, src/stream.ts); deltas seen, the fewest. */
function medianFigures(samples: TurnFigures[]): TurnFigures {
  return {
    deltasSeen: Math.min(...samples.map((sample) => sample.deltasSeen)),
    ...fieldMedians(samples, ['wallMs', 'firstDeltaMs', 'agentCpuMs', 'clientCpuMs']),
  };
}

/** {@link measureTurn} on a session started for this one turn, which is then closed. */
export async function onlyTurn(name: string, session: PathSession): Promise<TurnFigures> {
  try {
    const { name: _, ...figures } = await measureTurn(name, session);
    return figures;
  } finally {
    await session.close();
  }
}

/**
 * Runs one turn of the deltas already queued on the model server and measures it (not its session's opening);
 * `agentCpu` reads the agent's CPU time in ms (default: its threads' run times, ns resolution; ADR 0110).
 */
async function measureTurn(
  name: string,
  path: PathSession,
  agentCpu: () => number = () => processRunTimeMs(path.pid),
): Promise<TurnSample> {
  await path.prepare();
  const cpuBefore = agentCpu();
  const clientBefore = process.cpuUsage();
  const started = performance.now();
  let first = -1;
  let seen = 0;
  await path.turn((received) => {
    if (first < 0) first = performance.now() - started;
    seen += received;
  });
  const wallMs = performance.now() - started;
  const client = process.cpuUsage(clientBefore);
  return {
    name,
    deltasSeen: seen,
    wallMs,
    firstDeltaMs: first,
    agentCpuMs: agentCpu() - cpuBefore,
    clientCpuMs: (client.user + client.system) / 1000,
  };
}

const KEY = 'bench-key-0123456789abcdefghij';
/** Peak resident set size of a process, in MB. */
function peakRssMb(pid: number): number {
  const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(match?.[1] ?? Number.NaN) / 1024;
}

/** The pid of this process's child whose command line contains every one of `words`. */
function childPid(words: string[]): number {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (parent !== process.pid) continue;
      const command = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (words.every((word) => command.includes(word))) return Number(entry);
    } catch {
      // The process ended while we looked.
    }
  }
  throw new Error(`no child process running ${words.join(' ')}`);
}

/**
 * Ends an agent process with SIGTERM (so `--cpu-prof` can write its profile), or SIGKILL when it
 * has not exited after 5 s.
 */
async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(timer);
}

/** Spawns `hermes <args>` and waits for a line on stderr that `ready` accepts. */
function spawnHermes(
  entry: string[],
  args: string[],
  env: NodeJS.ProcessEnv,
  ready: RegExp,
): Promise<{ child: ChildProcess; match: RegExpExecArray }> {
  const child = spawn(process.execPath, [...entry, ...args], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  return new Promise((resolve, reject) => {
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = ready.exec(stderr);
      if (match) resolve({ child, match });
    });
    child.on('exit', (code) => reject(new Error(`hermes ${args.join(' ')} exited with ${code}: ${stderr}`)));
  });
}

/** A live agent process driven by one client. */
export interface PathSession {
  pid: number;
  /**
   * Opens the session the next turn runs in (ACP `session/new`, gateway `session.create`; nothing
   * on the HTTP paths), outside the measured turn.
   */
  prepare(): Promise<void>;
  /** Runs one turn ("go") in the prepared session, calling `onDelta` for each text delta the client receives. */
  turn(onDelta: (count: number) => void): Promise<void>;
  close(): Promise<void>;
}

/** `entry` is the node arguments that run the CLI: profiler flags, then the bin path. */
export type PathFactory = (entry: string[], env: NodeJS.ProcessEnv, cwd: string) => Promise<PathSession>;

const acpStdio: PathFactory = async (entry, env, cwd) => {
  const child = spawn(process.execPath, [...entry, 'acp'], { env, cwd, stdio: ['pipe', 'pipe', 'ignore'] });
  let onDelta: ((count: number) => void) | null = null;
  const app = createAcpClient({ name: 'bench' }).onNotification('session/update', ({ params }) => {
    const update = params.update as { sessionUpdate: string; content?: { type: string; text?: string } };
    if (update.sessionUpdate === 'agent_message_chunk') onDelta?.(update.content?.text?.length ?? 0);
  });
  const connection = app.connect(
    ndJsonStream(
      Writable.toWeb(child.stdin as Writable) as WritableStream<Uint8Array>,
      Readable.toWeb(child.stdout as Readable) as unknown as ReadableStream<Uint8Array>,
    ),
  );
  await connection.agent.request('initialize', { protocolVersion: 1, clientCapabilities: {} });
  let sessionId = '';
  return {
    pid: child.pid as number,
    async prepare() {
      sessionId = (await connection.agent.request('session/new', { cwd, mcpServers: [] })).sessionId;
    },
    async turn(listener) {
      onDelta = listener;
      await connection.agent.request('session/prompt', {
        sessionId,
        prompt: [{ type: 'text', text: 'go' }],
      });
      onDelta = null;
    },
    close: () => stop(child),
  };
};

async function gatewayTurns(client: GatewayClient, pid: number, close: () => Promise<void>): Promise<PathSession> {
  let sessionId = '';
  return {
    pid,
    async prepare() {
      sessionId = (await client.session.create({})).session_id;
    },
    async turn(onDelta) {
      const turn = await client.startTurn({ session_id: sessionId, text: 'go' });
      for await (const event of turn.events)
        if (event.type === 'message.delta') onDelta((event.payload as { text: string }).text.length);
      await turn.completed;
    },
    async close() {
      await client.close().catch(() => undefined);
      await close();
    },
  };
}

const gatewayStdio: PathFactory = async (entry, env, cwd) => {
  const client = await GatewayClient.connect({
    connection: { command: process.execPath, args: [...entry, 'gateway'], env: env as Record<string, string>, cwd },
  });
  const pid = childPid([...entry, 'gateway']);
  return gatewayTurns(client, pid, async () => {
    // Closing the client closes the gateway's stdin; it exits by itself.
    for (let wait = 0; wait < 100 && existsSync(`/proc/${pid}`); wait += 1) await delay(50);
  });
};

const gatewayWebSocket: PathFactory = async (entry, env) => {
  const { child, match } = await spawnHermes(
    entry,
    ['gateway', '--ws', '--port', '0'],
    env,
    /gateway listening (ws:\/\/\S+)\?token=(\S+)\n/,
  );
  const client = await GatewayClient.connect({
    connection: { url: match[1] as string, token: match[2] as string },
  });
  return gatewayTurns(client, child.pid as number, () => stop(child));
};

async function serve(entry: string[], env: NodeJS.ProcessEnv) {
  const { child, match } = await spawnHermes(
    entry,
    ['serve', '--port', '0'],
    { ...env, API_SERVER_KEY: KEY },
    /listening on (http:\/\/\S+)/,
  );
  return { child, url: (match[1] as string).replace(/\/$/, '') };
}

const openaiChat: PathFactory = async (entry, env) => {
  const { child, url } = await serve(entry, env);
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: KEY });
  return {
    pid: child.pid as number,
    async prepare() {},
    async turn(onDelta) {
      const stream = await client.chat.completions.create({
        model: 'hermes-agent',
        stream: true,
        messages: [{ role: 'user', content: 'go' }],
      });
      for await (const chunk of stream) {
        const content = chunk.choices[0]?.delta.content;
        if (content) onDelta(content.length);
      }
    },
    close: () => stop(child),
  };
};

const runsEvents: PathFactory = async (entry, env) => {
  const { child, url } = await serve(entry, env);
  const runs = new RunsClient({ baseURL: url, apiKey: KEY });
  return {
    pid: child.pid as number,
    async prepare() {},
    async turn(onDelta) {
      const run = await runs.create({ input: 'go' });
      for await (const event of runs.events(run.run_id))
        if (event.event === 'message.delta') onDelta(String((event as { delta?: unknown }).delta ?? '').length);
    },
    close: () => stop(child),
  };
};

export const PATHS: [string, PathFactory][] = [
  ['stream: ACP stdio → SDK client', acpStdio],
  ['stream: gateway stdio → client', gatewayStdio],
  ['stream: gateway WebSocket → client', gatewayWebSocket],
  ['stream: chat completions → openai', openaiChat],
  ['stream: runs events → runs client', runsEvents],
];

function deltas(server: RemoteModel, count: number): Promise<void> {
  // One character per chunk: exactly `count` content deltas from the model.
  return server.push(step(text('x'.repeat(count), 1)));
}

/**
 * One first turn of a fresh agent read by a fresh client: both are started by a child process of their own
 * (fresh-turn-process.ts, through tsx as the harness itself runs). `queue` puts the turn's deltas on the model.
 */
function freshProcessTurn(
  path: string,
  start: { entry: string[]; env: NodeJS.ProcessEnv; cwd: string },
  queue: () => Promise<void>,
  group: CpuGroup | null,
): Promise<TurnFigures> {
  const child = fork(fileURLToPath(new URL('./fresh-turn-process.ts', import.meta.url)), [], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  let figures: TurnFigures | undefined;
  let error = '';
  return new Promise((resolve, reject) => {
    child.on('message', (message: { ready?: true; pid?: number; figures?: TurnFigures; error?: string }) => {
      // The agent runs in the path's CPU group, as the warm one does; its client stays in the load group.
      if (message.ready && group && message.pid) group.add(message.pid);
      if (message.ready)
        queue().then(
          () => child.send({ go: true }),
          (failed: unknown) => {
            error = String(failed);
            // The child closes its agent and exits when its parent lets go of it.
            child.disconnect();
          },
        );
      if (message.figures) figures = message.figures;
      if (message.error) error = message.error;
    });
    // Settled once the child is gone, so that the next sample never overlaps this one.
    child.once('exit', (code) => {
      if (figures) resolve(figures);
      else
        reject(
          new Error(`${path}, first turn in a fresh process: ${error || `the client process exited with ${code}`}`),
        );
    });
    child.send({ start: { path, ...start } });
  });
}

/** Uncounted turns of the measured size before a path's measured turns: the floor's uncounted reads are as many. */
const WARM_UP_TURNS = 2;

/** The floor's medians beside a path's samples, and each pair's ratios. */
function floorFigures(reads: DirectRead[], samples: TurnFigures[]): FloorFigures {
  return {
    ...fieldMedians(reads, ['wallMs', 'cpuMs', 'firstDeltaMs']),
    wallRatios: samples.map((sample, index) => sample.wallMs / (reads[index] as DirectRead).wallMs),
    cpuRatios: samples.map((sample, index) => sample.agentCpuMs / (reads[index] as DirectRead).cpuMs),
  };
}

/** Median of a floor's pair ratios (the figure a path's row is judged on). */
export function pairRatio(ratios: number[]): number {
  return median(ratios);
}

/**
 * Measures every protocol path: `runs` turns of `count` deltas each after one 1,000-delta warm-up turn (the peak RSS
 * baseline) and {@link WARM_UP_TURNS} uncounted turns of `count` deltas, each measured turn
 * right after a read of the direct client (the floor, in a process and CPU group of its own), so that path and floor
 * are measured in the same rounds; and `freshRuns` first turns of fresh agents, each after a fresh direct client's
 * first read. Each agent runs in a CPU group of its own when the harness is isolated (cgroups.ts).
 */
export async function runProtocolStreams(
  bin: string,
  options: { runs: number; freshRuns?: number; count?: number; longCount?: number; only?: string; profileDir?: string },
): Promise<ProtocolStreamMeasurement[]> {
  const count = options.count ?? 10_000;
  const freshRuns = options.freshRuns ?? 3;
  const isolation = setUpIsolation();
  const server = await startRemoteModel();
  // Warm like the floors' model (src/stream.ts): a fresh process's first turn is about the agent's process, and the
  // model process's own first answers of this size take about three times as long as its later ones.
  await server.warm(count);
  const floorGroup = isolation.serverGroup('direct client', null);
  const direct = await startDirectClient(server.baseURL, floorGroup);
  /** One read of the warm direct client, of `count` deltas queued now. */
  const floorRead = async (): Promise<DirectRead> => {
    await deltas(server, count);
    const read = await direct.read();
    if (read.deltas !== count) throw new Error(`the direct client saw ${read.deltas} of ${count} deltas`);
    return read;
  };
  /** The first read of a fresh direct client. */
  const freshFloorRead = async (): Promise<DirectRead> => {
    const fresh = await startDirectClient(server.baseURL, floorGroup);
    try {
      await deltas(server, count);
      const read = await fresh.read();
      if (read.deltas !== count) throw new Error(`the fresh direct client saw ${read.deltas} of ${count} deltas`);
      return read;
    } finally {
      fresh.close();
    }
  };
  // Two uncounted reads: the floor is read warm, as the paths' agents are after their warm-up turn.
  await floorRead();
  await floorRead();
  const root = mkdtempSync(join(tmpdir(), 'hermes-bench-streams-'));
  const results: ProtocolStreamMeasurement[] = [];
  try {
    for (const [name, factory] of PATHS) {
      if (options.only && !name.includes(options.only)) continue;
      const agentGroup = isolation.serverGroup(`agent ${name}`, null);
      const home = join(root, name.replace(/\W+/g, '-'), 'home');
      const cwd = join(root, name.replace(/\W+/g, '-'), 'project');
      mkdirSync(home, { recursive: true });
      mkdirSync(cwd, { recursive: true });
      writeFileSync(join(home, 'config.yaml'), 'session:\n  auto_title: false\n');
      const env = {
        PATH: process.env.PATH ?? '',
        HOME: home,
        HERMES_HOME: home,
        HERMES_MODEL: 'custom:bench',
        HERMES_BASE_URL: server.baseURL,
        ...agentEnvironment(),
      };
      const entry = [
        ...agentNodeArguments(),
        ...(options.profileDir ? ['--cpu-prof', `--cpu-prof-dir=${options.profileDir}`, bin] : [bin]),
      ];
      // First turn of a fresh agent and a fresh client, `freshRuns` times, each after a fresh direct client's first read.
      const firstSamples: TurnFigures[] = [];
      const firstReads: DirectRead[] = [];
      for (let run = 0; run < freshRuns; run += 1) {
        firstReads.push(await freshFloorRead());
        firstSamples.push(await freshProcessTurn(name, { entry, env, cwd }, () => deltas(server, count), agentGroup));
      }
      const first = medianFigures(firstSamples);
      // First turn of a fresh agent read from this process: start it (ready to take a turn), then 10,000 deltas at once.
      const freshTurn = async (): Promise<TurnFigures> => {
        const fresh = await factory(entry, env, cwd);
        agentGroup?.add(fresh.pid);
        await deltas(server, count).catch(async (error: unknown) => {
          await fresh.close();
          throw error;
        });
        return onlyTurn(name, fresh);
      };
      const path = await factory(entry, env, cwd);
      agentGroup?.add(path.pid);
      let warm: Omit<ProtocolStreamMeasurement, 'firstWarmClient'>;
      try {
        await deltas(server, 1_000);
        await path.prepare();
        await path.turn(() => {});
        const peakRssWarmMb = peakRssMb(path.pid);
        // Then uncounted turns of `count` deltas, as the floor had its uncounted reads of `count` before it was measured
        // (ADR 0094): after one 1,000-delta turn the first turns of `count` deltas still ran V8's optimising compiles
        // and the old generation's second full collection, on every path, so a path's median was a warm-up turn.
        for (let warmUp = 0; warmUp < WARM_UP_TURNS; warmUp += 1) {
          await deltas(server, count);
          await path.prepare();
          await path.turn(() => {});
        }
        const samples: TurnSample[] = [];
        const reads: DirectRead[] = [];
        for (let run = 0; run < options.runs; run += 1) {
          reads.push(await floorRead());
          await deltas(server, count);
          // The agent's group's CPU (nanoseconds; only this agent is in it by now) when isolated, else its threads' run times.
          samples.push(await measureTurn(name, path, agentGroup ? () => agentGroup.cpuMs() : undefined));
        }
        const middle = { name, ...medianFigures(samples) };
        const peakAfterRuns = peakRssMb(path.pid);
        let peakRssLongMb: number | undefined;
        if (options.longCount) {
          // One much longer reply: a flat peak RSS does not grow with the number of deltas.
          await deltas(server, options.longCount);
          await path.prepare();
          await path.turn(() => {});
          peakRssLongMb = peakRssMb(path.pid);
        }
        warm = {
          ...middle,
          first,
          firstWallsMs: firstSamples.map((sample) => sample.wallMs),
          peakRssWarmMb,
          peakRssMb: peakAfterRuns,
          ...(peakRssLongMb === undefined ? {} : { peakRssLongMb }),
          floor: floorFigures(reads, samples),
          firstFloor: floorFigures(firstReads, firstSamples),
        };
      } finally {
        await path.close();
      }
      // With the warm process gone, one more fresh one: its first turn meets a client that has read this path before.
      results.push({ ...warm, firstWarmClient: await freshTurn() });
    }
  } finally {
    direct.close();
    await server.close();
    rmSync(root, { recursive: true, force: true });
  }
  return results;
}
