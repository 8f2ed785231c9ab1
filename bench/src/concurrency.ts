import { type ChildProcess, fork } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { delay, step, text } from '@hermes/core/testing';
import { type CpuGroup, cpuMeter, setUpIsolation } from './cgroups.js';
import { ContentDeltaCounter } from './content-deltas.js';
import { startRemoteModel } from './remote-model.js';
import { BENCH_KEY as KEY, startBenchServer } from './server-process.js';
import { median, percentile } from './stats.js';

/** Pause between two deltas of one answer, as a model streaming about 10 chunks a second. */
export const DELTA_PACE_MS = 100;

/** The text of each delta. */
const DELTA_TEXT = 'ab';

/** What the streams go through: apps/server, or the pass-through proxy floor (proxy-process.ts). */
export type ConcurrencyTarget = 'server' | 'proxy';

/** Figures of one target at one number of streams: each the median of the rounds. */
export interface ConcurrencyResult {
  target: ConcurrencyTarget;
  streams: number;
  rounds: number;
  /** Errors over every round. */
  errors: number;
  /**
   * What the errors were (`status 503 gateway_draining`, `9 of 10 deltas`, a connection error's message), with their
   * counts.
   */
  errorKinds: Record<string, number>;
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
  /** CPU time (user + sys) of the server or proxy process (its group's, when isolated) over a round, per stream. */
  cpuMsPerStream: number;
  roundCpuMsPerStream: number[];
  roundFirstDeltaP99Ms: number[];
}

/** Forks the pass-through proxy in front of `modelUrl` and waits for its URL. */
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

/**
 * POSTs `body` with the bench key and reads the response as text with node:http: one connection per stream, as a
 * thousand separate clients would open, and a lean reader, so that the load generator sharing the machine takes
 * as little of it as it can. Resolves with the status once the answer is read to its end (its text is given to
 * `onText` only for a 2xx status) and, for an error answer, the `code` of its OpenAI error envelope, so that an error
 * is named by its cause (`status 500 internal_error`) rather than by its status alone.
 */
function postStream(
  url: string,
  body: string,
  onHead: () => void,
  onText: (text: string) => void,
): Promise<{ status: number; code: string | null }> {
  return new Promise<{ status: number; code: string | null }>((resolve, reject) => {
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
      let errorBody = '';
      response.on('data', (text: string) => {
        if (ok) onText(text);
        else errorBody += text;
      });
      let ended = false;
      response.once('error', reject);
      response.once('end', () => {
        ended = true;
        resolve({ status: response.statusCode ?? 0, code: ok ? null : errorCode(errorBody) });
      });
      response.once('close', () => {
        if (!ended) reject(new Error('the response closed before its end'));
      });
    });
    request.end(body);
  });
}

/** The `error.code` of an OpenAI error envelope, or null when the body is not one. */
function errorCode(body: string): string | null {
  try {
    const code = (JSON.parse(body) as { error?: { code?: unknown } }).error?.code;
    return typeof code === 'string' ? code : null;
  } catch {
    return null;
  }
}

/** What one round of concurrent streams saw. */
export interface RoundFigures {
  gaps: number[];
  firsts: number[];
  heads: number[];
  errors: number;
  errorKinds: Record<string, number>;
  received: number;
}

/** `streams` concurrent streaming completions against `url`, each expecting `deltas` deltas. */
async function round(url: string, streams: number, deltas: number): Promise<RoundFigures> {
  const gaps: number[] = [];
  const firsts: number[] = [];
  const heads: number[] = [];
  let errors = 0;
  const errorKinds: Record<string, number> = {};
  const failed = (kind: string) => {
    errors += 1;
    errorKinds[kind] = (errorKinds[kind] ?? 0) + 1;
  };
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
        const { status, code } = await postStream(
          `${url}/v1/chat/completions`,
          JSON.stringify({
            model: 'hermes-agent',
            stream: true,
            messages: [{ role: 'user', content: `stream ${index}` }],
          }),
          () => heads.push(performance.now() - sent),
          onText,
        );
        if (status < 200 || status >= 300) {
          failed(code ? `status ${status} ${code}` : `status ${status}`);
          return;
        }
        received += seen;
        if (seen !== deltas) failed(`${seen} of ${deltas} deltas`);
      } catch (error) {
        failed(error instanceof Error ? error.message : String(error));
      }
    }),
  );
  return { gaps, firsts, heads, errors, errorKinds, received };
}

/** Each figure of a target over the rounds: medians, errors summed. */
function summarise(target: ConcurrencyTarget, streams: number, rounds: RoundSummary[]): ConcurrencyResult {
  const of = (field: Exclude<keyof RoundSummary, 'errorKinds'>) => median(rounds.map((round) => round[field]));
  return {
    target,
    streams,
    rounds: rounds.length,
    errors: rounds.reduce((sum, round) => sum + round.errors, 0),
    errorKinds: mergeKinds(rounds.map((round) => round.errorKinds)),
    deltasPerSecond: of('deltasPerSecond'),
    p50Ms: of('p50Ms'),
    p99Ms: of('p99Ms'),
    headP50Ms: of('headP50Ms'),
    headP99Ms: of('headP99Ms'),
    firstDeltaP50Ms: of('firstDeltaP50Ms'),
    firstDeltaP99Ms: of('firstDeltaP99Ms'),
    cpuMsPerStream: of('cpuMsPerStream'),
    roundCpuMsPerStream: rounds.map((round) => round.cpuMsPerStream),
    roundFirstDeltaP99Ms: rounds.map((round) => round.firstDeltaP99Ms),
  };
}

