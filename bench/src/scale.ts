/**
 * Scale (issue 34.1 and 34.3, ADR 0055): how the throughput of apps/server grows with 1, 2 and 3 instances on one
 * PostgreSQL database, each instance in a CPU group of its own with the same quota (cgroups.ts).
 *
 * Method: closed-loop saturation. Each instance gets the same fixed number of clients, each of which sends its next
 * request as soon as the last one is answered, so an instance always has work waiting and the figure is what its
 * quota can carry. The model answers at once (10 deltas in one burst), so the instances' CPU is the limit, not a pace.
 * Two workloads: streamed chat turns (header-less, each client on its own instance), and runs created on one instance
 * and read (`GET /v1/runs/{id}/events`) through the next one, so every run's events cross instances. The same chat
 * load through 1, 2 and 3 pass-through proxies (proxy-process.ts, node:http like the agents) at the same quota is
 * the floor: what the machine and the load generator allow a server that does nothing.
 *
 * Every configuration is measured in every round, the order rotated from round to round (the 1-instance case is not
 * always first), and so is the instance that serves alone (2 instances are then the two others): every instance serves
 * as many windows as the others, after a warm-up long enough for their CPU per request to settle. Each figure is the
 * median of the rounds; a ratio is the median of the rounds' own ratios (both
 * sides measured minutes apart at most). Throughput is also given per CPU-second the instances received (read from
 * their groups), which holds even where a quota was not fully received.
 *
 * Cross-instance delivery: in each round, runs created on that round's first instance and read on the next, one at a time, at light
 * load; the delay of each `message.delta` from its emit time (the event's timestamp) to its arrival, pooled over the
 * rounds (at least 1,000 samples).
 */
import type { ChildProcess } from 'node:child_process';
import { fork } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { delay, step, text } from '@hermes/core/testing';
import { type CpuGroup, type Isolation, processCpuMs, setUpIsolation } from './cgroups.js';
import { ContentDeltaCounter } from './content-deltas.js';
import { send } from './http-load.js';
import {
  createDatabase,
  databaseIsGiven,
  findPostmaster,
  postgresCpuMeter,
  queryOnce,
  withDatabase,
} from './postgres.js';
import { startRemoteModel } from './remote-model.js';
import { startBenchServer } from './server-process.js';
import { median, percentile } from './stats.js';

/** One short answer: 10 deltas of 2 characters, sent at once. */
const ANSWER = 'abcdefghijklmnopqrst';
const DELTAS = 10;
/** Clients per instance: enough that an instance always has a request waiting, whatever its quota. */
export const CLIENTS_PER_INSTANCE = 8;
/** Default CPU quota of each instance (and each proxy), in cores. */
export const DEFAULT_QUOTA = 0.25;
/** Deltas of a delivery run, and the pause between them; the first comes after the subscriber is in place. */
const DELIVERY_DELTAS = 20;
const DELIVERY_PACE_MS = 10;
const DELIVERY_LEAD_MS = 100;

type Workload = 'chat' | 'runs';
type Kind = 'server' | 'proxy';

/** What one measured window saw. */
export interface Window {
  kind: Kind;
  workload: Workload;
  instances: number;
  /** Completed requests (turns or runs) per second. */
  perSecond: number;
  errors: number;
  /** Latency of a request, from sending it to the end of its stream (for runs: creation to the last event). */
  p50Ms: number;
  p99Ms: number;
  /** CPU the instances' groups (or processes) received over the window, in cores. */
  cores: number;
  /** Completed requests per CPU-second the instances received. */
  perCpuSecond: number;
  /**
   * CPU the load side received over the window, in cores (NaN when not isolated): the load group (harness, load
   * generator, model) and the PostgreSQL server's group beside it.
   */
  loadCores: number;
  /** PostgreSQL's part of {@link loadCores} (NaN when it is not measured: not isolated, or a given server). */
  postgresCores: number;
  /** Up to three distinct reasons of the errors. */
  errorReasons: string[];
  /** Diagnostics of the window (not judged): where the time of a request went, and who waited for a CPU. */
  probe: WindowProbe;
}

