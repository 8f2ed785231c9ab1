import { type ChildProcess, fork } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { delay, step, text } from '@hermes/core/testing';
import { ContentDeltaCounter } from './content-deltas.js';
import { startRemoteModel } from './remote-model.js';
import { BENCH_KEY as KEY, startBenchServer } from './server-process.js';
import { percentile } from './stats.js';

/** Pause between two deltas of one answer, as a model streaming about 10 chunks a second. */
export const DELTA_PACE_MS = 100;

/** The text of each delta. */
const DELTA_TEXT = 'ab';

/** Length of a clock tick in /proc/<pid>/stat (USER_HZ is 100 on Linux). */
const CLOCK_TICK_MS = 10;

/** What the streams go through: apps/server, or the pass-through proxy floor (proxy-process.ts). */
export type ConcurrencyTarget = 'server' | 'proxy';

/** Figures of one concurrency run. */
export interface ConcurrencyResult {
  target: ConcurrencyTarget;
  streams: number;
  /** Streams of the uncounted round run before the measured one, on the fresh process; `errors` counts both rounds. */
  warmup: number;
  /** That round's p99 gap and first-delta p99: the same load on a process that has served nothing yet. */
  warmupP99Ms?: number;
  warmupFirstDeltaP99Ms?: number;
  errors: number;
  deltasPerSecond: number;
  /** Gaps between consecutive deltas of one stream as the client sees them (0 within one chunk). */
  p50Ms: number;
  p99Ms: number;
  /** Time from sending the request to the response head (for apps/server: admitted, session and turn started). */
  headP50Ms: number;
  headP99Ms: number;
  /** Time from sending the request to the first delta. */
  firstDeltaP50Ms: number;
  firstDeltaP99Ms: number;
  /** CPU time (user + sys) of the server or proxy process over the run, per stream. */
  cpuMsPerStream: number;
}

/** utime + stime of a process, in ms. */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * CLOCK_TICK_MS;
}

/** Forks the pass-through proxy in front of `modelUrl` and waits for its URL. */
async function startProxy(modelUrl: string): Promise<{ child: ChildProcess; url: string }> {
  const child = fork(fileURLToPath(new URL('./proxy-process.ts', import.meta.url)), [modelUrl], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.once('message', (message: { url?: string }) => message.url && resolve(message.url));
    child.once('exit', (code) => reject(new Error(`the proxy exited with ${code}`)));
  });
  return { child, url };
}

/**
 * POSTs `body` with the bench key and reads the response as text with node:http: one connection per stream, as a
 * thousand separate clients would open, and a lean reader, so that the load generator sharing the machine takes
 * as little of it as it can. Resolves true for a 2xx answer read to its end, false for any other status.
 */
function postStream(url: string, body: string, onHead: () => void, onText: (text: string) => void): Promise<boolean> {
  return new Promise<boolean>((resolve, reject) => {
    const request = httpRequest(url, {
      method: 'POST',
      agent: false,
      headers: {
        authorization: `Bearer ${KEY}`,
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
      },
    });
    request.once('error', reject);
    request.once('response', (response: IncomingMessage) => {
      onHead();
      const ok = (response.statusCode ?? 0) >= 200 && (response.statusCode ?? 0) < 300;
      response.setEncoding('utf8');
      response.on('data', (text: string) => {
        if (ok) onText(text);
      });
      let ended = false;
      response.once('error', reject);
      response.once('end', () => {
        ended = true;
        resolve(ok);
      });
      response.once('close', () => {
        if (!ended) reject(new Error('the response closed before its end'));
      });
    });
    request.end(body);
  });
}

/** What one round of concurrent streams saw. */
interface RoundFigures {
  gaps: number[];
  firsts: number[];
  heads: number[];
  errors: number;
  received: number;
}

