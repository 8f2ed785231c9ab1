import { createServer, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { type AgentHost, createRunBus, type RunBus } from '@hermes/core';
import {
  attachGatewayWebSocket,
  createGateway,
  generateGatewayToken,
  isLoopbackHost,
  serveStdio,
} from '@hermes/protocol-tui';
import type { Command } from 'commander';
import { createCliHost, describeStartupError } from '../host.js';
import { guardUnhandledRejections } from '../rejection-guard.js';

interface GatewayCommandOptions {
  ws?: boolean;
  port?: string;
  host?: string;
  insecure?: boolean;
}

/**
 * Registers `hermes gateway`: the TUI gateway on stdio (default), or with `--ws` the WebSocket
 * endpoint alone. stdout carries protocol frames only; everything else goes to stderr.
 */
export function registerGatewayCommand(program: Command): void {
  program
    .command('gateway')
    .description('serve the TUI gateway: JSON-RPC on stdio, or WebSocket with --ws')
    .option('--ws', 'serve the WebSocket endpoint /api/ws instead of stdio')
    .option('--port <port>', 'WebSocket port (with --ws)', '9119')
    .option('--host <host>', 'WebSocket bind address (with --ws)', '127.0.0.1')
    .option('--insecure', 'allow a non-loopback bind address (with --ws)')
    .configureOutput({ writeOut: (text) => process.stderr.write(text), writeErr: (text) => process.stderr.write(text) })
    .action(async (options: GatewayCommandOptions) => {
      guardUnhandledRejections('hermes gateway');
      try {
        if (options.ws) await serveWebSocket(options);
        else await serveOnStdio();
      } catch (error) {
        process.stderr.write(`${describeStartupError(error)}\n`);
        process.exit(1);
      }
    });
}

/**
 * The run bus the gateway relays through: on a PostgreSQL store, a resume of a session live in another instance
 * (another `hermes gateway`, or apps/server) attaches to it there instead of building a second copy here (ADR 0020).
 * On SQLite it is the in-process bus, which relays nothing.
 */
function relayBusFor(host: AgentHost): RunBus {
  return createRunBus(host.store, host.holderId, {
    onWarning: (message, details) => process.stderr.write(`hermes gateway: ${message} ${JSON.stringify(details)}\n`),
  });
}

function cliCommand(): string[] {
  const script = process.argv[1];
  return script ? [process.execPath, script] : [process.execPath];
}

async function serveOnStdio(): Promise<void> {
  const host = await createCliHost();
  const relayBus = relayBusFor(host);
  const gateway = createGateway({ host, cliCommand: cliCommand(), relayBus });
  serveStdio({
    gateway,
    exit: (code) => {
      void relayBus
        .close()
        .then(() => host.close())
        .finally(() => process.exit(code));
      // The host close may wait on agents; the shutdown grace already elapsed.
      setTimeout(() => process.exit(code), 200).unref();
    },
  });
}

async function serveWebSocket(options: GatewayCommandOptions): Promise<void> {
  const bindHost = options.host ?? '127.0.0.1';
  if (!isLoopbackHost(bindHost) && !options.insecure) {
    throw new Error(`refusing to bind ${bindHost}: not a loopback address (pass --insecure to allow it)`);
  }
  const port = Number.parseInt(options.port ?? '9119', 10);
  // The HTTP hardening helpers only: imported here so that the stdio gateway never loads the HTTP API
  // (hono and its routes) at start (ADR 0057).
  const { ApiError, DEFAULT_HTTP_TIMEOUTS, hardenHttpServer, refuseUpgrade } = await import('@hermes/protocol-openai');
  const host = await createCliHost();
  const configured = host.configSection('tui_gateway');
  const configToken =
    typeof configured === 'object' && configured !== null ? (configured as Record<string, unknown>).token : undefined;
  const token =
    process.env.HERMES_GATEWAY_TOKEN ||
    (typeof configToken === 'string' && configToken ? configToken : generateGatewayToken());
  const relayBus = relayBusFor(host);
  const gateway = createGateway({ host, cliCommand: cliCommand(), relayBus });
  const server = createServer((_request, response) => {
    response.statusCode = 404;
    response.end();
  });
  // Slow or silent connections are closed after a timeout, and an upgrade to any other path is answered 404 and
  // closed instead of holding its socket.
  hardenHttpServer(server, DEFAULT_HTTP_TIMEOUTS);
  server.on('upgrade', (request: IncomingMessage, socket: Duplex) => {
    (socket as Socket).setTimeout(DEFAULT_HTTP_TIMEOUTS.upgradeTimeoutMs, () => socket.destroy());
    if (new URL(request.url ?? '/', 'http://placeholder').pathname !== '/api/ws')
      refuseUpgrade(socket, new ApiError(404, 'not_found', `Not found: ${request.url ?? '/'}`));
  });
  attachGatewayWebSocket(server, { gateway, token, boundHost: bindHost });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, bindHost, () => resolve());
  });
  const address = server.address();
  const actualPort = typeof address === 'object' && address ? address.port : port;
  const shownHost = bindHost.includes(':') ? `[${bindHost}]` : bindHost;
  process.stderr.write(`gateway listening ws://${shownHost}:${actualPort}/api/ws?token=${token}\n`);
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    setTimeout(() => process.exit(0), 1000).unref();
    void gateway
      .shutdown()
      .then(() => relayBus.close())
      .then(() => host.close())
      .finally(() => process.exit(0));
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  process.on('SIGHUP', stop);
}
