/**
 * The parent side of direct-client-process.mjs: the direct client, the floor of the stream paths, in a process of its
 * own and (when the harness is isolated) a CPU group of its own, as the agents it is compared with are.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { CpuGroup } from './cgroups.js';

/** One read of the direct client. */
export interface DirectRead {
  wallMs: number;
  cpuMs: number;
  firstDeltaMs: number;
  deltas: number;
}

/** A running direct client. */
export interface DirectClient {
  /** Reads the next answer queued on the model. */
  read(): Promise<DirectRead>;
  close(): void;
}

/** Starts the direct client against the model at `baseURL`, in `group`, and waits until it is ready. */
export async function startDirectClient(baseURL: string, group: CpuGroup | null): Promise<DirectClient> {
  const script = fileURLToPath(new URL('./direct-client-process.mjs', import.meta.url));
  const child: ChildProcess = spawn(process.execPath, [script, baseURL], { stdio: ['pipe', 'pipe', 'inherit'] });
  if (group && child.pid !== undefined) group.add(child.pid);
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream })[Symbol.asyncIterator]();
  const ready = await lines.next();
  if (ready.value !== 'ready') {
    child.kill('SIGKILL');
    throw new Error('the direct client did not start');
  }
  return {
    async read() {
      child.stdin?.write('go\n');
      const line = await lines.next();
      if (line.done) throw new Error('the direct client ended');
      return JSON.parse(String(line.value)) as DirectRead;
    },
    close: () => {
      child.kill('SIGKILL');
    },
  };
}
