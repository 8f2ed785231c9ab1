import type { Logger as HermesLogger, JsonObject } from '@hermes/core';
import { redactSecrets } from '@hermes/core';
import { type Logger, pino } from 'pino';

/**
 * Structured JSON logs on stdout (the server has no stdio protocol), one object a line, with
 * every secret the host knows redacted from messages and fields.
 *
 * Lines are written asynchronously (pino's `sync: false` destination, sonic-boom): a request's
 * access-log line no longer costs a synchronous `write` on the event loop. They are also gathered:
 * up to 4 KiB, or a quarter of a second, go out in one write, since each write is a hop to libuv's
 * thread pool that cost a request about as much as its SQLite commit (docs/adr/0025). Warnings and
 * errors are written at once. pino flushes what is left synchronously when the process exits, also
 * after an uncaught exception (docs/adr/0019).
 */
/** pino's number for `warn`. */
const WARN_LEVEL = 40;

export function createServerLogger(options: { level: string; secrets: () => Iterable<string> }): Logger {
  return pino(
    {
      level: options.level,
      base: { service: 'hermes-server' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      hooks: {
        logMethod(args, method, level) {
          const secrets = [...options.secrets()];
          const cleaned = args.map((argument) => {
            if (typeof argument === 'string') return redactSecrets(argument, secrets);
            // Parsed back only when something was redacted: most fields hold no secret.
            const json = JSON.stringify(argument);
            const redacted = redactSecrets(json, secrets);
            return redacted === json ? argument : JSON.parse(redacted);
          });
          method.apply(this, cleaned as Parameters<typeof method>);
          if (level >= WARN_LEVEL) this.flush();
        },
      },
    },
    pino.destination({ dest: 1, sync: false, minLength: 4096, periodicFlush: 250 }),
  );
}

/** The core's Logger interface over pino. */
export function coreLogger(logger: Logger): HermesLogger {
  const log = (level: 'debug' | 'info' | 'warn' | 'error') => (message: string, fields?: JsonObject) =>
    fields ? logger[level](fields, message) : logger[level](message);
  return { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') };
}
