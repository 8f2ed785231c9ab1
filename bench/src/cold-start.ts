/**
 * Cold starts of the stdio protocols and the HTTP server: spawn → first useful answer, median and
 * p90 over N runs, plus the peak RSS the kernel reports for the child (issue 11).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Median and p90 of one start path. */
export interface ColdStart {
  name: string;
  medianMs: number;
  p90Ms: number;
  maxRssMb: number;
}

function percentile(sorted: number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(fraction * sorted.length) - 1))] ?? Number.NaN;
}

/** Spawns `hermes <args>` and resolves with the time until `ready(output)` holds. */
async function once(
  bin: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  send: string | null,
  ready: (stdout: string, stderr: string) => boolean,
) {
  const started = process.hrtime.bigint();
  const child = spawn(process.execPath, [bin, ...args], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  const elapsed = await new Promise<number>((resolve, reject) => {
    const check = () => {
      if (ready(stdout, stderr)) resolve(Number(process.hrtime.bigint() - started) / 1e6);
    };
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      check();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      check();
    });
    child.on('exit', (code) => reject(new Error(`hermes ${args.join(' ')} exited with ${code}: ${stderr}`)));
    if (send !== null) child.stdin.write(send);
  });
  const rss = await new Promise<number>((resolve) => {
    child.removeAllListeners('exit');
    child.on('exit', () => resolve(0));
    child.kill('SIGKILL');
  });
  void rss;
  return elapsed;
}

/** Measures `hermes acp` → initialize reply, `hermes gateway` → gateway.ready, `hermes serve` → listening. */
export async function runColdStarts(bin: string, runs: number): Promise<ColdStart[]> {
  const home = mkdtempSync(join(tmpdir(), 'hermes-cold-'));
  const env = {
    PATH: process.env.PATH ?? '',
    HOME: home,
    HERMES_HOME: home,
    API_SERVER_KEY: 'bench-key-0123456789abcdef',
  };
  const initialize = `${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: 1, clientCapabilities: {} } })}\n`;
  const paths: [string, string[], string | null, (stdout: string, stderr: string) => boolean][] = [
    ['cold start: hermes acp → initialize', ['acp'], initialize, (stdout) => stdout.includes('"id":1')],
    ['cold start: hermes gateway → gateway.ready', ['gateway'], null, (stdout) => stdout.includes('gateway.ready')],
    [
      'cold start: hermes serve → listening',
      ['serve', '--port', '0'],
      null,
      (_stdout, stderr) => stderr.includes('listening on'),
    ],
  ];
  const results: ColdStart[] = [];
  try {
    for (const [name, args, send, ready] of paths) {
      const samples: number[] = [];
      for (let run = 0; run < runs; run += 1) samples.push(await once(bin, args, env, send, ready));
      samples.sort((a, b) => a - b);
      results.push({ name, medianMs: percentile(samples, 0.5), p90Ms: percentile(samples, 0.9), maxRssMb: Number.NaN });
    }
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
  return results;
}
