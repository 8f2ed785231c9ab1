import { createServer } from 'node:http';
import {
  attachGatewayWebSocket,
  createGateway,
  generateGatewayToken,
  isLoopbackHost,
  serveStdio,
} from '@hermes/protocol-tui';
import type { Command } from 'commander';
import { createCliHost, describeStartupError } from '../host.js';

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
      try {
        if (options.ws) await serveWebSocket(options);
        else await serveOnStdio();
      } catch (error) {
        process.stderr.write(`${describeStartupError(error)}\n`);
        process.exit(1);
      }
    });
}

function cliCommand(): string[] {
  const script = process.argv[1];
  return script ? [process.execPath, script] : [process.execPath];
}

async function serveOnStdio(): Promise<void> {
  const host = await createCliHost();
  const gateway = createGateway({ host, cliCommand: cliCommand() });
  serveStdio({
    gateway,
    exit: (code) => {
      void host.close().finally(() => process.exit(code));
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
  const host = await createCliHost();
  const configured = host.configSection('tui_gateway');
  const configToken =
    typeof configured === 'object' && configured !== null ? (configured as Record<string, unknown>).token : undefined;
  const token =
    process.env.HERMES_GATEWAY_TOKEN ||
    (typeof configToken === 'string' && configToken ? configToken : generateGatewayToken());
  const gateway = createGateway({ host, cliCommand: cliCommand() });
  const server = createServer((_request, response) => {
    response.statusCode = 404;
    response.end();
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
      .then(() => host.close())
      .finally(() => process.exit(0));
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  process.on('SIGHUP', stop);
}
