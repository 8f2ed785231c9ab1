/**
 * The benchmark harness entry (`pnpm bench`, `pnpm bench --quick`). Each benchmark measures one
 * figure the same way every time and reports it beside its target; results go to
 * bench/results/latest.json. Targets are reported, never asserted.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runColdStarts } from './cold-start.js';
import { runConcurrency } from './concurrency.js';
import { runMemoryBenchmark } from './memory.js';
import { runStoreBenchmarks } from './store.js';
import { runStreamBenchmarks } from './stream.js';

interface BenchResult {
  name: string;
  unit: string;
  value: number;
  p90?: number;
  target: string;
}

const quick = process.argv.includes('--quick');
const require = createRequire(import.meta.url);
const hermesBin = join(dirname(require.resolve('@hermes/cli/package.json')), 'dist', 'bin.js');

function percentile(sorted: number[], fraction: number): number {
  const index = Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1);
  return sorted[Math.max(0, index)] ?? Number.NaN;
}

function coldStart(name: string, args: string[], runs: number, target: string): BenchResult {
  const samples: number[] = [];
  for (let run = 0; run < runs; run += 1) {
    const started = process.hrtime.bigint();
    const child = spawnSync(process.execPath, [hermesBin, ...args], { stdio: 'ignore' });
    if (child.status !== 0) throw new Error(`${name}: exited with ${child.status}`);
    samples.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
  samples.sort((a, b) => a - b);
  return { name, unit: 'ms', value: percentile(samples, 0.5), p90: percentile(samples, 0.9), target };
}

const results: BenchResult[] = [coldStart('cold start: hermes --version', ['--version'], quick ? 3 : 10, 'reported')];
for (const start of await runColdStarts(hermesBin, quick ? 3 : 10)) {
  results.push({
    name: start.name,
    unit: 'ms',
    value: start.medianMs,
    p90: start.p90Ms,
    target: start.name.includes('acp') ? '≤ 200 ms median' : 'reported',
  });
}
const memory = await runMemoryBenchmark(hermesBin, quick ? 200 : 1000);
results.push({ name: 'memory: idle hermes gateway RSS', unit: 'MB', value: memory.idleMb, target: 'reported' });
results.push({
  name: `memory: RSS per idle live session (${quick ? 200 : 1000})`,
  unit: 'KB',
  value: memory.perSessionKb,
  target: '≤ 200 KB',
});
const streams = await runStreamBenchmarks({ quick });
const providerFloor = streams.find((entry) => entry.name.includes('doStream'))?.wallMs ?? Number.NaN;
for (const entry of streams) {
  const ratio = entry.wallMs / providerFloor;
  results.push({
    name: entry.name,
    unit: 'ms',
    value: entry.wallMs,
    target: entry.name.includes('floor')
      ? `cpu ${entry.cpuMs.toFixed(0)} ms, first delta ${entry.firstDeltaMs.toFixed(1)} ms`
      : `≤ 1.3× provider floor (now ${ratio.toFixed(2)}×, cpu ${entry.cpuMs.toFixed(0)} ms)`,
  });
}
for (const streams of quick ? [100] : [100, 1000]) {
  const load = await runConcurrency(streams);
  results.push({
    name: `concurrency: ${streams} streaming chats, p99 gap`,
    unit: 'ms',
    value: load.p99Ms,
    target: `≤ 50 ms, 0 errors (errors ${load.errors}, p50 ${load.p50Ms.toFixed(1)} ms, ${Math.round(load.deltasPerSecond)} deltas/s)`,
  });
}
results.push(...(await runStoreBenchmarks({ quick })));

const format = (value: number) => (value >= 100 ? Math.round(value).toLocaleString('en-US') : value.toFixed(1));
const table = results.map((result) => {
  const p90 = result.p90 === undefined ? '' : `  (p90 ${format(result.p90)})`;
  return `${result.name.padEnd(46)} ${format(result.value).padStart(10)} ${result.unit.padEnd(7)}${p90.padEnd(16)} target ${result.target}`;
});
process.stdout.write(`${table.join('\n')}\n`);
const resultsDir = fileURLToPath(new URL('../results', import.meta.url));
mkdirSync(resultsDir, { recursive: true });
writeFileSync(
  join(resultsDir, 'latest.json'),
  `${JSON.stringify({ date: new Date().toISOString(), node: process.version, quick, results }, null, 2)}\n`,
);
