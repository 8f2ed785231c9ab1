import type { AgentHost, RunBus } from '@hermes/core';
import { createRunBus, HermesError, redactSecrets } from '@hermes/core';
import { Hono } from 'hono';
import { BrowserControlBroker, type BrowserControlOptions, registerBrowserControlRoutes } from './browser-control.js';
import { handleChatCompletions } from './chat-completions.js';
import { ApiError, errorResponse, storeUnavailable } from './http-error.js';
import { registerInfoRoutes } from './info-routes.js';
import { registerPermissionRoutes } from './permissions-routes.js';
import { authStage, bodySizeStage, corsStage, securityHeaders } from './pipeline.js';
import { registerResponsesRoutes } from './responses.js';
import { RUN_RETENTION_MS, RunRegistry, registerRunsRoutes } from './runs.js';
import { ApprovalRegistry, type ServerContext } from './server-context.js';
import { registerSessionRoutes } from './sessions.js';
import { type ApiServerSettings, resolveApiServerSettings } from './settings.js';
import { registerSkillRoutes } from './skills-routes.js';
import { TurnAdmission } from './turn-admission.js';
import { TurnRuns } from './turn-runs.js';

/** Options of {@link createOpenAIApp}. */
export interface OpenAIAppOptions {
  host: AgentHost;
  /** Overrides of the settings read from the host's `api_server` section and environment. */
  settings?: Partial<ApiServerSettings>;
  /** Idle time before an SSE keepalive comment; default 10 s (spec §10). */
  keepaliveMs?: number;
  /** Browser-extension control (spec §24); default from `api_server.browser_control`. */
  browserControl?: BrowserControlOptions;
  /**
   * The run bus shared with other instances (ADR 0018); default: the PostgreSQL `LISTEN/NOTIFY` bus when the host's
   * store is PostgreSQL, else an in-process one. A bus passed here is not closed by `close()`.
   */
  runBus?: RunBus;
  /** How long a control request forwarded to the instance running a run waits for its answer; default 5 s. */
  controlTimeoutMs?: number;
  /**
   * Registers the embedding server's own middleware (request ids, access logs) on the app before the API's stages,
   * so that a server serves this app itself instead of mounting it in an app of its own: hono wraps each route and
   * middleware of an app mounted with `route()` that has an error handler in one more composed async handler, a layer
   * per stage on every request (ADR 0090).
   */
  beforeStages?: (app: Hono) => void;
}

/** A hono application with its lifecycle hooks. */
export interface OpenAIApp {
  /** The hono application; mount it with `@hono/node-server`. */
  readonly app: Hono;
  /** The resolved settings. */
  readonly settings: ApiServerSettings;
  /** Turns in flight across every surface. */
  activeTurns(): number;
  /** True once `drain` was called. */
  readonly draining: boolean;
  /**
   * Starts draining (spec §6.4): turn-starting routes answer 503, other routes keep working. Resolves once every
   * turn has settled, or after `drain_timeout_s`, when the remaining turns are interrupted with issuer `shutdown`
   * and awaited.
   */
  drain(options?: { timeoutMs?: number }): Promise<void>;
  /** Stops the app's background timers; the host stays open (its owner closes it). */
  close(): void;
  /** The browser-control broker; `attach(httpServer)` serves its WebSocket lane. */
  readonly browserControl: BrowserControlBroker;
}

const OPEN_PATHS = ['/health', '/v1/health', '/health/ready'];
/** How often shared run events of long-settled runs are deleted. */
const RUN_EVENTS_PRUNE_MS = 600_000;

