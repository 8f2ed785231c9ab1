/**
 * Scale (`pnpm bench --scale`, issue 17.5): the concurrency workload (streaming runs, 10 deltas 100 ms
 * apart) against one apps/server instance and against two instances on one PostgreSQL database behind a
 * reverse proxy (nginx when installed, else http-proxy in its own process; round robin, no affinity),
 * plus the delay of a run's events from the instance running it to a subscriber on the other instance
 * (ADR 0018).
 *
 * Throughput "at equal p99" is a capacity search: the number of concurrent runs grows by half each step
 * until the p99 gap between deltas exceeds the pace by more than {@link ADDED_GAP_BOUND_MS} (or a run
 * fails); a configuration's capacity is the highest deltas/s of a step within that bound. The ratio of
 * the two capacities is the figure.
 *
 * PostgreSQL: `HERMES_BENCH_DATABASE_URL` (a server whose user may create databases), else the
 * embedded server the core tests use.
 */
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { delay, step, text } from '@hermes/core/testing';
import { type Balancer, startBalancer } from './balancer.js';
import { startRemoteModel } from './remote-model.js';
import { BENCH_KEY as KEY, startBenchServer } from './server-process.js';
import { percentile } from './stats.js';

/** Pause between two deltas of one answer, as in the concurrency benchmark. */
const PACE_MS = 100;
/** Runs of the uncounted warm-up load of each configuration. */
const WARM_UP_RUNS = 40;
/** The p99 latency both configurations are held to: gap between deltas at most the pace plus this (issue 18's bound). */
const ADDED_GAP_BOUND_MS = 50;

/** Figures of one scale run. */
export interface ScaleResult {
  balancer: Balancer['kind'];
  single: Capacity;
  pair: Capacity;
  /** Event delivery from the owner to a subscriber on the other instance. */
  crossP50Ms: number;
  crossP99Ms: number;
}

/** Throughput and latency of one load. */
export interface LoadFigures {
  streams: number;
  errors: number;
  deltasPerSecond: number;
  p99GapMs: number;
}

/** The steps of one capacity search and the best throughput within the bound. */
export interface Capacity {
  steps: LoadFigures[];
  /** Highest deltas/s of a step with no error and p99 gap within the bound; 0 when none was. */
  deltasPerSecond: number;
  /** The concurrent runs of that step. */
  streams: number;
}

async function withDatabase<T>(body: (serverUrl: string) => Promise<T>): Promise<T> {
  const given = process.env.HERMES_BENCH_DATABASE_URL?.trim();
  if (given) return body(given);
  // The core tests' embedded PostgreSQL (binaries from npm), started once for this run.
  const here = dirname(new URL(import.meta.url).pathname);
  const { default: setup } = (await import(
    join(here, '..', '..', 'packages', 'core', 'test', 'support', 'postgres-global-setup.ts')
  )) as { default: (project: { provide(key: string, value: string): void }) => Promise<() => Promise<void>> };
  let url = '';
  const teardown = await setup({ provide: (_key, value) => (url = value) });
  try {
    return await body(url);
  } finally {
    await teardown();
  }
}

async function createDatabase(serverUrl: string): Promise<string> {
  // `pg` comes with @hermes/core; it is loaded from there rather than declared again here.
  const pgPath = createRequire(createRequire(import.meta.url).resolve('@hermes/core')).resolve('pg');
  const { default: pg } = (await import(pgPath)) as {
    default: {
      Client: new (options: {
        connectionString: string;
      }) => {
        connect(): Promise<void>;
        query(text: string): Promise<unknown>;
        end(): Promise<void>;
      };
    };
  };
  const name = `hermes_bench_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

async function startInstance(databaseUrl: string, modelUrl: string): Promise<{ child: ChildProcess; url: string }> {
  const home = mkdtempSync(join(tmpdir(), 'hermes-scale-'));
  writeFileSync(join(home, 'config.yaml'), 'session:\n  auto_title: false\n');
  const started = startBenchServer({
    home,
    modelUrl,
    env: { API_SERVER_MAX_CONCURRENT_RUNS: '0', HERMES_DATABASE_URL: databaseUrl },
  });
  const removeHome = () => rmSync(home, { recursive: true, force: true });
  return started.then(
    (instance) => {
      instance.child.once('exit', removeHome);
      return instance;
    },
    (error: unknown) => {
      removeHome();
      throw error;
    },
  );
}

async function waitHealthy(url: string): Promise<void> {
  for (let attempt = 0; attempt < 100; attempt += 1) {
    const ok = await fetch(`${url}/health`).then(
      (response) => response.ok,
      () => false,
    );
    if (ok) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${url} did not become healthy`);
}

