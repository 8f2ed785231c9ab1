/**
 * Per-turn cost at concurrency 1 (issues 18 and 34.3): short streamed chat completions (10 deltas, sent by the model
 * at once) one after another, through the pass-through proxy floor (proxy-process.ts) and through apps/server in
 * three set-ups: header-less (each turn persisted in the session derived from its body), with an
 * `X-Hermes-Session-Id` header (a new session named by it each turn) and auto-titles off, and with the header and the
 * default config (auto-title on: each new session also gets its title from the model). Each target is its own
 * process, in a CPU group of its own when the harness is isolated (cgroups.ts), all against one model process.
 *
 * After uncounted turns on each, the targets take turns in interleaved rounds (order rotated each round); each
 * figure is the median of the rounds, a ratio the median of the rounds' own ratios to the proxy. The CPU is the
 * process's group's (nanoseconds) when isolated, else /proc/<pid>/stat's; the client-seen time to the first delta and
 * the tail from the last delta to the end of the response are pooled over the rounds.
 */
import type { ChildProcess } from 'node:child_process';
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { step, text } from '@hermes/core/testing';
import { type CpuGroup, cpuMeter, setUpIsolation } from './cgroups.js';
import { ContentDeltaCounter } from './content-deltas.js';
import { send } from './http-load.js';
import { startRemoteModel } from './remote-model.js';
import { startBenchServer, stopChild } from './server-process.js';
import { median, percentile } from './stats.js';

/** One short answer: 10 deltas of 2 characters. */
const ANSWER = 'abcdefghijklmnopqrst';
const DELTAS = 10;

/** The targets, in the order of the first round. */
export const TURN_TARGETS = ['proxy', 'header-less', 'session header', 'default config'] as const;
export type TurnTarget = (typeof TURN_TARGETS)[number];

/** Figures of one target (medians of the rounds). */
export interface TurnCpuMeasurement {
  target: TurnTarget;
  name: string;
  /** Turns measured in each round. */
  turns: number;
  /** Process CPU time (user + sys) per turn: the median of the rounds. */
  cpuMsPerTurn: number;
  /** Each round's CPU per turn, in round order. */
  roundCpuMsPerTurn: number[];
  /** Each round's CPU per turn over the proxy's in the same round. */
  roundRatios: number[];
  firstDeltaP50Ms: number;
  firstDeltaP99Ms: number;
  /** From the last delta to the end of the response body. */
  tailP50Ms: number;
  tailP99Ms: number;
  errors: number;
}

const NAMES: Record<TurnTarget, string> = {
  proxy: 'per-turn CPU: pass-through proxy (floor)',
  'header-less': 'per-turn CPU: apps/server, header-less',
  'session header': 'per-turn CPU: apps/server, session header',
  'default config': 'per-turn CPU: apps/server, header + default config',
};

interface Running {
  target: TurnTarget;
  url: string;
  child: ChildProcess;
  cpu(): number;
  agent: Agent;
  firsts: number[];
  tails: number[];
  errors: number;
  next: number;
}

/** `count` sequential streamed turns against `running`; first-delta and tail samples kept when `keep`. */
async function turns(running: Running, count: number, keep: boolean): Promise<void> {
  for (let turn = 0; turn < count; turn += 1) {
    running.next += 1;
    const number = running.next;
    try {
      const counter = new ContentDeltaCounter(ANSWER.length / DELTAS);
      const sent = performance.now();
      let first = -1;
      let last = -1;
      let seen = 0;
      const headers: Record<string, string> =
        running.target === 'session header' || running.target === 'default config'
          ? { 'x-hermes-session-id': `bench-${running.target.replace(' ', '-')}-${number}` }
          : {};
      const { status } = await send(`${running.url}/v1/chat/completions`, {
        agent: running.agent,
        headers,
        body: JSON.stringify({
          model: 'hermes-agent',
          stream: true,
          messages: [{ role: 'user', content: `turn ${number}` }],
        }),
        onText: (piece) => {
          const found = counter.push(piece);
          if (found === 0) return;
          last = performance.now();
          if (first < 0) first = last;
          seen += found;
        },
      });
      const ended = performance.now();
      if (status !== 200 || seen !== DELTAS) running.errors += 1;
      else if (keep) {
        running.firsts.push(first - sent);
        running.tails.push(ended - last);
      }
    } catch {
      running.errors += 1;
    }
  }
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
 * The proxy floor and the three apps/server set-ups, `rounds` interleaved rounds of `turns` turns each after as many
 * uncounted turns on each; `profileDir` starts the apps/server processes with `--cpu-prof`.
 */
export async function runTurnCpu(
  options: { turns?: number; rounds?: number; profileDir?: string } = {},
): Promise<TurnCpuMeasurement[]> {
  const count = options.turns ?? 100;
  const rounds = Math.max(3, options.rounds ?? 3);
  const isolation = setUpIsolation();
  const model = await startRemoteModel({ repeat: true });
  await model.push(step(text(ANSWER, ANSWER.length / DELTAS)));
  const homes: string[] = [];
  const running: Running[] = [];
  try {
    for (const target of TURN_TARGETS) {
      // No quota: at concurrency 1 a quota would only add throttling pauses to the latencies.
      const group = isolation.serverGroup(`turn ${target}`, null);
      let started: { child: ChildProcess; url: string };
      if (target === 'proxy') started = await startProxy(model.baseURL, group);
      else {
        const home = mkdtempSync(join(tmpdir(), 'hermes-turn-cpu-'));
        homes.push(home);
        if (target !== 'default config') writeFileSync(join(home, 'config.yaml'), 'session:\n  auto_title: false\n');
        started = await startBenchServer({
          home,
          modelUrl: model.baseURL,
          group,
          ...(options.profileDir ? { profileDir: options.profileDir } : {}),
        });
      }
      running.push({
        target,
        url: started.url,
        child: started.child,
        cpu: cpuMeter(started.child.pid as number, group),
        agent: new Agent({ keepAlive: true, maxSockets: 1 }),
        firsts: [],
        tails: [],
        errors: 0,
        next: 0,
      });
    }
    // Uncounted turns first: the figure is the steady state, and a server's hot path is still being compiled and
    // optimized over its first hundred or so requests.
    for (const entry of running) await turns(entry, Math.max(30, count), false);
    const perRound: Map<TurnTarget, number>[] = [];
    for (let round = 0; round < rounds; round += 1) {
      const cpu = new Map<TurnTarget, number>();
      const shift = round % running.length;
      for (const entry of [...running.slice(shift), ...running.slice(0, shift)]) {
        const before = entry.cpu();
        await turns(entry, count, true);
        // An auto-title follows its turn (spec core §19): let the last one land before reading.
        await new Promise((resolve) => setTimeout(resolve, 300));
        cpu.set(entry.target, (entry.cpu() - before) / count);
      }
      perRound.push(cpu);
    }
    return running.map((entry) => {
      const roundCpu = perRound.map((cpu) => cpu.get(entry.target) as number);
      const ratios = perRound.map((cpu) => (cpu.get(entry.target) as number) / (cpu.get('proxy') as number));
      entry.firsts.sort((a, b) => a - b);
      entry.tails.sort((a, b) => a - b);
      return {
        target: entry.target,
        name: NAMES[entry.target],
        turns: count,
        cpuMsPerTurn: median(roundCpu),
        roundCpuMsPerTurn: roundCpu,
        roundRatios: ratios,
        firstDeltaP50Ms: percentile(entry.firsts, 0.5),
        firstDeltaP99Ms: percentile(entry.firsts, 0.99),
        tailP50Ms: percentile(entry.tails, 0.5),
        tailP99Ms: percentile(entry.tails, 0.99),
        errors: entry.errors,
      };
    });
  } finally {
    for (const entry of running) {
      entry.agent.destroy();
      await stopChild(entry.child, options.profileDir && entry.target !== 'proxy' ? 'SIGTERM' : 'SIGKILL');
    }
    await model.close();
    for (const home of homes) rmSync(home, { recursive: true, force: true });
  }
}
