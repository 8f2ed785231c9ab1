/**
 * Scale (`pnpm bench --scale`, issue 17.5): the concurrency workload (N streaming runs) against one
 * apps/server instance and against two instances on one PostgreSQL database behind a reverse proxy
 * (http-proxy, round robin, no affinity), plus the delay of a run's events from the instance running
 * it to a subscriber on the other instance (ADR 0018).
 *
 * PostgreSQL: `HERMES_BENCH_DATABASE_URL` (a server whose user may create databases), else the
 * embedded server the core tests use.
 */
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { delay, step, text } from '@hermes/core/testing';
import httpProxy from 'http-proxy';
import { startRemoteModel } from './remote-model.js';
import { BENCH_KEY as KEY, startBenchServer } from './server-process.js';
import { percentile } from './stats.js';

/** Pause between two deltas of one answer, as in the concurrency benchmark. */
const PACE_MS = 100;

/** Figures of one scale run. */
export interface ScaleResult {
  streams: number;
  single: LoadFigures;
  pair: LoadFigures;
  /** Event delivery from the owner to a subscriber on the other instance. */
  crossP50Ms: number;
  crossP99Ms: number;
}

/** Throughput and latency of one load. */
export interface LoadFigures {
  errors: number;
  deltasPerSecond: number;
  p99GapMs: number;
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

/** A round-robin reverse proxy (http-proxy) over `targets`; SSE is streamed through unbuffered. */
async function startProxy(targets: string[]): Promise<{ url: string; close: () => Promise<void> }> {
  const proxy = httpProxy.createProxyServer({ xfwd: true });
  proxy.on('error', (_error, _request, response) => {
    const answer = response as import('node:http').ServerResponse;
    if (!answer.headersSent) answer.writeHead(502);
    answer.end();
  });
  let next = 0;
  const server: Server = createServer((request, response) => {
    const target = targets[next % targets.length] as string;
    next += 1;
    proxy.web(request, response, { target });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
        proxy.close();
      }),
  };
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

/** The scale benchmark: `streams` concurrent runs on one instance, then on two behind the proxy. */
export async function runScale(options: {
  streams: number;
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
    try {
      const runOn = async (instances: number): Promise<{ figures: LoadFigures; urls: string[] }> => {
        const database = await createDatabase(serverUrl);
        const urls: string[] = [];
        for (let index = 0; index < instances; index += 1) {
          const started = await startInstance(database, model.baseURL);
          children.push(started.child);
          await waitHealthy(started.url);
          urls.push(started.url);
        }
        const proxy = await startProxy(urls);
        closers.push(proxy.close);
        await model.push(...Array.from({ length: options.streams }, () => step(...answer)));
        return { figures: await load(proxy.url, options.streams, deltas), urls };
      };
      const single = await runOn(1);
      const pair = await runOn(2);
      const crossRuns = options.crossRuns ?? 10;
      await model.push(...Array.from({ length: crossRuns }, () => step(...answer)));
      const [owner, reader] = pair.urls as [string, string];
      const cross = await crossDelivery(owner, reader, crossRuns);
      return {
        streams: options.streams,
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
  const streams = quick ? 50 : 200;
  process.stderr.write(`bench: scale, ${streams} concurrent runs on 1 then 2 instances behind http-proxy…\n`);
  const result = await runScale({ streams, crossRuns: quick ? 5 : 20 });
  const ratio = result.pair.deltasPerSecond / result.single.deltasPerSecond;
  const lines = [
    `scale: ${streams} streaming runs, 1 instance   ${Math.round(result.single.deltasPerSecond)} deltas/s, p99 gap ${result.single.p99GapMs.toFixed(0)} ms, errors ${result.single.errors}`,
    `scale: ${streams} streaming runs, 2 instances  ${Math.round(result.pair.deltasPerSecond)} deltas/s, p99 gap ${result.pair.p99GapMs.toFixed(0)} ms, errors ${result.pair.errors}`,
    `scale: throughput ratio 2/1 at this load       ${ratio.toFixed(2)}x (target >= 1.7x at equal p99; the model paces deltas ${PACE_MS} ms apart)`,
    `scale: cross-instance event delivery          p50 ${result.crossP50Ms.toFixed(1)} ms, p99 ${result.crossP99Ms.toFixed(1)} ms (target p99 <= 20 ms)`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  const here = dirname(new URL(import.meta.url).pathname);
  writeFileSync(join(here, '..', 'results', 'scale.json'), `${JSON.stringify({ ...result, ratio }, null, 2)}\n`);
}