/** `streams` concurrent runs through `url`: each is created, then its events streamed from the same URL. */
async function load(url: string, streams: number, deltas: number): Promise<LoadFigures> {
  const gaps: number[] = [];
  let errors = 0;
  let received = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: streams }, async (_unused, index) => {
      try {
        const created = await fetch(`${url}/v1/runs`, {
          method: 'POST',
          headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
          body: JSON.stringify({ input: `stream ${index}` }),
        });
        if (created.status !== 202) {
          errors += 1;
          return;
        }
        const { run_id: runId } = (await created.json()) as { run_id: string };
        const events = await fetch(`${url}/v1/runs/${runId}/events`, { headers: { authorization: `Bearer ${KEY}` } });
        let last = -1;
        let seen = 0;
        const decoder = new TextDecoder();
        for await (const chunk of events.body as AsyncIterable<Uint8Array>) {
          const count = decoder.decode(chunk, { stream: true }).match(/"event":"message\.delta"/g)?.length ?? 0;
          if (count === 0) continue;
          const now = performance.now();
          if (last >= 0) gaps.push(now - last);
          for (let extra = 1; extra < count; extra += 1) gaps.push(0);
          last = now;
          seen += count;
        }
        received += seen;
        if (seen !== deltas) errors += 1;
      } catch {
        errors += 1;
      }
    }),
  );
  gaps.sort((a, b) => a - b);
  return {
    streams,
    errors,
    deltasPerSecond: received / ((performance.now() - started) / 1000),
    p99GapMs: percentile(gaps, 0.99),
  };
}

