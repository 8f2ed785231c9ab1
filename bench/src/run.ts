/**
 * The benchmark harness entry (`pnpm bench`). Each benchmark measures one figure the same way
 * every time and reports it beside its target; results go to bench/results/latest.json.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

interface BenchResult {
  name: string;
  unit: string;
  median: number;
  p90: number;
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
  return { name, unit: 'ms', median: percentile(samples, 0.5), p90: percentile(samples, 0.9), target };
}

const results: BenchResult[] = [coldStart('cold start: hermes --version', ['--version'], quick ? 3 : 10, '—')];

const table = results.map(
  (r) =>
    `${r.name.padEnd(40)} ${r.median.toFixed(1).padStart(8)} ${r.unit}  p90 ${r.p90.toFixed(1)}  target ${r.target}`,
);
process.stdout.write(`${table.join('\n')}\n`);
const resultsDir = fileURLToPath(new URL('../results', import.meta.url));
mkdirSync(resultsDir, { recursive: true });
writeFileSync(
  join(resultsDir, 'latest.json'),
  `${JSON.stringify({ date: new Date().toISOString(), node: process.version, quick, results }, null, 2)}\n`,
);
