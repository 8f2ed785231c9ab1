import { fstatSync } from 'node:fs';
import { Socket } from 'node:net';
import type { Gateway } from './gateway.js';
import { createStdioTransport } from './wire/index.js';

/** Options of {@link serveStdio}. */
export interface ServeStdioOptions {
  gateway: Gateway;
  /** Called with the exit code when the process should exit (EOF, signals, EPIPE). */
  exit: (code: number) => void;
  /** Shutdown grace (§1.6), default 1 s. */
  graceMs?: number;
}

/**
 * Serves the gateway on this process's stdin/stdout (§1.2). stdout carries protocol frames only:
 * the frames go through a non-blocking socket on fd 1, and `process.stdout.write` is redirected to
 * stderr so stray library output can never corrupt the protocol.
 */
export function serveStdio(options: ServeStdioOptions): void {
  const graceMs = options.graceMs ?? 1000;
  let output: NodeJS.WritableStream & { writableLength?: number } = process.stdout;
  try {
    // bigint: a plain synchronous stat of a pipe stays in a process-wide buffer that Node's module
    // resolvers read, and a package imported later (the core loads AI SDK providers on first use)
    // would then be resolved from its pnpm symlink instead of its real path.
    const stat = fstatSync(1, { bigint: true });
    // A pipe written through process.stdout is synchronous on Linux; a socket on fd 1 is not, so a
    // stalled reader congests the connection instead of freezing the agent (§1.4).
    if (stat.isFIFO() || stat.isSocket()) output = new Socket({ fd: 1, readable: false, writable: true });
  } catch {
    // Fall back to process.stdout.
  }
  const stderrWrite = process.stderr.write.bind(process.stderr);
  process.stdout.write = ((chunk: unknown, ...rest: unknown[]) =>
    stderrWrite(chunk as string, ...(rest as []))) as typeof process.stdout.write;
  let exiting = false;
  const quit = (code: number) => {
    if (exiting) return;
    exiting = true;
    // Frames still queued in the socket would be lost by an immediate exit.
    const started = Date.now();
    const waitForDrain = () => {
      if ((output.writableLength ?? 0) === 0 || Date.now() - started > 500) options.exit(code);
      else setTimeout(waitForDrain, 10);
    };
    waitForDrain();
  };
  const shutdown = () => {
    if (options.gateway.retiring) return;
    setTimeout(() => quit(0), graceMs).unref?.();
    void options.gateway.shutdown().then(
      () => setTimeout(() => quit(0), 20),
      () => quit(0),
    );
  };
  const transport = createStdioTransport({
    input: process.stdin,
    output: output as unknown as Parameters<typeof createStdioTransport>[0]['output'],
    onWriteError: () => quit(0),
    maxLineBytes: options.gateway.maxFrameBytes,
  });
  process.on('SIGINT', () => {});
  process.on('SIGPIPE', () => {});
  process.on('SIGTERM', shutdown);
  process.on('SIGHUP', shutdown);
  process.stdin.on('end', shutdown);
  process.stdin.on('close', shutdown);
  options.gateway.connect(transport);
  // A dead connection (EPIPE, or a control frame stuck for 10 s) ends a stdio gateway (§1.4).
  void transport.closed.then(() => quit(0));
}
