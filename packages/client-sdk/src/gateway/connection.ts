import { spawn } from 'node:child_process';
import { createStdioTransport, createWebSocketTransport, type WebSocketLike } from '@hermes/protocol-tui/wire';
import WebSocket from 'ws';
import type { OpenedConnection } from './opened-connection.js';

export type { OpenedConnection };

/** Start `hermes gateway` (or any command that speaks the gateway protocol on stdio) as a child process. */
export interface SpawnConnectionOptions {
  /** The executable, e.g. `hermes`, or `process.execPath` with the CLI's `bin.js` in `args`. */
  command: string;
  /** Arguments, e.g. `['gateway']` or `['/path/apps/cli/dist/bin.js', 'gateway']`. */
  args?: readonly string[];
  /** Environment of the child; the parent's environment when absent. */
  env?: NodeJS.ProcessEnv;
  /** Working directory of the child: the default workspace of new sessions (spec §1.2). */
  cwd?: string;
  /** Receives the child's stderr, which is diagnostics only, never protocol (spec §1.2). */
  onStderr?: (text: string) => void;
}

/** Attach to a gateway WebSocket endpoint (`ws://host:port/api/ws`). */
export interface WebSocketConnectionOptions {
  /** The endpoint URL; a `token` query parameter already in it is kept unless `token` is given. */
  url: string;
  /** The server token (spec §1.3), sent as the `token` query parameter. */
  token?: string;
  /** Extra HTTP headers of the upgrade request. */
  headers?: Record<string, string>;
}

/** How a {@link GatewayClient} reaches its gateway. */
export type GatewayConnectionOptions = SpawnConnectionOptions | WebSocketConnectionOptions;

/** True when the options describe a spawned gateway. */
export function isSpawnConnection(options: GatewayConnectionOptions): options is SpawnConnectionOptions {
  return typeof (options as SpawnConnectionOptions).command === 'string';
}

/** Opens a wire; the returned transport may still fail (its readable then simply ends). */
export function openConnection(options: GatewayConnectionOptions): OpenedConnection {
  return isSpawnConnection(options) ? openChild(options) : openWebSocket(options);
}

function openChild(options: SpawnConnectionOptions): OpenedConnection {
  const child = spawn(options.command, [...(options.args ?? [])], {
    stdio: ['pipe', 'pipe', 'pipe'],
    ...(options.env ? { env: options.env } : {}),
    ...(options.cwd ? { cwd: options.cwd } : {}),
  });
  let failure: Error | undefined;
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    // A command that cannot start (ENOENT) never exits; its error ends the streams instead.
    child.once('error', (error) => {
      failure = error;
      resolve();
    });
  });
  child.stderr.on('data', (chunk: Buffer) => options.onStderr?.(chunk.toString('utf8')));
  // EPIPE on a dead child surfaces as a stream error; the read side ending is what reports the loss.
  child.stdin.on('error', () => {});
  const transport = createStdioTransport({ input: child.stdout, output: child.stdin });
  return {
    transport,
    kind: 'stdio',
    closeCode: () => undefined,
    failure: () => failure,
    terminate: () => {
      child.kill('SIGKILL');
    },
    async dispose() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.stdin.end();
      // The gateway exits within about 1 s of EOF (spec §1.6); do not wait forever on a stuck child.
      const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
      await exited;
      clearTimeout(timer);
    },
  };
}

function openWebSocket(options: WebSocketConnectionOptions): OpenedConnection {
  const url = new URL(options.url);
  if (options.token !== undefined) url.searchParams.set('token', options.token);
  const socket = new WebSocket(url, {
    perMessageDeflate: false,
    ...(options.headers ? { headers: options.headers } : {}),
  });
  let code: number | undefined;
  let reason = '';
  let failure: Error | undefined;
  socket.on('close', (closeCode: number, closeReason: Buffer) => {
    code = closeCode;
    reason = closeReason.toString('utf8');
  });
  // Without a listener an 'error' event would be thrown; the close that follows ends the transport. The error is
  // kept so that the client can say why the wire never opened (ECONNREFUSED, an HTTP answer to the upgrade).
  socket.on('error', (error: Error) => {
    failure ??= error;
  });
  // The transport registers its message listener now, before the server's first frame can arrive.
  const transport = createWebSocketTransport(socket as unknown as WebSocketLike);
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  return {
    transport,
    kind: 'websocket',
    closeCode: () => code,
    closeReason: () => reason,
    failure: () => failure,
    terminate: () => socket.terminate(),
    async dispose() {
      if (socket.readyState === WebSocket.CLOSED) return;
      socket.close(1000, 'client closing');
      const timer = setTimeout(() => socket.terminate(), 2000);
      await closed;
      clearTimeout(timer);
    },
  };
}
