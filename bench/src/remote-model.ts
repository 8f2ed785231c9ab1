/** The parent side of model-process.ts: a scripted model served from its own process. */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { type ScriptStep, step, text } from '@hermes/core/testing';

/** A scripted model server running in a child process. */
export interface RemoteModel {
  /** `http://127.0.0.1:<port>/v1` */
  baseURL: string;
  /** Appends steps; resolves once the server has them. */
  push(...steps: ScriptStep[]): Promise<void>;
  /**
   * Serves `runs` uncounted answers of `deltas` one-character deltas, read straight from its SSE: the model process
   * compiles the code that streams them, as it has for the floors that are read against warm runs.
   */
  warm(deltas: number, runs?: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * Forks model-process.ts (through tsx, as the harness itself runs) and waits for its URL. `repeat`: once its steps are
 * used up, the model answers with the last one again, for loads whose number of requests is not known in advance.
 */
export async function startRemoteModel(options: { repeat?: boolean } = {}): Promise<RemoteModel> {
  const child = fork(
    fileURLToPath(new URL('./model-process.ts', import.meta.url)),
    options.repeat ? ['--repeat'] : [],
    {
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    },
  );
  const baseURL = await new Promise<string>((resolve, reject) => {
    child.once('message', (message: { baseURL?: string }) => {
      if (message.baseURL) resolve(message.baseURL);
    });
    child.once('exit', (code) => reject(new Error(`the model process exited with ${code}`)));
  });
  const push = (...steps: ScriptStep[]) =>
    new Promise<void>((resolve) => {
      child.once('message', () => resolve());
      child.send({ push: steps });
    });
  return {
    baseURL,
    push,
    async warm(deltas, runs = 2) {
      for (let run = 0; run < runs; run += 1) {
        await push(step(text('x'.repeat(deltas), 1)));
        const response = await fetch(`${baseURL}/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'bench', stream: true, messages: [{ role: 'user', content: 'warm' }] }),
        });
        await response.arrayBuffer();
      }
    },
    close: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.disconnect();
      await exited;
    },
  };
}
