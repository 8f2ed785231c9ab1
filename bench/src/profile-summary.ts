/**
 * `tsx src/profile-summary.ts FILE.cpuprofile [N]`: where a V8 CPU profile's busy time went, by package (a
 * `node_modules` package, a workspace package, node's own internals, the garbage collector), then the N functions with
 * the most self time. Idle time is left out of the percentages, so they are shares of the busy CPU. For reading the
 * profiles `--profile` and `runTurnCpu({ profileDir })` write (README, "Reading a miss").
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** The package a script URL belongs to. */
export function packageOf(url: string, functionName: string): string {
  if (url === '') return functionName.startsWith('(') ? functionName : '(native)';
  if (url.startsWith('node:')) return 'node internals';
  const modules = url.lastIndexOf('/node_modules/');
  if (modules >= 0) {
    const rest = url.slice(modules + '/node_modules/'.length).split('/');
    return rest[0]?.startsWith('@') ? `${rest[0]}/${rest[1]}` : (rest[0] ?? url);
  }
  const workspace = /\/(packages|apps)\/([^/]+)\//.exec(url);
  if (workspace) return `${workspace[1]}/${workspace[2]}`;
  return url;
}

/** Self time per package and per function, in ms, busy time only. */
export function summarise(profile: Profile): {
  busyMs: number;
  packages: [string, number][];
  functions: [string, number][];
} {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const packages = new Map<string, number>();
  const functions = new Map<string, number>();
  let busy = 0;
  profile.samples.forEach((id, index) => {
    const node = byId.get(id);
    const micros = profile.timeDeltas[index] ?? 0;
    if (!node || node.callFrame.functionName === '(idle)') return;
    busy += micros;
    const owner = packageOf(node.callFrame.url, node.callFrame.functionName);
    packages.set(owner, (packages.get(owner) ?? 0) + micros);
    const name = `${node.callFrame.functionName || '(anonymous)'} ${owner}:${node.callFrame.lineNumber + 1}`;
    functions.set(name, (functions.get(name) ?? 0) + micros);
  });
  const sorted = (map: Map<string, number>) =>
    [...map.entries()].sort((a, b) => b[1] - a[1]).map(([key, value]): [string, number] => [key, value / 1000]);
  return { busyMs: busy / 1000, packages: sorted(packages), functions: sorted(functions) };
}

if (process.argv[1]?.endsWith('profile-summary.ts')) {
  const file = process.argv[2];
  if (!file) throw new Error('usage: tsx src/profile-summary.ts FILE.cpuprofile [N]');
  const top = Number(process.argv[3] ?? 15);
  const { busyMs, packages, functions } = summarise(JSON.parse(readFileSync(file, 'utf8')) as Profile);
  const line = ([name, ms]: [string, number]) =>
    `${((100 * ms) / busyMs).toFixed(1).padStart(5)}%  ${ms.toFixed(0).padStart(7)} ms  ${name}`;
  process.stdout.write(
    `busy ${busyMs.toFixed(0)} ms\nby package:\n${packages.slice(0, top).map(line).join('\n')}\n` +
      `by function (self):\n${functions.slice(0, top).map(line).join('\n')}\n`,
  );
}
