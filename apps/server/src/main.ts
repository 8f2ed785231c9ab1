#!/usr/bin/env node
import { StartupRefused, startServer } from './server.js';

try {
  const server = await startServer(process.env);
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
