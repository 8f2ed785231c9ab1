import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  createOpenAIApp,
  hardenHttpServer,
  httpServerOptions,
  resolveApiServerSettings,
  resolveHttpTimeouts,
  weakKeyReason,
} from '@hermes/protocol-openai';
import { serve } from '@hono/node-server';
import type { Command } from 'commander';
import { createCliHost, describeStartupError } from '../host.js';

interface ServeOptions {
  host?: string;
  port?: string;
}

/**
 * Registers `hermes serve`: the OpenAI-compatible HTTP API and runs API on @hono/node-server
 * (127.0.0.1:8642 by default). Logs go to stderr; SIGTERM and SIGINT drain in-flight turns before exiting.
 */
export function registerServeCommand(program: Command): void {
  program
    .command('serve')
    .description('serve the OpenAI-compatible HTTP API (chat completions, Responses, runs)')
    .option('--host <host>', 'bind address (default 127.0.0.1, or API_SERVER_HOST)')
    .option('--port <port>', 'bind port (default 8642, or API_SERVER_PORT)')
    .action(async (options: ServeOptions) => {
      let host: Awaited<ReturnType<typeof createCliHost>>;
      try {
        host = await createCliHost();
      } catch (error) {
        process.stderr.write(`${describeStartupError(error)}\n`);
        process.exitCode = 1;
        return;
      }
      const overrides: { host?: string; port?: number } = {};
      if (options.host) overrides.host = options.host;
      if (options.port !== undefined) {
        const port = Number(options.port);
        if (!Number.isInteger(port) || port < 0 || port > 65535) {
          process.stderr.write(`hermes: invalid --port ${options.port}\n`);
          await host.close();
          process.exitCode = 1;
          return;
        }
        overrides.port = port;
      }
      const settings = resolveApiServerSettings(host, overrides);
      // A weak or missing key must stop the server before it ever listens (spec/openai-api.md §4).
      const weak = weakKeyReason(settings.key);
      if (weak) {
        process.stderr.write(`hermes serve: ${weak}\n`);
        await host.close();
        process.exitCode = 1;
        return;
      }
      const api = createOpenAIApp({ host, settings });
      const timeouts = resolveHttpTimeouts(host);
      const server = serve(
        {
          fetch: api.app.fetch,
          hostname: settings.host,
          port: settings.port,
          serverOptions: httpServerOptions(timeouts),
        },
        (info: AddressInfo) => {
          process.stderr.write(`hermes serve: listening on http://${info.address}:${info.port}\n`);
        },
      );
      // Slow or silent connections are closed after a timeout; parse-level rejections get the JSON envelope.
      hardenHttpServer(server as Server, timeouts);
      server.on('error', async (error) => {
        process.stderr.write(`${describeStartupError(error)}\n`);
        await host.close();
        process.exit(1);
      });
      let stopping = false;
      const shutdown = async (signal: string) => {
        if (stopping) return;
        stopping = true;
        process.stderr.write(`hermes serve: ${signal}, draining in-flight turns\n`);
        await api.drain();
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        // Idle keep-alive sockets would otherwise hold the listener open until they time out.
        (server as { closeIdleConnections?: () => void }).closeIdleConnections?.();
        await closed;
        api.close();
        await host.close();
        process.exit(0);
      };
      process.on('SIGTERM', () => void shutdown('SIGTERM'));
      process.on('SIGINT', () => void shutdown('SIGINT'));
    });
}