/** Creates the OpenAI-compatible and runs API over an agent host (spec/openai-api.md). */
export function createOpenAIApp(options: OpenAIAppOptions): OpenAIApp {
  const { host } = options;
  const settings = resolveApiServerSettings(host, options.settings);
  // The HTTP API brings a stored session's agent to life for each turn it admits and lets go of it after the turn
  // (unless a gateway or ACP client is attached to it): a server answering many sessions holds only the live ones.
  const admission = new TurnAdmission(
    () => settings.maxConcurrentRuns,
    host.turns,
    (sessionId) => void host.releaseAgent(sessionId),
  );
  const bus =
    options.runBus ??
    createRunBus(host.store, host.holderId, {
      onWarning: (message, details) => host.logger.warn(message, details),
    });
  const server: ServerContext = {
    host,
    settings,
    admission,
    approvals: new ApprovalRegistry(host.live),
    startedAt: Date.now(),
    metrics: { requests: 0, turns: 0, errors: 0 },
    keepaliveMs: options.keepaliveMs ?? 10_000,
    runEventSubscribers: () => runs.subscriberCount(),
    bus,
    controlTimeoutMs: options.controlTimeoutMs ?? 5_000,
  };
  const runs = new RunRegistry(server);
  // Stored responses older than the TTL are pruned at startup and then hourly (spec §14.5).
  const prune = () => {
    const ttlMs = settings.responseStoreTtlDays * 86_400_000;
    void host.store.responses
      .prune(ttlMs)
      .catch((error) => host.logger.warn('response pruning failed', { error: String(error) }));
  };
  prune();
  // The first request's reply need not wait for the default model's package to load.
  setImmediate(() => void host.warmModel());
  const pruneTimer = setInterval(prune, 3_600_000);
  pruneTimer.unref();
  // Shared run events (PostgreSQL) go 3,600 s after their run turned terminal, as the in-memory backlog does
  // (spec §19.3); checked every 10 minutes by every instance (the delete is idempotent).
  const pruneRunEvents = () => {
    void bus
      .prune(Date.now() - RUN_RETENTION_MS)
      .catch((error) => host.logger.warn('run event pruning failed', { error: String(error) }));
  };
  const runEventsTimer = setInterval(pruneRunEvents, RUN_EVENTS_PRUNE_MS);
  runEventsTimer.unref();
  pruneRunEvents();
  const app = new Hono();
  options.beforeStages?.(app);
  let metricsDay = new Date().toDateString();
  app.use('*', async (_context, next) => {
    // `metrics_today` counts since local midnight (spec §18).
    const today = new Date().toDateString();
    if (today !== metricsDay) {
      metricsDay = today;
      Object.assign(server.metrics, { requests: 0, turns: 0, errors: 0 });
    }
    server.metrics.requests += 1;
    await next();
  });
  app.use('*', securityHeaders());
  app.use('*', corsStage(settings.corsOrigins));
  app.use('*', bodySizeStage());
  app.use('*', authStage(settings.key, OPEN_PATHS));

  const browserControl = new BrowserControlBroker(host, options.browserControl);
  registerInfoRoutes(app, server, { browserControl: browserControl.enabled });
  app.post('/v1/chat/completions', (context) => handleChatCompletions(server, context));
  registerResponsesRoutes(app, server);
  registerRunsRoutes(app, server, runs, new TurnRuns(server));
  registerSessionRoutes(app, server, runs);
  registerSkillRoutes(app, server);
  registerPermissionRoutes(app, server);
  registerBrowserControlRoutes(app, browserControl, settings.key);

  app.notFound((context) => errorResponse(context, new ApiError(404, 'not_found', `Not found: ${context.req.path}`)));
  app.onError((error, context) => {
    if (ApiError.isInstance(error)) {
      if (error.status >= 500) server.metrics.errors += 1;
      return errorResponse(context, error);
    }
    server.metrics.errors += 1;
    if (HermesError.isInstance(error) && error.code === 'store_unavailable') {
      host.logger.warn('request refused: the session store is unreachable', { error: redactSecrets(String(error)) });
      return errorResponse(context, storeUnavailable());
    }
    // The route, the core's code and the stack name the failure's cause in the log (the answer's message only says
    // what failed): a rare 500 under load is otherwise a line that cannot be traced back (issue 34).
    host.logger.error('request failed', {
      method: context.req.method,
      path: context.req.path,
      error: redactSecrets(String(error)),
      code: HermesError.isInstance(error) ? error.code : null,
      stack: redactSecrets(error.stack ?? ''),
    });
    return errorResponse(
      context,
      new ApiError(500, 'internal_error', `Internal server error: ${redactSecrets(String(error))}`),
    );
  });

  return {
    app,
    settings,
    activeTurns: () => admission.active,
    get draining() {
      return admission.draining;
    },
    browserControl,
    close() {
      clearInterval(pruneTimer);
      clearInterval(runEventsTimer);
      browserControl.close();
      if (!options.runBus) void bus.close();
    },
    async drain(drainOptions = {}) {
      admission.draining = true;
      const timeoutMs = drainOptions.timeoutMs ?? settings.drainTimeoutSeconds * 1000;
      let timer: NodeJS.Timeout | undefined;
      const timedOut = await Promise.race([
        admission.whenIdle().then(() => false),
        new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(true), timeoutMs);
        }),
      ]);
      clearTimeout(timer);
      if (!timedOut) return;
      for (const agent of host.liveAgents())
        agent.interrupt({ issuer: 'shutdown', reason: 'the server is shutting down', hard: true });
      await admission.whenIdle();
    },
  };
}
