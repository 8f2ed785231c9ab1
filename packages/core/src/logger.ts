/**
 * The stderr logger and secret redaction, also published alone as `@hermes/core/logger`: a process
 * that must answer before the core has loaded (`hermes acp` answering `initialize`) logs through
 * this entry, which imports nothing else.
 *
 * @module
 */
import { statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { SonicBoom } from 'sonic-boom';
import type { JsonObject, Logger } from './types.js';

export type { Logger };

const KEY_SHAPES = [/\bsk-[A-Za-z0-9_-]{8,}/g, /\bBearer\s+[A-Za-z0-9._~+/=-]{8,}/gi];

/**
 * Replaces known secret values and common key shapes with `[redacted]`. Used by every logger the
 * core creates and available to protocols for their own output.
 */
export function redactSecrets(text: string, secrets: Iterable<string> = []): string {
  let out = text;
  for (const secret of secrets) {
    if (secret.length >= 6) out = out.split(secret).join('[redacted]');
  }
  for (const shape of KEY_SHAPES) out = out.replace(shape, '[redacted]');
  return out;
}

let stderrLines: ((line: string) => void) | undefined;

/**
 * Writes lines to stderr (fd 2) asynchronously through sonic-boom: a log line costs the event loop
 * a string append, not a synchronous `write` (stderr on a pipe or a file is synchronous in Node).
 * Lines still buffered are written synchronously on `exit`, which Node also emits after an
 * uncaught exception, so a normal exit or a crash keeps the last lines (not a SIGKILL). A closed
 * stderr (EPIPE) drops the lines instead of failing the process. sonic-boom is loaded on the
 * first line, so this entry still imports nothing before it logs (docs/adr/0019).
 */
function asyncStderr(): (line: string) => void {
  if (stderrLines) return stderrLines;
  // A first-use load: a synchronous stat of a regular file first, so the resolver follows pnpm's
  // links even when the host last stat'ed a pipe (docs/adr/0004, as in `importOnFirstUse`).
  try {
    statSync(fileURLToPath(import.meta.url));
  } catch {
    // A bundler may have moved this module; the require below still runs.
  }
  const Boom = createRequire(import.meta.url)('sonic-boom') as typeof SonicBoom;
  const stream = new Boom({ fd: 2, sync: false });
  let broken = false;
  stream.on('error', () => {
    broken = true;
  });
  process.on('exit', () => {
    if (broken) return;
    try {
      // A write still in libuv's thread pool would land after the synchronous one below and swap the last lines
      // (its callback never runs now). sonic-boom keeps that state in `_writing`; give such a write a moment.
      if ((stream as unknown as { _writing?: boolean })._writing === true)
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
      stream.flushSync();
    } catch {
      // stderr is gone; nothing left to tell.
    }
  });
  stderrLines = (line) => {
    if (!broken) stream.write(line);
  };
  return stderrLines;
}

/**
 * The default logger: warnings and errors as single lines on stderr, written asynchronously,
 * secrets redacted. The core never writes to stdout, which two protocols use as their channel.
 */
export function createStderrLogger(options?: {
  level?: 'debug' | 'info' | 'warn' | 'error';
  secrets?: () => Iterable<string>;
  write?: (line: string) => void;
}): Logger {
  const order = { debug: 0, info: 1, warn: 2, error: 3 } as const;
  const threshold = order[options?.level ?? 'warn'];
  const write = options?.write ?? ((line: string) => asyncStderr()(line));
  const emit = (level: keyof typeof order, message: string, fields?: JsonObject) => {
    if (order[level] < threshold) return;
    const suffix = fields && Object.keys(fields).length > 0 ? ` ${JSON.stringify(fields)}` : '';
    write(`${redactSecrets(`[hermes] ${level}: ${message}${suffix}`, options?.secrets?.() ?? [])}\n`);
  };
  return {
    debug: (message, fields) => emit('debug', message, fields),
    info: (message, fields) => emit('info', message, fields),
    warn: (message, fields) => emit('warn', message, fields),
    error: (message, fields) => emit('error', message, fields),
  };
}

/** A logger that drops everything. */
export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };
