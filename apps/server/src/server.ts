import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { IncomingMessage, Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import {
  type AgentHost,
  createAgentHost,
  createDemoProvider,
  createRunBus,
  DEMO_MODEL_SPEC,
  loadConfig,
  resolveHomeDir,
  writeDotenvValue,
} from '@hermes/core';
import {
  ApiError,
  createOpenAIApp,
  hardenHttpServer,
  httpServerOptions,
  type OpenAIApp,
  refuseUpgrade,
  resolveHttpTimeouts,
  weakKeyReason,
} from '@hermes/protocol-openai';
import {
  attachGatewayWebSocket,
  createGateway,
  GATEWAY_SUBPROTOCOL,
  GATEWAY_TICKET_PROTOCOL_PREFIX,
  type Gateway,
  GatewayTicketStore,
} from '@hermes/protocol-tui';
import { createAdaptorServer } from '@hono/node-server';
import type { Hono } from 'hono';
import { requestId } from 'hono/request-id';
import type { Logger } from 'pino';
import { coreLogger, createServerLogger } from './logger.js';
import {
  clientAddress,
  clientScheme,
  isLoopback,
  isTrustedProxy,
  readServerSettings,
  type ServerSettings,
} from './settings.js';

/** How long the server waits for its run bus to listen before it serves anyway. */
const BUS_READY_WAIT_MS = 15_000;

/** A started server. */
export interface RunningServer {
  readonly url: string;
  readonly port: number;
  readonly host: AgentHost;
  readonly settings: ServerSettings;
  readonly demo: boolean;
  readonly logger: Logger;
  /** Drains (503 for new turns, running turns finish up to the drain timeout, then are interrupted) and closes. */
  shutdown(): Promise<void>;
}

/** The run a request is about (its path, or the Location of a created run), for per-run log correlation. */
function runIdOf(path: string, location: string | null): { runId?: string } {
  const match = /\/v1\/runs\/(run_[A-Za-z0-9]+)/.exec(path) ?? /\/v1\/runs\/(run_[A-Za-z0-9]+)/.exec(location ?? '');
  return match?.[1] ? { runId: match[1] } : {};
}

/** Where the gateway's WebSocket is served; an upgrade to any path but this and browser control's is refused. */
const GATEWAY_PATH = '/api/ws';

/** Thrown when the server must not start; its message is the one line to show. */
export class StartupRefused extends Error {}

/**
 * Starts the HTTP API of protocol-openai and the gateway WebSocket (`/api/ws`) on one port, on the
 * SQLite store in HERMES_HOME. Without a key on loopback it generates one, saves it to
 * HERMES_HOME/.env and prints it once on stderr; on another address it refuses to start. Without a
 * model it runs the offline demo model.
 */
export async function startServer(env: NodeJS.ProcessEnv = process.env): Promise<RunningServer> {
  const settings = readServerSettings(env);
  const homeDir = resolveHomeDir({ env });
  const loaded = await loadConfig({ homeDir, env });
  let key = settings.key ?? loaded.lookup('API_SERVER_KEY') ?? null;
  // A set key must be strong (spec/openai-api.md §4); only an absent key on loopback is generated.
  const weakness = key ? weakKeyReason(key) : null;
  if (weakness) throw new StartupRefused(`hermes-server: ${weakness}`);
  let generatedKey = false;
  if (!key) {
    if (!isLoopback(settings.host)) {
      throw new StartupRefused(
        `hermes-server: refusing to listen on ${settings.host} without API_SERVER_KEY. Set a long random key (for example: export API_SERVER_KEY=$(openssl rand -hex 32)).`,
      );
    }
    key = `hk-${randomBytes(24).toString('base64url')}`;
    await writeDotenvValue(homeDir, 'API_SERVER_KEY', key);
    generatedKey = true;
  }
  const secrets = new Set<string>([key]);
  const logger = createServerLogger({ level: settings.logLevel, secrets: () => secrets });
  const demo = !loaded.config.model.default && !loaded.lookup('HERMES_MODEL');
  const host = await createAgentHost({
    env,
    homeDir,
    logger: coreLogger(logger),
    providers: [createDemoProvider()],
    // The key may be generated, the gateway token set apart: the core keeps both out of commands and tool output.
    secrets: { API_SERVER_KEY: key, ...(settings.gatewayToken ? { HERMES_GATEWAY_TOKEN: settings.gatewayToken } : {}) },
    ...(demo ? { config: { model: { default: DEMO_MODEL_SPEC } } } : {}),
  });

  // One bus for the runs API and the gateway: on PostgreSQL it carries runs and gateway attaches between instances.
  const bus = createRunBus(host.store, host.holderId, {
    onWarning: (message, details) => logger.warn(details, message),
  });
  // The server's own stages (request ids, the access log, /health/detailed's additions) go on the API's app ahead of
  // its stages, and the server serves that app itself: mounted in an app of its own with `route()`, each of the API's
  // routes and middleware would be wrapped in one more composed handler per request (ADR 0090).
  const serverStages = (app: Hono) => {
    app.use('*', requestId());
    app.use('*', async (context, next) => {
      const started = performance.now();
      await next();
      const incoming = context.env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined;
      const peer = incoming?.incoming?.socket?.remoteAddress;
      logger.info(
        {
          requestId: context.get('requestId'),
          method: context.req.method,
          path: context.req.path,
          status: context.res.status,
          durationMs: Math.round(performance.now() - started),
          client: clientAddress(peer, context.req.header('x-forwarded-for'), settings.trustedProxies),
          // The scheme the client used, as a trusted proxy reports it; the only place the scheme matters, since the
          // server builds no absolute URL (Location headers are paths) and sets no cookie.
          proto: clientScheme(peer, context.req.header('x-forwarded-proto'), settings.trustedProxies),
          ...runIdOf(context.req.path, context.res.headers.get('location')),
        },
        'request',
      );
    });
    // /health/detailed also says which model answers, so a newcomer sees the demo model is in use, and which sandbox
    // commands run in (terminal.sandbox, probed at start).
    app.use('/health/detailed', async (context, next) => {
      await next();
      if (context.res.status !== 200) return;
      const body = (await context.res.json()) as Record<string, unknown>;
      context.res = new Response(
        JSON.stringify({
          ...body,
          model: { default: host.config.model.default ?? null, demo },
          sandbox: {
            setting: host.sandbox.setting,
            active: host.sandbox.active,
            network: host.sandbox.network,
            reason: host.sandbox.reason,
          },
        }),
        context.res,
      );
    });
  };
  const api: OpenAIApp = createOpenAIApp({
    host,
    runBus: bus,
    settings: { key, host: settings.host, port: settings.port },
    beforeStages: serverStages,
  });
  const gateway: Gateway = createGateway({
    host,
    relayBus: bus,
    logger: coreLogger(logger.child({ component: 'gateway' })),
  });
  // Both protocols subscribe to the host's one live-session hub (a gateway client sees a turn the HTTP API runs on its
  // session, and may answer its approvals); on PostgreSQL the hub reaches the other instances through the same bus.
  const stopLiveRelay = host.live.relayThrough(bus);

  // A browser can set no header on a WebSocket: it trades the API key (checked by the API's auth stage, with its CORS)
  // for a single-use 30 s ticket that it offers as a subprotocol (tui-gateway spec §1.3), keeping the key out of URLs.
  const gatewayTickets = new GatewayTicketStore();
  api.app.post('/api/ws/ticket', (context) => {
    const { ticket, expiresAt } = gatewayTickets.mint();
    return context.json({
      object: 'gateway.ticket',
      ticket,
      expires_at: Math.floor(expiresAt / 1000),
      ws_path: '/api/ws',
      subprotocols: [GATEWAY_SUBPROTOCOL, `${GATEWAY_TICKET_PROTOCOL_PREFIX}${ticket}`],
    });
  });

  // Slow or silent connections of every kind are closed after a timeout (api_server.*_timeout_s), and every request
  // Node's parser rejects gets the JSON error envelope.
  const timeouts = resolveHttpTimeouts(host);
  const server = createAdaptorServer({ fetch: api.app.fetch, serverOptions: httpServerOptions(timeouts) }) as Server;
  hardenHttpServer(server, timeouts);
  // WebSocket upgrades reach the gateway through this gate, so that while draining a new connection gets the same
  // retryable 503 as a new turn instead of starting a session the shutdown is about to cut (spec §6.4).
  let draining = false;
  const upgrades = Object.assign(new EventEmitter(), { address: () => server.address() });
  server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    // Node stops watching an upgraded socket: one whose WebSocket handshake never completes is closed here (`ws` clears
    // the timeout once it owns the socket, and then pings it).
    (socket as Socket).setTimeout(timeouts.upgradeTimeoutMs, () => socket.destroy());
    if (!draining) {
      if (api.browserControl.handleUpgrade(request, socket, head)) return;
      if (new URL(request.url ?? '/', 'http://placeholder').pathname !== GATEWAY_PATH) {
        refuseUpgrade(socket, new ApiError(404, 'not_found', `Not found: ${request.url ?? '/'}`));
        return;
      }
      // The gateway checks Host against the bound address (a DNS-rebinding guard). A trusted proxy forwards the
      // public Host it was reached by; it already chose this backend, so the gateway sees the bound address and the
      // public name stays in X-Forwarded-Host.
      const peer = request.socket.remoteAddress;
      if (isTrustedProxy(peer, settings.trustedProxies)) {
        if (request.headers.host && !request.headers['x-forwarded-host'])
          request.headers['x-forwarded-host'] = request.headers.host;
        request.headers.host = settings.host.includes(':') ? `[${settings.host}]` : settings.host;
      }
      upgrades.emit('upgrade', request, socket, head);
      return;
    }
    refuseUpgrade(
      socket,
      new ApiError(503, 'gateway_draining', 'The server is shutting down.', { headers: { 'Retry-After': '1' } }),
    );
  });
  const detachGateway = attachGatewayWebSocket(upgrades as unknown as Server, {
    gateway,
    token: settings.gatewayToken ?? key,
    boundHost: settings.host,
    allowedHosts: settings.allowedHosts,
    tickets: gatewayTickets,
    path: GATEWAY_PATH,
    pingIntervalMs: timeouts.pingIntervalMs,
  });
  // Another instance's gateway attaches and live-session watches are messages on the bus: a request served before
  // this instance listens could start a turn that those never reach. Bounded, so a database that refuses LISTEN
  // alone does not keep the server from starting (its readiness says so while it retries).
  let busWait: NodeJS.Timeout | undefined;
  await Promise.race([
    bus.ready(),
    new Promise<void>((resolve) => {
      busWait = setTimeout(() => {
        logger.warn('the run bus is not listening yet; serving anyway');
        resolve();
      }, BUS_READY_WAIT_MS);
    }),
  ]);
  clearTimeout(busWait);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    // A backlog of 4,096 (the kernel caps it at net.core.somaxconn) instead of node's 511: a burst of connections that
    // arrives while the event loop is busy would overflow the accept queue, and a dropped SYN is retried only after
    // 1, 3, 7, 15 s, which a client sees as that much time to first byte.
    server.listen({ port: settings.port, host: settings.host, backlog: 4096 }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const hostForUrl = settings.host.includes(':') ? `[${settings.host}]` : settings.host;
  const url = `http://${hostForUrl}:${address.port}`;
  logger.info({ url, demo, homeDir }, 'listening');
  // Whoever started the server waits for this line; the lines are otherwise written in batches.
  logger.flush();
  if (demo) {
    process.stderr.write(
      `hermes-server: no model is configured, so the offline demo model answers (set HERMES_MODEL and its API key, or HERMES_BASE_URL, then restart).\n`,
    );
  }
  if (generatedKey) {
    process.stderr.write(
      `hermes-server: generated an API key and saved it to ${homeDir}/.env (shown once):\n  ${key}\nTry it:\n  curl -N ${url}/v1/chat/completions -H "Authorization: Bearer ${key}" -H "Content-Type: application/json" -d '{"model":"hermes-agent","stream":true,"messages":[{"role":"user","content":"Hello"}]}'\n`,
    );
  } else {
    process.stderr.write(
      `hermes-server: listening on ${url} (OpenAI-compatible API at ${url}/v1, gateway WebSocket at ${url.replace('http', 'ws')}/api/ws)\n`,
    );
  }

  let closing: Promise<void> | null = null;
  const shutdown = () => {
    closing ??= (async () => {
      logger.info('draining');
      draining = true;
      const timeoutMs = (settings.drainTimeoutSeconds ?? api.settings.drainTimeoutSeconds) * 1000;
      // The listener keeps accepting connections while turns drain (spec §6.4), so a new turn gets 503
      // `gateway_draining` with Retry-After (a proxy retries elsewhere) instead of a refused connection (a 502).
      await api.drain({ timeoutMs });
      await gateway.shutdown();
      detachGateway();
      const connectionsClosed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Let the last responses flush; streams a client keeps open (run events) are cut after a grace.
      let grace: NodeJS.Timeout | undefined;
      await Promise.race([connectionsClosed, new Promise<void>((resolve) => (grace = setTimeout(resolve, 2000)))]);
      clearTimeout(grace);
      server.closeAllConnections();
      api.close();
      stopLiveRelay();
      await bus.close();
      await host.close();
      logger.info('stopped');
    })();
    return closing;
  };
  return { url, port: address.port, host, settings, demo, logger, shutdown };
}
