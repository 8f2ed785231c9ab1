import type { Logger as HermesLogger, JsonObject } from '@hermes/core';
import { redactSecrets } from '@hermes/core';
import { type Logger, pino } from 'pino';

/**
 * Structured JSON logs on stdout (the server has no stdio protocol), one object a line, with
 * every secret the host knows redacted from messages and fields.
 */
export function createServerLogger(options: { level: string; secrets: () => Iterable<string> }): Logger {
  return pino({
    level: options.level,
    base: { service: 'hermes-server' },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    hooks: {
      logMethod(args, method) {
        const secrets = [...options.secrets()];
        const cleaned = args.map((argument) =>
          typeof argument === 'string'
            ? redactSecrets(argument, secrets)
            : JSON.parse(redactSecrets(JSON.stringify(argument), secrets)),
        );
        method.apply(this, cleaned as Parameters<typeof method>);
      },
    },
  });
}

/** The core's Logger interface over pino. */
export function coreLogger(logger: Logger): HermesLogger {
  const log = (level: 'debug' | 'info' | 'warn' | 'error') => (message: string, fields?: JsonObject) =>
    fields ? logger[level](fields, message) : logger[level](message);
  return { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') };
}