/** Runs created on `owner`, streamed from `reader`: the delay of each event (emit time to arrival). */
async function crossDelivery(owner: string, reader: string, runs: number): Promise<number[]> {
  const delays: number[] = [];
  for (let run = 0; run < runs; run += 1) {
    const created = await fetch(`${owner}/v1/runs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ input: `cross ${run}` }),
    });
    const { run_id: runId } = (await created.json()) as { run_id: string };
    const subscribed = Date.now();
    const events = await fetch(`${reader}/v1/runs/${runId}/events`, { headers: { authorization: `Bearer ${KEY}` } });
    const decoder = new TextDecoder();
    let buffer = '';
    for await (const chunk of events.body as AsyncIterable<Uint8Array>) {
      const arrived = Date.now();
      buffer += decoder.decode(chunk, { stream: true });
      const frames = buffer.split('\n\n');
      buffer = frames.pop() ?? '';
      for (const frame of frames) {
        const line = frame.split('\n').find((entry) => entry.startsWith('data: '));
        if (!line) continue;
        const event = JSON.parse(line.slice(6)) as { event: string; timestamp: number };
        // Events emitted before the subscription was sent are replayed, not delivered live: skip them.
        if (event.event === 'message.delta' && event.timestamp * 1000 >= subscribed)
          delays.push(arrived - event.timestamp * 1000);
      }
    }
  }
  return delays.sort((a, b) => a - b);
}

/** Concurrent runs of each capacity step: from `first`, half again each step, up to `last`. */
export function capacitySteps(first: number, last: number): number[] {
  const steps: number[] = [];
  for (let streams = first; streams <= last; streams = Math.round(streams * 1.5)) steps.push(streams);
  return steps;
}

/** Grows the load step by step until a step breaks the p99 bound or has an error. */
async function capacity(
  url: string,
  steps: number[],
  deltas: number,
  push: (streams: number) => Promise<void>,
): Promise<Capacity> {
  const measured: LoadFigures[] = [];
  let best: LoadFigures | null = null;
  for (const streams of steps) {
    await push(streams);
    const figures = await load(url, streams, deltas);
    measured.push(figures);
    process.stderr.write(
      `bench: scale   ${streams} runs: ${Math.round(figures.deltasPerSecond)} deltas/s, p99 gap ${figures.p99GapMs.toFixed(0)} ms, errors ${figures.errors}\n`,
    );
    if (figures.errors > 0 || figures.p99GapMs - PACE_MS > ADDED_GAP_BOUND_MS) break;
    if (!best || figures.deltasPerSecond > best.deltasPerSecond) best = figures;
  }
  return { steps: measured, deltasPerSecond: best?.deltasPerSecond ?? 0, streams: best?.streams ?? 0 };
}

/** The scale benchmark: the capacity of one instance, then of two behind the balancer, then cross-instance delivery. */
export async function runScale(options: {
  steps: number[];
  deltas?: number;
  crossRuns?: number;
}): Promise<ScaleResult> {
  const deltas = options.deltas ?? 10;
  const answer = Array.from({ length: deltas }, (_, index) =>
    index === 0 ? [text('ab', 2)] : [delay(PACE_MS), text('ab', 2)],
  ).flat();
  return withDatabase(async (serverUrl) => {
    const model = await startRemoteModel();
    const children: ChildProcess[] = [];
    const closers: (() => Promise<void>)[] = [];
    let kind: Balancer['kind'] = 'http-proxy';
    try {
      const runOn = async (instances: number): Promise<{ figures: Capacity; urls: string[] }> => {
        const database = await createDatabase(serverUrl);
        const urls: string[] = [];
        for (let index = 0; index < instances; index += 1) {
          const started = await startInstance(database, model.baseURL);
          children.push(started.child);
          await waitHealthy(started.url);
          urls.push(started.url);
        }
        const balancer = await startBalancer(urls);
        kind = balancer.kind;
        closers.push(balancer.close);
        process.stderr.write(`bench: scale, ${instances} instance(s) behind ${balancer.kind}\n`);
        // A warm-up load first, not counted: a fresh instance's first runs pay for JIT and new database connections,
        // which at the smallest step decided the whole search.
        await model.push(...Array.from({ length: WARM_UP_RUNS }, () => step(...answer)));
        await load(balancer.url, WARM_UP_RUNS, deltas);
        const figures = await capacity(balancer.url, options.steps, deltas, (streams) =>
          model.push(...Array.from({ length: streams }, () => step(...answer))),
        );
        return { figures, urls };
      };
      const single = await runOn(1);
      const pair = await runOn(2);
      const crossRuns = options.crossRuns ?? 10;
      await model.push(...Array.from({ length: crossRuns }, () => step(...answer)));
      const [owner, reader] = pair.urls as [string, string];
      const cross = await crossDelivery(owner, reader, crossRuns);
      return {
        balancer: kind,
        single: single.figures,
        pair: pair.figures,
        crossP50Ms: percentile(cross, 0.5),
        crossP99Ms: percentile(cross, 0.99),
      };
    } finally {
      for (const close of closers) await close();
      for (const child of children) child.kill('SIGKILL');
      await model.close();
    }
  });
}

/** `pnpm bench --scale [--quick]`: prints the figures and writes bench/results/scale.json. */
export async function main(quick: boolean): Promise<void> {
  const steps = quick ? capacitySteps(20, 400) : capacitySteps(20, 2_000);
  process.stderr.write(`bench: scale, capacity search over ${steps.join(', ')} concurrent runs…\n`);
  const result = await runScale({ steps, crossRuns: quick ? 5 : 20 });
  const ratio = result.single.deltasPerSecond > 0 ? result.pair.deltasPerSecond / result.single.deltasPerSecond : 0;
  const bound = `p99 gap <= ${PACE_MS + ADDED_GAP_BOUND_MS} ms, 0 errors`;
  const lines = [
    `scale: 1 instance  capacity ${Math.round(result.single.deltasPerSecond)} deltas/s at ${result.single.streams} runs (${bound})`,
    `scale: 2 instances capacity ${Math.round(result.pair.deltasPerSecond)} deltas/s at ${result.pair.streams} runs, behind ${result.balancer}`,
    `scale: throughput ratio 2/1 at equal p99      ${ratio.toFixed(2)}x (target >= 1.7x) ${ratio >= 1.7 ? 'met' : 'MISSED'}`,
    `scale: cross-instance event delivery         p50 ${result.crossP50Ms.toFixed(1)} ms, p99 ${result.crossP99Ms.toFixed(1)} ms (target p99 <= 20 ms) ${result.crossP99Ms <= 20 ? 'met' : 'MISSED'}`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  const here = dirname(new URL(import.meta.url).pathname);
  writeFileSync(join(here, '..', 'results', 'scale.json'), `${JSON.stringify({ ...result, ratio }, null, 2)}\n`);
}
