/**
 * The stderr logger and secret redaction, also published alone as `@hermes/core/logger`: a process
 * that must answer before the core has loaded (`hermes acp` answering `initialize`) logs through
 * this entry, which imports nothing else.
 *
 * @module
 */
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

/**
 * The default logger: warnings and errors as single lines on stderr, secrets redacted. The core
 * never writes to stdout, which two protocols use as their channel.
 */
export function createStderrLogger(options?: {
  level?: 'debug' | 'info' | 'warn' | 'error';
  secrets?: () => Iterable<string>;
  write?: (line: string) => void;
}): Logger {
  const order = { debug: 0, info: 1, warn: 2, error: 3 } as const;
  const threshold = order[options?.level ?? 'warn'];
  const write = options?.write ?? ((line: string) => process.stderr.write(line));
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
