/**
 * `tsx src/side-by-side.ts A_MAIN_JS B_MAIN_JS [--groups N] [--session]`: per-turn CPU of two apps/server builds read
 * side by side (ADR 0109), for a change of a few percent that `pnpm bench --only "turn cost"` cannot resolve (its
 * rounds move 30–60% between runs on a shared machine). Both servers (`apps/server/dist/main.js` of two worktrees)
 * run at once, each in a CPU group of its own on the server CPU, against one scripted model; they take short
 * streamed chat turns (10 deltas, as the turn-cost section's) in blocks of 20 that alternate between them, the order
 * flipped each block, so both see the same moments of the machine. After 200 uncounted turns each, `N` groups
 * (default 12) of 200 turns per server; the estimate is the median of the groups' B/A ratios. `--session` sends a new
 * `X-Hermes-Session-Id` each turn instead of none. ADR 0090, 0093 and 0106 measured this way with scratch scripts.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { step, text } from '@hermes/core/testing';
import { cpuMeter, setUpIsolation } from './cgroups.js';
import { send } from './http-load.js';
import { startRemoteModel } from './remote-model.js';
import { startBenchServer, stopChild } from './server-process.js';
import { median } from './stats.js';

const BLOCK_TURNS = 20;
const GROUP_TURNS = 200;
const WARM_TURNS = 200;

interface Arm {
  label: string;
  child: ChildProcess;
  url: string;
  home: string;
  cpu(): number;
  agent: Agent;
  turns: number;
}

const positional = process.argv
  .slice(2)
  .filter((argument, index, all) => !argument.startsWith('--') && all[index - 1] !== '--groups');
const groupsIndex = process.argv.indexOf('--groups');
const groups = groupsIndex > 0 ? Number(process.argv[groupsIndex + 1]) : 12;
const withSession = process.argv.includes('--session');
const [entryA, entryB] = positional;
if (!entryA || !entryB || !Number.isInteger(groups) || groups < 1) {
  console.error(
    'usage: tsx src/side-by-side.ts A/apps/server/dist/main.js B/apps/server/dist/main.js [--groups N] [--session]',
  );
  process.exit(2);
}

const isolation = setUpIsolation();
console.log(`isolation: ${isolation.description}`);
const model = await startRemoteModel({ repeat: true });
await model.push(step(text('abcdefghijklmnopqrst', 2)));

/** Starts one build as the turn-cost section starts its servers (auto-titles off). */
async function start(entry: string, label: string): Promise<Arm> {
  const home = mkdtempSync(join(tmpdir(), 'hermes-side-by-side-'));
  writeFileSync(join(home, 'config.yaml'), 'session:\n  auto_title: false\n');
  const group = isolation.serverGroup(`side-by-side ${label}`, null);
  const { child, url } = await startBenchServer({ entry, home, modelUrl: model.baseURL, group });
  return {
    label,
    child,
    url,
    home,
    cpu: cpuMeter(child.pid as number, group),
    agent: new Agent({ keepAlive: true, maxSockets: 1 }),
    turns: 0,
  };
}

async function turns(arm: Arm, count: number): Promise<void> {
  for (let turn = 0; turn < count; turn += 1) {
    arm.turns += 1;
    const headers: Record<string, string> = withSession
      ? { 'x-hermes-session-id': `side-by-side-${arm.label}-${arm.turns}` }
      : {};
    const { status } = await send(`${arm.url}/v1/chat/completions`, {
      agent: arm.agent,
      headers,
      body: JSON.stringify({
        model: 'hermes-agent',
        stream: true,
        messages: [{ role: 'user', content: `turn ${arm.turns}` }],
      }),
    });
    if (status !== 200) throw new Error(`${arm.label}: status ${status}`);
  }
}

const arms = [await start(entryA, 'A'), await start(entryB, 'B')] as const;
try {
  for (const arm of arms) await turns(arm, WARM_TURNS);
  const ratios: number[] = [];
  const perTurn: [number[], number[]] = [[], []];
  for (let group = 0; group < groups; group += 1) {
    const used = [0, 0];
    for (let block = 0; block < GROUP_TURNS / BLOCK_TURNS; block += 1) {
      const order = (block + group) % 2 === 0 ? [0, 1] : [1, 0];
      for (const index of order) {
        const arm = arms[index as 0 | 1];
        const before = arm.cpu();
        await turns(arm, BLOCK_TURNS);
        used[index] = (used[index] as number) + arm.cpu() - before;
      }
    }
    const [a, b] = [(used[0] as number) / GROUP_TURNS, (used[1] as number) / GROUP_TURNS];
    perTurn[0].push(a);
    perTurn[1].push(b);
    ratios.push(b / a);
    console.log(`group ${group + 1}: A ${a.toFixed(3)} ms, B ${b.toFixed(3)} ms per turn, B/A ${(b / a).toFixed(3)}`);
  }
  console.log(
    `${withSession ? 'session header' : 'header-less'}, ${groups} groups of ${GROUP_TURNS} turns: A ${median(perTurn[0]).toFixed(3)} ms, B ${median(perTurn[1]).toFixed(3)} ms per turn; median B/A ${median(ratios).toFixed(3)} (groups ${Math.min(...ratios).toFixed(3)}–${Math.max(...ratios).toFixed(3)}, B lower in ${ratios.filter((ratio) => ratio < 1).length})`,
  );
} finally {
  for (const arm of arms) {
    await stopChild(arm.child, 'SIGTERM');
    rmSync(arm.home, { recursive: true, force: true });
  }
  await model.close();
  isolation.release();
}
process.exit(0);