/** What a window saw besides its figures: CFS throttling, run-queue waits, and for runs where their time went. */
export interface WindowProbe {
  /** Per instance: share of the CFS periods with work in which it ran out of quota, and its threads' held time (ms/s). */
  throttledShare: number[];
  throttledMsPerSecond: number[];
  /** Run-queue wait of the instances' threads, summed, in ms per second of the window (includes throttled time). */
  serverRunDelayMsPerSecond: number;
  /** Run-queue wait of the load side's threads (load group and PostgreSQL), in ms per second of the window. */
  loadRunDelayMsPerSecond: number;
  /** Requests completed in the window (the p99's sample count). */
  samples: number;
  /**
   * CPU the servers' CPUs spent on anything but the window's instances, in cores (`/proc/stat` busy time less the
   * instances' groups; NaN when not isolated): other processes there, idle instances, the kernel (ADR 0100).
   */
  otherCoresOnServerCpus: number;
  /**
   * Runs only: the parts of a run's latency. `create`: POST to its 202; `owner`: POST to the terminal event's own
   * timestamp (the owner's clock, the same machine's); `delivery`: that timestamp to the terminal event's arrival at the
   * reader's client. p99 of each, and the means of each over the slowest 1% of runs.
   */
  createP99Ms: number;
  /** The 202's arrival to the head of the events response (the reader's route, before its stream's first read). */
  headP99Ms: number;
  slowestHeadMs: number;
  ownerP99Ms: number;
  deliveryP99Ms: number;
  slowestCreateMs: number;
  slowestOwnerMs: number;
  slowestDeliveryMs: number;
}

/** Everything one scale run measured. */
export interface ScaleResult {
  isolation: string;
  isolated: boolean;
  quotaCores: number;
  clientsPerInstance: number;
  rounds: Window[][];
  /** Median over the rounds of each configuration. */
  medians: Window[];
  /** Delivery delays pooled over the rounds, and each round's p99. */
  delivery: { samples: number; p50Ms: number; p99Ms: number; roundP99Ms: number[] };
  databaseGiven: boolean;
}

interface Target {
  url: string;
  pid: number;
  group: CpuGroup | null;
  child: ChildProcess;
  cpu(): number;
}