/** Error counts of several rounds added up by kind. */
function mergeKinds(kinds: Record<string, number>[]): Record<string, number> {
  const merged: Record<string, number> = {};
  for (const round of kinds)
    for (const [kind, count] of Object.entries(round)) merged[kind] = (merged[kind] ?? 0) + count;
  return merged;
}

/** What the errors of a result were, for its detail: ` (2× status 503, 1× 9 of 10 deltas)`, or nothing. */
export function errorKindsText(kinds: Record<string, number>): string {
  const entries = Object.entries(kinds);
  return entries.length === 0 ? '' : ` (${entries.map(([kind, count]) => `${count}× ${kind}`).join(', ')})`;
}

/** The figures of one measured round on one target. */
interface RoundSummary {
  errors: number;
  errorKinds: Record<string, number>;
  deltasPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  headP50Ms: number;
  headP99Ms: number;
  firstDeltaP50Ms: number;
  firstDeltaP99Ms: number;
  cpuMsPerStream: number;
}

/**
 * The pass-through proxy floor and apps/server, each a process of its own (in a CPU group of its own when the harness
 * is isolated, cgroups.ts, with no quota) against one model that sends `deltas` deltas `DELTA_PACE_MS` apart: an ideal
 * server shows every gap at the pace, and what it adds on top is its latency. Each first takes an uncounted round of
 * `warmup` streams (a running server's figures, not those of a process compiling its code as the burst arrives, ADR
 * 0030); then, for each count in `streamCounts`, `rounds` rounds of that many concurrent completions on each target,
 * the order rotated each round. Each figure is the median of the rounds. `profileDir` starts apps/server with
 * `--cpu-prof`.
 */
export async function runConcurrency(
  streamCounts: number[],
  options: { deltas?: number; warmup?: number; rounds?: number; profileDir?: string } = {},
): Promise<{
  results: ConcurrencyResult[];
  warmups: Record<ConcurrencyTarget, RoundFigures & { p99Ms: number; firstDeltaP99Ms: number }>;
}> {
  const deltas = options.deltas ?? 10;
  const warmup = options.warmup ?? 100;
  const roundCount = Math.max(3, options.rounds ?? 3);
  const isolation = setUpIsolation();
  const model = await startRemoteModel({ repeat: true });
  await model.push(
    step(
      ...Array.from({ length: deltas }, (_, index) =>
        index === 0 ? [text(DELTA_TEXT, 2)] : [delay(DELTA_PACE_MS), text(DELTA_TEXT, 2)],
      ).flat(),
    ),
  );
  const home = mkdtempSync(join(tmpdir(), 'hermes-concurrency-'));
  writeFileSync(join(home, 'config.yaml'), 'session:\n  auto_title: false\n');
  const targets: { target: ConcurrencyTarget; child: ChildProcess; url: string; cpu(): number }[] = [];
  try {
    for (const target of ['proxy', 'server'] as const) {
      const group = isolation.serverGroup(`concurrency ${target}`, null);
      const started =
        target === 'proxy'
          ? await startProxy(model.baseURL, group)
          : await startBenchServer({
              home,
              modelUrl: model.baseURL,
              env: { API_SERVER_MAX_CONCURRENT_RUNS: '0' },
              group,
              ...(options.profileDir ? { profileDir: options.profileDir } : {}),
            });
      targets.push({ target, ...started, cpu: cpuMeter(started.child.pid as number, group) });
    }
    const warmups = {} as Record<ConcurrencyTarget, RoundFigures & { p99Ms: number; firstDeltaP99Ms: number }>;
    for (const entry of targets) {
      const cold = await round(entry.url, warmup, deltas);
      cold.gaps.sort((a, b) => a - b);
      cold.firsts.sort((a, b) => a - b);
      warmups[entry.target] = {
        ...cold,
        p99Ms: percentile(cold.gaps, 0.99),
        firstDeltaP99Ms: percentile(cold.firsts, 0.99),
      };
    }
    const results: ConcurrencyResult[] = [];
    for (const streams of streamCounts) {
      const summaries = new Map<ConcurrencyTarget, RoundSummary[]>(targets.map((entry) => [entry.target, []]));
      for (let index = 0; index < roundCount; index += 1) {
        const order = index % 2 === 0 ? targets : [...targets].reverse();
        for (const entry of order) {
          const cpuBefore = entry.cpu();
          const started = performance.now();
          const { gaps, firsts, heads, errors, errorKinds, received } = await round(entry.url, streams, deltas);
          const seconds = (performance.now() - started) / 1000;
          const cpu = entry.cpu() - cpuBefore;
          for (const values of [gaps, firsts, heads]) values.sort((a, b) => a - b);
          summaries.get(entry.target)?.push({
            errors,
            errorKinds,
            deltasPerSecond: received / seconds,
            p50Ms: percentile(gaps, 0.5),
            p99Ms: percentile(gaps, 0.99),
            headP50Ms: percentile(heads, 0.5),
            headP99Ms: percentile(heads, 0.99),
            firstDeltaP50Ms: percentile(firsts, 0.5),
            firstDeltaP99Ms: percentile(firsts, 0.99),
            cpuMsPerStream: cpu / streams,
          });
        }
      }
      for (const entry of targets)
        results.push(summarise(entry.target, streams, summaries.get(entry.target) as RoundSummary[]));
    }
    return { results, warmups };
  } finally {
    for (const entry of targets) {
      // SIGTERM drains (nothing is running by now) and exits, which lets --cpu-prof write its profile.
      const exited = new Promise((resolve) => entry.child.once('exit', resolve));
      if (entry.target === 'proxy') entry.child.disconnect();
      else entry.child.kill(options.profileDir ? 'SIGTERM' : 'SIGKILL');
      const timer = setTimeout(() => entry.child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
    await model.close();
    rmSync(home, { recursive: true, force: true });
  }
}
