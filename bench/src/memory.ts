/**
 * Memory of the gateway: RSS of an idle `hermes gateway` process, and its total RSS with N live
 * idle sessions open in that one process (issue 18: 10,000 under 500 MB), from which RSS per
 * session (issue 11). RSS is read from /proc/<pid>/status.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setUpIsolation } from './cgroups.js';

function rssKilobytes(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(match?.[1] ?? Number.NaN);
}

/** Idle RSS, total RSS after opening `sessions` sessions, and RSS per session. */
export async function runMemoryBenchmark(
  bin: string,
  sessions: number,
): Promise<{ idleMb: number; totalMb: number; perSessionKb: number; seconds: number }> {
  const home = mkdtempSync(join(tmpdir(), 'hermes-memory-'));
  const child = spawn(process.execPath, [bin, 'gateway'], {
    env: { PATH: process.env.PATH ?? '', HOME: home, HERMES_HOME: home },
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  // In a CPU group of its own when the harness is isolated: its RSS does not depend on it, its pace does.
  const group = setUpIsolation().serverGroup('memory gateway', null);
  if (group && child.pid !== undefined) group.add(child.pid);
  let buffer = '';
  const waiters = new Map<number, () => void>();
  child.stdout.on('data', (chunk: Buffer) => {
    buffer += chunk.toString();
    let newline = buffer.indexOf('\n');
    while (newline >= 0) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(newline + 1);
      const frame = JSON.parse(line) as { id?: number; params?: { type?: string } };
      if (frame.params?.type === 'gateway.ready') waiters.get(0)?.();
      if (typeof frame.id === 'number') waiters.get(frame.id)?.();
      newline = buffer.indexOf('\n');
    }
  });
  const wait = (id: number) => new Promise<void>((resolve) => waiters.set(id, resolve));
  try {
    await wait(0);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const idle = rssKilobytes(child.pid as number);
    const started = performance.now();
    for (let index = 1; index <= sessions; index += 1) {
      const answered = wait(index);
      child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: index, method: 'session.create', params: {} })}\n`);
      await answered;
      waiters.delete(index);
    }
    const seconds = (performance.now() - started) / 1000;
    // Let the lazy agent builds of the last sessions finish before reading.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const loaded = rssKilobytes(child.pid as number);
    return { idleMb: idle / 1024, totalMb: loaded / 1024, perSessionKb: (loaded - idle) / sessions, seconds };
  } finally {
    child.kill('SIGKILL');
    rmSync(home, { recursive: true, force: true });
  }
}
