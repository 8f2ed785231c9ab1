/**
 * Per-turn cost at concurrency 1 (issue 18): short streamed chat completions (10 deltas, sent by
 * the model at once) one after another through apps/server, and the same turns through the
 * pass-through proxy floor (proxy-process.ts), in the same run against the same model process.
 * For each: CPU time of the server process per turn (from /proc/<pid>/stat over all measured turns),
 * client-seen time to first delta, and the tail from the last delta to the end of the response.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { step, text } from '@hermes/core/testing';
import { ContentDeltaCounter } from './content-deltas.js';
import { startRemoteModel } from './remote-model.js';
import { BENCH_KEY as KEY, startBenchServer } from './server-process.js';
import { percentile } from './stats.js';

const CLOCK_TICK_MS = 10; // USER_HZ is 100 on Linux.
/** One short answer: 10 deltas of 2 characters. */
const ANSWER = 'abcdefghijklmnopqrst';
const DELTAS = 10;

/** Figures of one target (apps/server or the proxy floor). */
export interface TurnCpuMeasurement {
  name: string;
  turns: number;
  /** Server-process CPU time (user + sys) per turn. */
  cpuMsPerTurn: number;
  firstDeltaP50Ms: number;
  firstDeltaP99Ms: number;
  /** From the last delta to the end of the response body. */
  tailP50Ms: number;
  tailP99Ms: number;
  errors: number;
}

/** utime + stime of a process, in ms. */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * CLOCK_TICK_MS;
}

/** Ends a child and waits for it (SIGTERM so `--cpu-prof` can write, SIGKILL after 10 s). */
async function stop(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

/** Runs `turns` sequential streamed completions against `url` and measures `pid` meanwhile. */
async function measure(name: string, url: string, pid: number, turns: number, warmup: number) {
  const firsts: number[] = [];
  const tails: number[] = [];
  let errors = 0;
  let cpuBefore = 0;
  for (let turn = 0; turn < warmup + turns; turn += 1) {
    if (turn === warmup) cpuBefore = cpuMs(pid);
    try {
      const sent = performance.now();
      const response = await fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'hermes-agent',
          stream: true,
          messages: [{ role: 'user', content: `turn ${turn}` }],
        }),
      });
      if (!response.ok || !response.body) {
        errors += 1;
        await response.body?.cancel();
        continue;
      }
      const decoder = new TextDecoder();
      const counter = new ContentDeltaCounter(ANSWER.length / DELTAS);
      let first = -1;
      let last = -1;
      let seen = 0;
      for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
        const count = counter.push(decoder.decode(chunk, { stream: true }));
        if (count === 0) continue;
        last = performance.now();
        if (first < 0) first = last;
        seen += count;
      }
      const ended = performance.now();
      if (seen !== DELTAS) errors += 1;
      else if (turn >= warmup) {
        firsts.push(first - sent);
        tails.push(ended - last);
      }
    } catch {
      errors += 1;
    }
  }
  const cpu = cpuMs(pid) - cpuBefore;
  firsts.sort((a, b) => a - b);
  tails.sort((a, b) => a - b);
  return {
    name,
    turns,
    cpuMsPerTurn: cpu / turns,
    firstDeltaP50Ms: percentile(firsts, 0.5),
    firstDeltaP99Ms: percentile(firsts, 0.99),
    tailP50Ms: percentile(tails, 0.5),
    tailP99Ms: percentile(tails, 0.99),
    errors,
  } satisfies TurnCpuMeasurement;
}

/**
 * The pass-through proxy floor, then apps/server, each over `turns` measured turns after a
 * warm-up; `profileDir` starts apps/server with `--cpu-prof`.
 */
export async function runTurnCpu(options: { turns?: number; profileDir?: string } = {}): Promise<TurnCpuMeasurement[]> {
  const turns = options.turns ?? 200;
  // Uncounted turns first, half as many as the measured ones: the figure is the steady state, and a server's hot path
  // is still being compiled and optimized over its first hundred or so requests (with 20, the full run read 6.3 ms a
  // turn where 600 turns read 5.0).
  const warmup = Math.max(20, Math.round(turns / 2));
  const model = await startRemoteModel();
  const answer = () => step(text(ANSWER, ANSWER.length / DELTAS));
  await model.push(...Array.from({ length: 2 * (warmup + turns) }, answer));
  const home = mkdtempSync(join(tmpdir(), 'hermes-turn-cpu-'));
  writeFileSync(join(home, 'config.yaml'), 'session:\n  auto_title: false\n');
  const children: ChildProcess[] = [];
  try {
    const proxy = fork(fileURLToPath(new URL('./proxy-process.ts', import.meta.url)), [model.baseURL], {
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
    children.push(proxy);
    const proxyUrl = await new Promise<string>((resolve, reject) => {
      proxy.once('message', (message: { url?: string }) => message.url && resolve(message.url));
      proxy.once('exit', (code) => reject(new Error(`the proxy exited with ${code}`)));
    });
    const floor = await measure('per-turn CPU: pass-through proxy (floor)', proxyUrl, proxy.pid ?? 0, turns, warmup);
    await stop(proxy, 'SIGKILL');

    const { child: server, url: serverUrl } = await startBenchServer({
      home,
      modelUrl: model.baseURL,
      ...(options.profileDir ? { profileDir: options.profileDir } : {}),
    });
    children.push(server);
    const target = await measure('per-turn CPU: apps/server, concurrency 1', serverUrl, server.pid ?? 0, turns, warmup);
    await stop(server, options.profileDir ? 'SIGTERM' : 'SIGKILL');
    return [floor, target];
  } finally {
    for (const child of children) await stop(child, 'SIGKILL');
    await model.close();
    rmSync(home, { recursive: true, force: true });
  }
}
