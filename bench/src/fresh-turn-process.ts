/**
 * Child-process entry for one sample of a stream path's "first turn, fresh process" row: a fresh agent read by a
 * client that is fresh too, as the direct client of that row's floor is (src/direct-client-process.mjs). In the
 * harness's own process the client of a later path would have compiled code an earlier path ran (the gateway
 * WebSocket row reads with the client the stdio row warmed), so each sample starts both sides anew (ADR 0030).
 *
 * IPC: the parent sends `{ start: { path, entry, env, cwd } }`; this process starts the agent, connects its client and
 * answers `{ ready: true, pid }` (the agent's pid); the parent queues the model's deltas and sends `{ go: true }`; this process answers
 * `{ figures }` (or `{ error }`), closes the agent and exits. If the parent disconnects first, it closes the agent and
 * exits too.
 */
import { onlyTurn, PATHS, type PathSession } from './protocol-stream.js';

interface Start {
  path: string;
  entry: string[];
  env: NodeJS.ProcessEnv;
  cwd: string;
}

let session: PathSession | undefined;
let pathName = '';

/** Sends `message` and exits once it is on its way (an exit right after `send` could lose it). */
function finish(message: object, code: number): void {
  if (process.send) process.send(message, () => process.exit(code));
  else process.exit(code);
}

async function fail(error: unknown): Promise<void> {
  await session?.close().catch(() => undefined);
  finish({ error: error instanceof Error ? (error.stack ?? error.message) : String(error) }, 1);
}

process.on('message', (message: { start?: Start; go?: true }) => {
  if (message.start) {
    const { path, entry, env, cwd } = message.start;
    pathName = path;
    const factory = PATHS.find(([name]) => name === path)?.[1];
    if (!factory) {
      void fail(new Error(`no stream path named ${path}`));
      return;
    }
    factory(entry, env, cwd).then((started) => {
      session = started;
      process.send?.({ ready: true, pid: started.pid });
    }, fail);
  } else if (message.go && session) {
    const started = session;
    // Closed by onlyTurn, whatever the turn did: nothing is left for `fail` or a disconnect to close.
    session = undefined;
    onlyTurn(pathName, started).then((figures) => finish({ figures }, 0), fail);
  }
});

// A parent that lets go (it failed, or it is gone) leaves no agent behind.
process.on('disconnect', () => {
  void (session?.close() ?? Promise.resolve()).finally(() => process.exit(1));
});
