#!/usr/bin/env node
import type { Logger } from 'pino';
import { applyServerHeapSettings } from './heap-settings.js';

// Before the server's modules load, so that their allocations already see them (HERMES_V8_HEAP, ADR 0069, ADR 0078).
applyServerHeapSettings(process.env, process.execArgv);
const { StartupRefused, startServer } = await import('./server.js');

/**
 * A promise nobody awaited that rejects (a background task's store error during a database restart, say) must not end
 * the process: node's default for an unhandled rejection is to exit, which took every instance down with its database.
 * It is logged and counted instead; every known background task handles its own errors, so a line here is a bug to fix.
 */
let unhandledRejections = 0;
let serverLogger: Logger | null = null;
process.on('unhandledRejection', (reason: unknown) => {
  unhandledRejections += 1;
  const fields = {
    error: reason instanceof Error ? (reason.stack ?? reason.message) : String(reason),
    code: (reason as { code?: unknown } | null)?.code ?? null,
    unhandledRejections,
  };
  if (serverLogger) serverLogger.error(fields, 'unhandled rejection; the server keeps running');
  else process.stderr.write(`hermes-server: unhandled rejection (kept running): ${fields.error}\n`);
});

try {
  const server = await startServer(process.env);
  serverLogger = server.logger;
  let signals = 0;
  const stop = (signal: NodeJS.Signals) => {
    signals += 1;
    if (signals > 1) {
      server.logger.warn({ signal }, 'second signal: exiting at once');
      process.exit(1);
    }
    server.logger.info({ signal }, 'shutting down');
    void server.shutdown().then(
      () => process.exit(0),
      (error: unknown) => {
        server.logger.error({ error: String(error) }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
} catch (error) {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  if (error instanceof StartupRefused) process.stderr.write(`${error.message}\n`);
  else if (code === 'EADDRINUSE')
    process.stderr.write('hermes-server: the port is already in use. Set API_SERVER_PORT to another port.\n');
  else if (code === 'EACCES')
    process.stderr.write(
      `hermes-server: permission denied (${(error as Error).message}). Check HERMES_HOME and the port.\n`,
    );
  else process.stderr.write(`hermes-server: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
}