/** `streams` concurrent streaming completions against `url`, each expecting `deltas` deltas. */
async function round(url: string, streams: number, deltas: number): Promise<RoundFigures> {
  const gaps: number[] = [];
  const firsts: number[] = [];
  const heads: number[] = [];
  let errors = 0;
  let received = 0;
  await Promise.all(
    Array.from({ length: streams }, async (_unused, index) => {
      try {
        const sent = performance.now();
        let last = -1;
        let seen = 0;
        const counter = new ContentDeltaCounter(DELTA_TEXT.length);
        const onText = (piece: string) => {
          // Deltas with text; the role chunk's empty content does not count. Coalesced deltas count 0 ms apart.
          const count = counter.push(piece);
          if (count === 0) return;
          const now = performance.now();
          if (last < 0) firsts.push(now - sent);
          else gaps.push(now - last);
          for (let extra = 1; extra < count; extra += 1) gaps.push(0);
          last = now;
          seen += count;
        };
        const ok = await postStream(
          `${url}/v1/chat/completions`,
          JSON.stringify({
            model: 'hermes-agent',
            stream: true,
            messages: [{ role: 'user', content: `stream ${index}` }],
          }),
          () => heads.push(performance.now() - sent),
          onText,
        );
        if (!ok) {
          errors += 1;
          return;
        }
        received += seen;
        if (seen !== deltas) errors += 1;
      } catch {
        errors += 1;
      }
    }),
  );
  return { gaps, firsts, heads, errors, received };
}

/**
 * One run of `streams` concurrent completions of `deltas` deltas each, sent by the model
 * `DELTA_PACE_MS` apart: an ideal server shows every gap at the pace, and what it adds on top is
 * its latency. `target: 'proxy'` sends the same load through the pass-through proxy, the floor
 * that node:http + fetch on this machine allows; `profileDir` starts apps/server with `--cpu-prof`.
 */
export async function runConcurrency(
  streams: number,
  options: { deltas?: number; warmup?: number; profileDir?: string; target?: ConcurrencyTarget } = {},
): Promise<ConcurrencyResult> {
  const deltas = options.deltas ?? 10;
  const warmup = options.warmup ?? 0;
  const target = options.target ?? 'server';
  const model = await startRemoteModel();
  const answer = Array.from({ length: deltas }, (_, index) =>
    index === 0 ? [text(DELTA_TEXT, 2)] : [delay(DELTA_PACE_MS), text(DELTA_TEXT, 2)],
  ).flat();
  await model.push(...Array.from({ length: warmup + streams }, () => step(...answer)));
  const home = mkdtempSync(join(tmpdir(), 'hermes-concurrency-'));
  writeFileSync(join(home, 'config.yaml'), 'session:\n  auto_title: false\n');
  const started =
    target === 'proxy'
      ? startProxy(model.baseURL)
      : startBenchServer({
          home,
          modelUrl: model.baseURL,
          env: { API_SERVER_MAX_CONCURRENT_RUNS: '0' },
          ...(options.profileDir ? { profileDir: options.profileDir } : {}),
        });
  const { child, url } = await started.catch(async (error: unknown) => {
    await model.close();
    rmSync(home, { recursive: true, force: true });
    throw error;
  });
  try {
    // One uncounted round first, as the turn-cost section runs uncounted turns: the figures are a running server's
    // (and model's), not those of a process compiling its code while the burst arrives.
    const cold = warmup > 0 ? await round(url, warmup, deltas) : null;
    const cpuBefore = cpuMs(child.pid ?? 0);
    const started = performance.now();
    const { gaps, firsts, heads, errors, received } = await round(url, streams, deltas);
    const seconds = (performance.now() - started) / 1000;
    const cpu = cpuMs(child.pid ?? 0) - cpuBefore;
    for (const values of [gaps, firsts, heads, ...(cold ? [cold.gaps, cold.firsts] : [])]) values.sort((a, b) => a - b);
    return {
      target,
      streams,
      warmup,
      ...(cold
        ? { warmupP99Ms: percentile(cold.gaps, 0.99), warmupFirstDeltaP99Ms: percentile(cold.firsts, 0.99) }
        : {}),
      // An error in the uncounted round is still an error.
      errors: errors + (cold?.errors ?? 0),
      deltasPerSecond: received / seconds,
      p50Ms: percentile(gaps, 0.5),
      p99Ms: percentile(gaps, 0.99),
      headP50Ms: percentile(heads, 0.5),
      headP99Ms: percentile(heads, 0.99),
      firstDeltaP50Ms: percentile(firsts, 0.5),
      firstDeltaP99Ms: percentile(firsts, 0.99),
      cpuMsPerStream: cpu / streams,
    };
  } finally {
    // SIGTERM drains (nothing is running by now) and exits, which lets --cpu-prof write its profile.
    const exited = new Promise((resolve) => child.once('exit', resolve));
    if (target === 'proxy') child.disconnect();
    else child.kill(options.profileDir ? 'SIGTERM' : 'SIGKILL');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
    await model.close();
    rmSync(home, { recursive: true, force: true });
  }
}