/** Forks the pass-through proxy in front of `modelUrl`, in `group`. */
async function startProxy(modelUrl: string, group: CpuGroup | null): Promise<{ child: ChildProcess; url: string }> {
  const child = fork(fileURLToPath(new URL('./proxy-process.ts', import.meta.url)), [modelUrl], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  if (group && child.pid !== undefined) group.add(child.pid);
  const url = await new Promise<string>((resolve, reject) => {
    child.once('message', (message: { url?: string }) => message.url && resolve(message.url));
    child.once('exit', (code) => reject(new Error(`the proxy exited with ${code}`)));
  });
  return { child, url };
}

/** One streamed chat turn; resolves with the deltas seen (throws on a non-2xx answer). */
async function chatTurn(url: string, agent: Agent, index: number): Promise<number> {
  const counter = new ContentDeltaCounter(ANSWER.length / DELTAS);
  let seen = 0;
  const { status } = await send(`${url}/v1/chat/completions`, {
    agent,
    body: JSON.stringify({
      model: 'hermes-agent',
      stream: true,
      messages: [{ role: 'user', content: `turn ${index}` }],
    }),
    onText: (piece) => {
      seen += counter.push(piece);
    },
  });
  if (status !== 200) throw new Error(`chat turn answered ${status}`);
  return seen;
}

/** A run created on `owner`, its events read on `reader` to the end; `onText` sees the event stream. */
async function runThrough(
  owner: string,
  reader: string,
  agent: Agent,
  index: number,
  onEvents: (text: string, subscribedAt: number) => void,
  onCreated?: () => void,
  onSubscribed?: () => void,
): Promise<void> {
  const created = await send(`${owner}/v1/runs`, { agent, body: JSON.stringify({ input: `run ${index}` }) });
  if (created.status !== 202) throw new Error(`run creation answered ${created.status}`);
  onCreated?.();
  const { run_id: runId } = JSON.parse(created.body) as { run_id: string };
  const subscribedAt = Date.now();
  const { status } = await send(`${reader}/v1/runs/${runId}/events`, {
    method: 'GET',
    agent,
    ...(onSubscribed ? { onHead: () => onSubscribed() } : {}),
    onText: (piece) => onEvents(piece, subscribedAt),
  });
  if (status !== 200) throw new Error(`run events answered ${status}`);
}

/**
 * Counts the deltas of `message.delta` events in an SSE stream of run events, by their text. Each data line is parsed:
 * events replayed from PostgreSQL come back from a jsonb column, with their keys in another order.
 */
function runDeltaCounter(onTerminal?: (timestampMs: number) => void): (piece: string) => number {
  let rest = '';
  return (piece) => {
    const all = rest + piece;
    const end = all.lastIndexOf('\n\n');
    if (end < 0) {
      rest = all;
      return 0;
    }
    rest = all.slice(end + 2);
    let characters = 0;
    for (const line of all.slice(0, end).split('\n')) {
      if (onTerminal && line.startsWith('data: ') && TERMINAL_PATTERN.test(line)) {
        const event = JSON.parse(line.slice(6)) as { timestamp?: number };
        if (typeof event.timestamp === 'number') onTerminal(event.timestamp * 1000);
      }
      if (!line.startsWith('data: ') || !line.includes('message.delta')) continue;
      const event = JSON.parse(line.slice(6)) as { event?: string; delta?: string };
      if (event.event === 'message.delta') characters += event.delta?.length ?? 0;
    }
    return characters / (ANSWER.length / DELTAS);
  };
}

/**
 * Closed loop over `targets` (the first `instances`): `clients` loops per instance, each sending its next request as
 * soon as the last is answered. After `settleMs` the window opens for `windowMs`; requests completed inside it count.
 */
async function closedLoop(
  kind: Kind,
  workload: Workload,
  targets: Target[],
  clients: number,
  settleMs: number,
  windowMs: number,
  load: CpuGroup | null,
  postgres: (() => number) | null = null,
  loadSide: CpuGroup[] = [],
  serverCpus: number[] = [],
): Promise<Window> {
  const instances = targets.length;
  const agents = targets.map(() => new Agent({ keepAlive: true, maxSockets: 2 * clients }));
  let stop = false;
  let windowStart = Number.POSITIVE_INFINITY;
  let windowEnd = Number.POSITIVE_INFINITY;
  const latencies: number[] = [];
  /** Per completed run: [create, owner, delivery] in ms, with its latency. */
  const parts: { latency: number; create: number; head: number; owner: number; delivery: number }[] = [];
  let errors = 0;
  const reasons = new Set<string>();
  let completed = 0;
  let sequence = 0;
  const loop = async (instance: number) => {
    const target = targets[instance] as Target;
    const reader = targets[(instance + 1) % instances] as Target;
    const agent = agents[instance] as Agent;
    while (!stop) {
      const started = performance.now();
      const startedAt = Date.now();
      let createdAt = Number.NaN;
      let headAt = Number.NaN;
      let terminalAt = Number.NaN;
      let terminalArrivedAt = Number.NaN;
      let failure = '';
      try {
        sequence += 1;
        let seen = 0;
        if (workload === 'chat') seen = await chatTurn(target.url, agent, sequence);
        else {
          const count = runDeltaCounter((timestampMs) => {
            terminalAt = timestampMs;
            terminalArrivedAt = Date.now();
          });
          await runThrough(
            target.url,
            reader.url,
            agent,
            sequence,
            (piece) => {
              seen += count(piece);
            },
            () => {
              createdAt = Date.now();
            },
            () => {
              headAt = Date.now();
            },
          );
        }
        if (seen !== DELTAS) failure = `${seen} of ${DELTAS} deltas`;
      } catch (error) {
        failure = error instanceof Error ? error.message : String(error);
      }
      const ended = performance.now();
      if (ended < windowStart || started > windowEnd || ended > windowEnd) continue;
      if (failure) {
        errors += 1;
        if (reasons.size < 3) reasons.add(failure);
      } else {
        completed += 1;
        latencies.push(ended - started);
        if (workload === 'runs')
          parts.push({
            latency: ended - started,
            create: createdAt - startedAt,
            head: headAt - createdAt,
            owner: terminalAt - startedAt,
            delivery: terminalArrivedAt - terminalAt,
          });
      }
    }
  };
  const loops = targets.flatMap((_target, instance) => Array.from({ length: clients }, () => loop(instance)));
  await new Promise((resolve) => setTimeout(resolve, settleMs));
  /** The window's counters, read at its start and at its end. */
  const counters = () => ({
    cpu: targets.map((target) => target.cpu()),
    throttling: targets.map((target) => target.group?.throttling()),
    serverDelay: targets.reduce((sum, target) => sum + (target.group?.runDelayMs() ?? 0), 0),
    loadDelay: loadSide.reduce((sum, group) => sum + group.runDelayMs(), 0),
    load: load?.cpuMs() ?? Number.NaN,
    postgres: postgres?.() ?? Number.NaN,
    serverCpusBusy: busyMsOf(serverCpus),
  });
  const before = counters();
  windowStart = performance.now();
  await new Promise((resolve) => setTimeout(resolve, windowMs));
  windowEnd = performance.now();
  const after = counters();
  stop = true;
  await Promise.all(loops);
  for (const agent of agents) agent.destroy();
  const seconds = (windowEnd - windowStart) / 1000;
  const cpuSeconds = after.cpu.reduce((sum, end, index) => sum + end - (before.cpu[index] as number), 0) / 1000;
  latencies.sort((a, b) => a - b);
  const sortedOf = (field: 'create' | 'head' | 'owner' | 'delivery') =>
    parts.map((part) => part[field]).sort((a, b) => a - b);
  const slowest = [...parts].sort((a, b) => b.latency - a.latency).slice(0, Math.max(1, Math.ceil(parts.length / 100)));
  const throttled = after.throttling.map((end, index) => {
    const start = before.throttling[index];
    if (!start || !end) return null;
    return {
      share: (end.throttled - start.throttled) / Math.max(1, end.periods - start.periods),
      msPerSecond: (end.throttledMs - start.throttledMs) / seconds,
    };
  });
  const probe: WindowProbe = {
    throttledShare: throttled.map((entry) => entry?.share ?? Number.NaN),
    throttledMsPerSecond: throttled.map((entry) => entry?.msPerSecond ?? Number.NaN),
    serverRunDelayMsPerSecond: (after.serverDelay - before.serverDelay) / seconds,
    loadRunDelayMsPerSecond: (after.loadDelay - before.loadDelay) / seconds,
    samples: latencies.length,
    otherCoresOnServerCpus: (after.serverCpusBusy - before.serverCpusBusy) / 1000 / seconds - cpuSeconds / seconds,
    createP99Ms: percentile(sortedOf('create'), 0.99),
    headP99Ms: percentile(sortedOf('head'), 0.99),
    slowestHeadMs: mean(slowest.map((part) => part.head)),
    ownerP99Ms: percentile(sortedOf('owner'), 0.99),
    deliveryP99Ms: percentile(sortedOf('delivery'), 0.99),
    slowestCreateMs: mean(slowest.map((part) => part.create)),
    slowestOwnerMs: mean(slowest.map((part) => part.owner)),
    slowestDeliveryMs: mean(slowest.map((part) => part.delivery)),
  };
  return {
    probe,
    kind,
    workload,
    instances,
    perSecond: completed / seconds,
    errors,
    p50Ms: percentile(latencies, 0.5),
    p99Ms: percentile(latencies, 0.99),
    cores: cpuSeconds / seconds,
    perCpuSecond: completed / cpuSeconds,
    loadCores: (after.load - before.load + (postgres ? after.postgres - before.postgres : 0)) / 1000 / seconds,
    postgresCores: (after.postgres - before.postgres) / 1000 / seconds,
    errorReasons: [...reasons],
  };
}

/**
 * Runs created on `owner` and read on `reader` one at a time until `samples` delays are collected: each run's deltas
 * come `DELIVERY_PACE_MS` apart after a lead that lets the subscription arrive first.
 */
async function delivery(owner: string, reader: string, samples: number, queue: () => Promise<void>): Promise<number[]> {
  const delays: number[] = [];
  const agent = new Agent({ keepAlive: true });
  try {
    for (let run = 0; delays.length < samples; run += 1) {
      await queue();
      let buffer = '';
      await runThrough(owner, reader, agent, run, (piece, subscribedAt) => {
        const arrived = Date.now();
        buffer += piece;
        const frames = buffer.split('\n\n');
        buffer = frames.pop() ?? '';
        for (const frame of frames) {
          const line = frame.split('\n').find((entry) => entry.startsWith('data: '));
          if (!line) continue;
          const event = JSON.parse(line.slice(6)) as { event: string; timestamp: number };
          // Events emitted before the subscription was sent are replayed, not delivered live: they do not count.
          if (event.event === 'message.delta' && event.timestamp * 1000 >= subscribedAt)
            delays.push(arrived - event.timestamp * 1000);
        }
      });
    }
  } finally {
    agent.destroy();
  }
  return delays;
}

/** A data line of a run's terminal event. */
const TERMINAL_PATTERN = /"event":"run\.(completed|failed|cancelled|interrupted)"/;

/**
 * Busy time of `cpus` since boot, in ms (`/proc/stat`: every field but idle and iowait, in clock ticks of 10 ms); NaN
 * for no CPUs or where it cannot be read.
 */
function busyMsOf(cpus: number[]): number {
  if (cpus.length === 0) return Number.NaN;
  let stat: string;
  try {
    stat = readFileSync('/proc/stat', 'utf8');
  } catch {
    return Number.NaN;
  }
  let busy = 0;
  for (const cpu of cpus) {
    const line = stat.split('\n').find((entry) => entry.startsWith(`cpu${cpu} `));
    if (!line) return Number.NaN;
    const [, user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).map(Number);
    busy += (user ?? 0) + (nice ?? 0) + (system ?? 0) + (irq ?? 0) + (softirq ?? 0) + (steal ?? 0);
  }
  return busy * 10;
}

/** Mean of the values. */
function mean(values: number[]): number {
  return values.length === 0 ? Number.NaN : values.reduce((sum, value) => sum + value, 0) / values.length;
}

/** Rotates `items` left by `by`. */
function rotate<T>(items: T[], by: number): T[] {
  const shift = by % items.length;
  return [...items.slice(shift), ...items.slice(0, shift)];
}

/**
 * The instances (or proxies) a configuration of `instances` uses in `round`: the one instance moves from round to round,
 * and 2 instances are the two others, so that every instance serves two of each workload's three windows in a round.
 * With the first instance always the one, it served every window and ran warmer than the others (ADR 0100).
 */
export function poolOf<T>(all: T[], instances: number, round: number): T[] {
  const turned = rotate(all, round);
  return instances === 2 && turned.length >= 3 ? turned.slice(1, 3) : turned.slice(0, instances);
}

/** The configurations of one round, in the order that round measures them. */
export function roundOrder(round: number): { kind: Kind; workload: Workload; instances: number }[] {
  const counts = rotate([1, 2, 3], round);
  const workloads: { kind: Kind; workload: Workload }[] = rotate(
    [
      { kind: 'server', workload: 'chat' },
      { kind: 'server', workload: 'runs' },
      { kind: 'proxy', workload: 'chat' },
    ],
    round,
  );
  return workloads.flatMap((entry) => counts.map((instances) => ({ ...entry, instances })));
}

function medianWindow(windows: Window[]): Window {
  const first = windows[0] as Window;
  const of = (field: keyof Window) => median(windows.map((window) => window[field] as number));
  return {
    kind: first.kind,
    workload: first.workload,
    instances: first.instances,
    perSecond: of('perSecond'),
    errors: windows.reduce((sum, window) => sum + window.errors, 0),
    p50Ms: of('p50Ms'),
    p99Ms: of('p99Ms'),
    cores: of('cores'),
    perCpuSecond: of('perCpuSecond'),
    loadCores: of('loadCores'),
    postgresCores: of('postgresCores'),
    errorReasons: [...new Set(windows.flatMap((window) => window.errorReasons))].slice(0, 3),
    probe: first.probe,
  };
}

/** The scale benchmark: `rounds` interleaved rounds of every configuration, plus cross-instance delivery. */
export async function runScale(
  options: {
    rounds?: number;
    quotaCores?: number;
    clients?: number;
    settleMs?: number;
    windowMs?: number;
    deliverySamples?: number;
    /** Warm-up of all instances together before the rounds, per workload (chat, runs). */
    warmChatMs?: number;
    warmRunsMs?: number;
    log?: (line: string) => void;
  } = {},
): Promise<ScaleResult> {
  const isolation: Isolation = setUpIsolation();
  const rounds = Math.max(3, options.rounds ?? 3);
  const quota = options.quotaCores ?? DEFAULT_QUOTA;
  const clients = options.clients ?? CLIENTS_PER_INSTANCE;
  const settleMs = options.settleMs ?? 1_500;
  const windowMs = options.windowMs ?? 5_000;
  const deliverySamples = options.deliverySamples ?? 1_000;
  const warmChatMs = options.warmChatMs ?? 10_000;
  const warmRunsMs = options.warmRunsMs ?? 20_000;
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const answer = step(text(ANSWER, ANSWER.length / DELTAS));
  const paced = step(
    delay(DELIVERY_LEAD_MS),
    ...Array.from({ length: DELIVERY_DELTAS }, (_, index) =>
      index === 0 ? [text('ab', 2)] : [delay(DELIVERY_PACE_MS), text('ab', 2)],
    ).flat(),
  );
  return withDatabase(async (serverUrl) => {
    // PostgreSQL in a group of its own on the load CPUs, so the load side's CPU can be told apart from the database's
    // (the runs workload with 3 instances takes most of the load CPU; ADR 0082). Its own CPU is unchanged by the move.
    const postmaster = databaseIsGiven() ? null : findPostmaster(Number(new URL(serverUrl).port));
    const postgresGroup = postmaster === null ? null : isolation.loadSideGroup('postgres');
    const postgres = postmaster === null || postgresGroup === null ? null : postgresCpuMeter(postmaster, postgresGroup);
    const model = await startRemoteModel({ repeat: true });
    await model.push(answer);
    const children: ChildProcess[] = [];
    const homes: string[] = [];
    try {
      const database = await createDatabase(serverUrl);
      const servers: Target[] = [];
      const proxies: Target[] = [];
      for (let index = 0; index < 3; index += 1) {
        const home = mkdtempSync(join(tmpdir(), 'hermes-scale-'));
        homes.push(home);
        writeFileSync(join(home, 'config.yaml'), 'session:\n  auto_title: false\n');
        const group = isolation.serverGroup(`server ${index + 1}`, quota, index);
        const { child, url } = await startBenchServer({
          home,
          modelUrl: model.baseURL,
          env: { API_SERVER_MAX_CONCURRENT_RUNS: '0', HERMES_DATABASE_URL: database },
          group,
        });
        children.push(child);
        servers.push({ url, pid: child.pid as number, group, child, cpu: cpuOf(child.pid as number, group) });
        const proxyGroup = isolation.serverGroup(`proxy ${index + 1}`, quota, index);
        const proxy = await startProxy(model.baseURL, proxyGroup);
        children.push(proxy.child);
        proxies.push({
          url: proxy.url,
          pid: proxy.child.pid as number,
          group: proxyGroup,
          child: proxy.child,
          cpu: cpuOf(proxy.child.pid as number, proxyGroup),
        });
      }
      // Every process compiles its hot path before anything counts, all three alike. At a 0.25-core quota an instance's
      // CPU per run kept falling for about half a minute of load (ADR 0100): a few seconds left the one instance the
      // rounds use most far warmer than the others.
      log(`bench: scale, warming ${servers.length} instances and proxies…`);
      await closedLoop('server', 'chat', servers, clients, 0, warmChatMs, isolation.load);
      await closedLoop('server', 'runs', servers, clients, 0, warmRunsMs, isolation.load);
      await closedLoop('proxy', 'chat', proxies, clients, 0, 2_000, isolation.load);
      const measured: Window[][] = [];
      const delays: number[] = [];
      const roundP99Ms: number[] = [];
      for (let round = 0; round < rounds; round += 1) {
        const windows: Window[] = [];
        for (const config of roundOrder(round)) {
          const pool = poolOf(config.kind === 'server' ? servers : proxies, config.instances, round);
          const window = await closedLoop(
            config.kind,
            config.workload,
            pool,
            clients,
            settleMs,
            windowMs,
            isolation.load,
            postgres,
            [isolation.load, postgresGroup].filter((group): group is CpuGroup => group !== null),
            isolation.serverCpus,
          );
          windows.push(window);
          const probe = window.probe;
          let ownerQueue = '';
          if (config.workload === 'runs' && config.kind === 'server') {
            // The terminal event's wait on its owner: from its emit (its timestamp) to the start of the append that
            // carried it (the row's created_at), for the runs that ended in the window.
            const rows = await queryOnce<{ p50: number; p99: number; n: string }>(
              database,
              `SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY created_at - (payload->>'timestamp')::float8 * 1000) AS p50,
                      percentile_cont(0.99) WITHIN GROUP (ORDER BY created_at - (payload->>'timestamp')::float8 * 1000) AS p99,
                      count(*) AS n
               FROM run_events WHERE event = 'run.completed' AND created_at >= $1`,
              [Date.now() - windowMs - 1_000],
            );
            const row = rows[0];
            if (row)
              ownerQueue = `; terminal append queued on its owner p50 ${Number(row.p50).toFixed(0)} / p99 ${Number(row.p99).toFixed(0)} ms (${row.n})`;
          }
          log(
            `bench: scale probe: throttled ${probe.throttledShare.map((share) => share.toFixed(2)).join('/')} of periods, ` +
              `${probe.throttledMsPerSecond.map((value) => value.toFixed(0)).join('/')} ms/s; run-queue wait servers ${probe.serverRunDelayMsPerSecond.toFixed(0)} ms/s, ` +
              `load side ${probe.loadRunDelayMsPerSecond.toFixed(0)} ms/s; other work on the servers' CPUs ${probe.otherCoresOnServerCpus.toFixed(2)} cores; ${probe.samples} samples` +
              (config.workload === 'runs'
                ? `; p99 create ${probe.createP99Ms.toFixed(0)} / head ${probe.headP99Ms.toFixed(0)} / owner ${probe.ownerP99Ms.toFixed(0)} / delivery ${probe.deliveryP99Ms.toFixed(0)} ms; ` +
                  `slowest 1%: create ${probe.slowestCreateMs.toFixed(0)}, head ${probe.slowestHeadMs.toFixed(0)}, owner ${probe.slowestOwnerMs.toFixed(0)}, delivery ${probe.slowestDeliveryMs.toFixed(0)} ms`
                : '') +
              ownerQueue,
          );
          log(
            `bench: scale round ${round + 1}: ${config.kind} ${config.workload} ×${config.instances}: ${window.perSecond.toFixed(1)}/s, ` +
              `p99 ${window.p99Ms.toFixed(0)} ms, ${window.cores.toFixed(2)} cores (${window.perCpuSecond.toFixed(1)} per CPU-second), ` +
              `load ${window.loadCores.toFixed(2)} cores (PostgreSQL ${window.postgresCores.toFixed(2)}), errors ${window.errors}${window.errors > 0 ? ` (${window.errorReasons.join('; ')})` : ''}`,
          );
        }
        measured.push(windows);
        // The delivery runs load their owner and reader lightly; they move round to round like the one instance.
        const [owner, reader] = poolOf(servers, 3, round) as [Target, Target];
        const roundDelays = await delivery(owner.url, reader.url, Math.ceil(deliverySamples / rounds), async () => {
          // The paced answer for the next run, then the short one again: the model repeats whichever came last.
          await model.push(paced, answer);
        });
        roundDelays.sort((a, b) => a - b);
        roundP99Ms.push(percentile(roundDelays, 0.99));
        delays.push(...roundDelays);
      }
      delays.sort((a, b) => a - b);
      const configs = roundOrder(0);
      const medians = configs.map((config) =>
        medianWindow(
          measured.map(
            (windows) =>
              windows.find(
                (window) =>
                  window.kind === config.kind &&
                  window.workload === config.workload &&
                  window.instances === config.instances,
              ) as Window,
          ),
        ),
      );
      return {
        isolation: isolation.description,
        isolated: isolation.kind !== 'none',
        quotaCores: quota,
        clientsPerInstance: clients,
        rounds: measured,
        medians,
        delivery: {
          samples: delays.length,
          p50Ms: percentile(delays, 0.5),
          p99Ms: percentile(delays, 0.99),
          roundP99Ms,
        },
        databaseGiven: databaseIsGiven(),
      };
    } finally {
      for (const child of children) child.kill('SIGKILL');
      await model.close();
      for (const home of homes) rmSync(home, { recursive: true, force: true });
    }
  });
}

function cpuOf(pid: number, group: CpuGroup | null): () => number {
  return group ? () => group.cpuMs() : () => processCpuMsSafe(pid);
}

/** /proc CPU of a process, 0 once it is gone. */
function processCpuMsSafe(pid: number): number {
  try {
    return processCpuMs(pid);
  } catch {
    return 0;
  }
}

/** One row of the report (run.ts's shape). */
export interface ScaleRow {
  name: string;
  unit: string;
  value: number;
  target: string;
  met?: boolean;
  detail?: string;
}

/** The window of `kind`/`workload`/`instances` in one round. */
function pick(windows: Window[], kind: Kind, workload: Workload, instances: number): Window {
  return windows.find(
    (window) => window.kind === kind && window.workload === workload && window.instances === instances,
  ) as Window;
}

/** The report rows of a scale result: ratios with their targets, efficiency, delivery. */
export function scaleRows(result: ScaleResult): ScaleRow[] {
  const rows: ScaleRow[] = [];
  const quota = `${result.quotaCores} core each, ${result.clientsPerInstance} clients per instance`;
  const ratioRow = (kind: Kind, workload: Workload, instances: 2 | 3, target: number) => {
    const ratios = result.rounds.map(
      (windows) => pick(windows, kind, workload, instances).perSecond / pick(windows, kind, workload, 1).perSecond,
    );
    const p99Ratios = result.rounds.map(
      (windows) => pick(windows, kind, workload, instances).p99Ms / pick(windows, kind, workload, 1).p99Ms,
    );
    const cpuRatios = result.rounds.map(
      (windows) =>
        pick(windows, kind, workload, instances).perCpuSecond / pick(windows, kind, workload, 1).perCpuSecond,
    );
    const ratio = median(ratios);
    const p99Ratio = median(p99Ratios);
    const one = result.medians.find((w) => w.kind === kind && w.workload === workload && w.instances === 1) as Window;
    const many = result.medians.find(
      (w) => w.kind === kind && w.workload === workload && w.instances === instances,
    ) as Window;
    const floor = kind === 'proxy';
    const what = workload === 'chat' ? 'chat turns' : 'runs read through the other instance';
    const p99Bound = instances === 2 ? 1.15 : Number.POSITIVE_INFINITY;
    rows.push({
      name: `scale: ${floor ? 'proxy floor, ' : ''}${what}, ${instances} instances / 1`,
      unit: '×',
      value: ratio,
      target: floor ? 'reported' : `≥ ${target}×${instances === 2 ? ', p99 ≤ 1.15× one instance' : ''}, 0 errors`,
      ...(floor ? {} : { met: ratio >= target && p99Ratio <= p99Bound && one.errors + many.errors === 0 }),
      detail:
        `rounds ${ratios.map((value) => value.toFixed(2)).join(' / ')}×; ${many.perSecond.toFixed(1)}/s vs ${one.perSecond.toFixed(1)}/s; ` +
        `p99 ${many.p99Ms.toFixed(0)} vs ${one.p99Ms.toFixed(0)} ms (${p99Ratio.toFixed(2)}×); ` +
        `per CPU-second ${many.perCpuSecond.toFixed(1)} vs ${one.perCpuSecond.toFixed(1)} (${median(cpuRatios).toFixed(2)}×); ` +
        `cores received ${many.cores.toFixed(2)} vs ${one.cores.toFixed(2)} (quota ${result.quotaCores} each), load side ${many.loadCores.toFixed(2)} cores (PostgreSQL ${many.postgresCores.toFixed(2)}) vs ${one.loadCores.toFixed(2)}; ` +
        `errors ${many.errors + one.errors}${many.errors + one.errors > 0 ? ` (${[...many.errorReasons, ...one.errorReasons].join('; ')})` : ''}; ${quota}`,
    });
  };
  ratioRow('server', 'chat', 2, 1.85);
  ratioRow('server', 'chat', 3, 2.6);
  ratioRow('server', 'runs', 2, 1.8);
  ratioRow('server', 'runs', 3, 2.6);
  ratioRow('proxy', 'chat', 2, 0);
  ratioRow('proxy', 'chat', 3, 0);
  for (const window of result.medians) {
    if (window.instances !== 1) continue;
    const what = window.workload === 'chat' ? 'chat turns' : 'runs';
    rows.push({
      name: `scale: ${window.kind === 'proxy' ? 'proxy floor' : 'apps/server'} ${what} per CPU-second, 1 instance`,
      unit: '/s',
      value: window.perCpuSecond,
      target: 'reported',
      detail: `${window.perSecond.toFixed(1)}/s on ${window.cores.toFixed(2)} cores received (quota ${result.quotaCores}), p50 ${window.p50Ms.toFixed(0)} / p99 ${window.p99Ms.toFixed(0)} ms; ${(1000 / window.perCpuSecond).toFixed(1)} ms CPU each`,
    });
  }
  rows.push({
    name: 'scale: cross-instance delivery p99',
    unit: 'ms',
    value: result.delivery.p99Ms,
    target: '≤ 20 ms, ≥ 1,000 samples',
    met: result.delivery.p99Ms <= 20 && result.delivery.samples >= 1_000,
    detail: `${result.delivery.samples} deltas (${DELIVERY_DELTAS} per run, ${DELIVERY_PACE_MS} ms apart, runs one at a time) pooled over ${result.rounds.length} rounds; p50 ${result.delivery.p50Ms.toFixed(1)} ms; rounds' p99 ${result.delivery.roundP99Ms.map((value) => value.toFixed(1)).join(' / ')} ms${result.databaseGiven ? '; PostgreSQL from HERMES_BENCH_DATABASE_URL (not in the load group)' : ''}`,
  });
  return rows;
}

/** `pnpm bench --scale [--quick]`: prints the rows and writes bench/results/scale.json. */
export async function main(quick: boolean, quotaCores?: number): Promise<ScaleRow[]> {
  const result = await runScale({
    ...(quotaCores === undefined ? {} : { quotaCores }),
    ...(quick ? { settleMs: 750, windowMs: 2_000, warmChatMs: 3_000, warmRunsMs: 3_000 } : {}),
  });
  const rows = scaleRows(result);
  const results = fileURLToPath(new URL('../results', import.meta.url));
  mkdirSync(results, { recursive: true });
  writeFileSync(join(results, 'scale.json'), `${JSON.stringify({ ...result, rows }, null, 2)}\n`);
  return rows;
}
