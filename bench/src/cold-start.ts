/**
 * Cold starts of the stdio protocols and the HTTP server: spawn → first useful answer, median and
 * p90 over N runs, plus the child's RSS at that moment (issue 11).
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CpuGroup } from './cgroups.js';
import { percentile } from './stats.js';

/** Median and p90 of one start path. */
export interface ColdStart {
  name: string;
  medianMs: number;
  p90Ms: number;
  /** Median RSS of the child when it answered. */
  rssMb: number;
  /**
   * Median CPU time (user + system, all threads) the child had used when it answered: on a shared
   * machine it moves far less with the load than the wall time does.
   */
  cpuMs: number;
}

/** Current resident set size of a process, in MB. */
function rssMb(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(match?.[1] ?? Number.NaN) / 1024;
}

/** utime + stime of a process, in ms (USER_HZ is 100 on Linux). */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/**
 * Whether the child has answered what the row waits for, given its output so far; `write` sends it a line (the next
 * request of a sequence).
 */
type ReadyCheck = (stdout: string, stderr: string, write: (line: string) => void) => boolean | Promise<boolean>;

/**
 * Spawns `hermes <args>` (in `group`, as soon as it exists) and resolves with the time until `ready(output)` returns true (or a
 * promise of true), and the child's RSS and CPU time at that moment.
 */
async function once(
  bin: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  send: string | null,
  ready: ReadyCheck,
  group: CpuGroup | null,
): Promise<{ elapsedMs: number; rssMb: number; cpuMs: number }> {
  const started = process.hrtime.bigint();
  const child = spawn(process.execPath, [bin, ...args], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  if (group && child.pid !== undefined) group.add(child.pid);
  const write = (line: string) => child.stdin.write(line);
  let stdout = '';
  let stderr = '';
  try {
    return await new Promise<{ elapsedMs: number; rssMb: number; cpuMs: number }>((resolve, reject) => {
      let done = false;
      const check = async () => {
        if (done || !(await ready(stdout, stderr, write)) || done) return;
        done = true;
        const elapsedMs = Number(process.hrtime.bigint() - started) / 1e6;
        resolve({ elapsedMs, rssMb: rssMb(child.pid as number), cpuMs: cpuMs(child.pid as number) });
      };
      const fail = (error: unknown) => reject(error);
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
        check().catch(fail);
      });
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
        check().catch(fail);
      });
      child.on('exit', (code) => reject(new Error(`hermes ${args.join(' ')} exited with ${code}: ${stderr}`)));
      if (send !== null) child.stdin.write(send);
    });
  } finally {
    child.removeAllListeners('exit');
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }
}

/** GET `<url>/health` until it answers 200. */
async function healthy(url: string): Promise<boolean> {
  for (;;) {
    const response = await fetch(`${url}/health`).catch(() => null);
    if (response?.status === 200) return true;
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

/** The JSON-RPC answer with `id` among the lines of `stdout`, if it has arrived. */
function answer(stdout: string, id: number): { result?: { sessionId?: string } } | undefined {
  for (const line of stdout.split('\n')) {
    if (!line.includes(`"id":${id}`)) continue;
    const parsed = JSON.parse(line) as { id?: number; result?: { sessionId?: string } };
    if (parsed.id === id) return parsed;
  }
  return undefined;
}

/**
 * `hermes acp` driven as an editor drives it: `initialize`, then `session/new` once that is answered, then (`prompt`)
 * `session/prompt` once the session exists; ready when the last request is answered (the prompt's answer comes when
 * its turn has finished).
 */
function acpSequence(cwd: string, prompt: boolean): () => ReadyCheck {
  return () => {
    let step = 1;
    return (stdout, _stderr, write) => {
      if (step === 1 && answer(stdout, 1)) {
        step = 2;
        write(`${JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'session/new', params: { cwd, mcpServers: [] } })}\n`);
      }
      if (step === 2) {
        const created = answer(stdout, 2);
        if (!created) return false;
        if (!prompt) return true;
        step = 3;
        const params = { sessionId: created.result?.sessionId, prompt: [{ type: 'text', text: 'go' }] };
        write(`${JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'session/prompt', params })}\n`);
      }
      return step === 3 && answer(stdout, 3) !== undefined;
    };
  };
}

/**
 * Measures a bare Node floor, `hermes acp` → initialize reply, → `session/new` answered and → first prompt finished
 * (with `modelUrl`, the scripted model, answering at once), `hermes gateway` → gateway.ready, `hermes serve` →
 * /health 200. Each child runs in `group` (a CPU group of its own) when given.
 */
export async function runColdStarts(
  bin: string,
  runs: number,
  options: { modelUrl?: string; group?: CpuGroup | null } = {},
): Promise<ColdStart[]> {
  const home = mkdtempSync(join(tmpdir(), 'hermes-cold-'));
  const cwd = join(home, 'project');
  mkdirSync(cwd);
  const env = {
    PATH: process.env.PATH ?? '',
    HOME: home,
    HERMES_HOME: home,
    API_SERVER_KEY: 'bench-key-0123456789abcdef',
  };
  const withModel = options.modelUrl
    ? { ...env, HERMES_MODEL: 'custom:bench', HERMES_BASE_URL: options.modelUrl }
    : null;
  const initialize = `${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: 1, clientCapabilities: {} } })}\n`;
  const once1 = (check: ReadyCheck) => () => check;
  // The floor of the ACP row: Node starting a script that answers the first line it reads.
  const floor = join(home, 'floor.mjs');
  writeFileSync(
    floor,
    `process.stdin.once('data', () => process.stdout.write('{"jsonrpc":"2.0","id":1,"result":{}}\\n'));\n`,
  );
  const starts: [string, string, string[], NodeJS.ProcessEnv, string | null, () => ReadyCheck][] = [
    [
      'cold start floor: node answering one line',
      floor,
      [],
      env,
      initialize,
      once1((stdout) => stdout.includes('"id":1')),
    ],
    [
      'cold start: hermes acp → initialize',
      bin,
      ['acp'],
      env,
      initialize,
      once1((stdout) => stdout.includes('"id":1')),
    ],
    ...(withModel
      ? ([
          [
            'cold start: hermes acp → session/new answered',
            bin,
            ['acp'],
            withModel,
            initialize,
            acpSequence(cwd, false),
          ],
          [
            'cold start: hermes acp → first prompt finished',
            bin,
            ['acp'],
            withModel,
            initialize,
            acpSequence(cwd, true),
          ],
        ] as [string, string, string[], NodeJS.ProcessEnv, string | null, () => ReadyCheck][])
      : []),
    [
      'cold start: hermes gateway → gateway.ready',
      bin,
      ['gateway'],
      env,
      null,
      once1((stdout) => stdout.includes('gateway.ready')),
    ],
    [
      'cold start: hermes serve → /health 200',
      bin,
      ['serve', '--port', '0'],
      env,
      null,
      once1((_stdout, stderr) => {
        const url = /listening on (http:\/\/[^\s/]+)/.exec(stderr)?.[1];
        return url ? healthy(url) : false;
      }),
    ],
  ];
  const results: ColdStart[] = [];
  try {
    for (const [name, script, args, startEnv, send, makeReady] of starts) {
      const samples: { elapsedMs: number; rssMb: number; cpuMs: number }[] = [];
      for (let run = 0; run < runs; run += 1)
        samples.push(await once(script, args, startEnv, send, makeReady(), options.group ?? null));
      const times = samples.map((sample) => sample.elapsedMs).sort((a, b) => a - b);
      const rss = samples.map((sample) => sample.rssMb).sort((a, b) => a - b);
      const cpu = samples.map((sample) => sample.cpuMs).sort((a, b) => a - b);
      results.push({
        name,
        medianMs: percentile(times, 0.5),
        p90Ms: percentile(times, 0.9),
        rssMb: percentile(rss, 0.5),
        cpuMs: percentile(cpu, 0.5),
      });
    }
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
  return results;
}
