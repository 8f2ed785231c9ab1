import { buildModelOptions } from '@hermes/core';
import type { Hono } from 'hono';
import { STORE_RETRY_AFTER_SECONDS } from './http-error.js';
import type { ServerContext } from './server-context.js';
import { VERSION } from './version.js';

const ENDPOINTS: Record<string, [string, string]> = {
  health: ['GET', '/health'],
  health_detailed: ['GET', '/health/detailed'],
  capabilities: ['GET', '/v1/capabilities'],
  models: ['GET', '/v1/models'],
  model_options: ['GET', '/api/model/options'],
  chat_completions: ['POST', '/v1/chat/completions'],
  responses: ['POST', '/v1/responses'],
  response_get: ['GET', '/v1/responses/{response_id}'],
  response_delete: ['DELETE', '/v1/responses/{response_id}'],
  runs: ['POST', '/v1/runs'],
  run_status: ['GET', '/v1/runs/{run_id}'],
  run_events: ['GET', '/v1/runs/{run_id}/events'],
  run_approval: ['POST', '/v1/runs/{run_id}/approval'],
  run_steer: ['POST', '/v1/runs/{run_id}/steer'],
  run_stop: ['POST', '/v1/runs/{run_id}/stop'],
  sessions: ['GET', '/api/sessions'],
  session_create: ['POST', '/api/sessions'],
  session: ['GET', '/api/sessions/{session_id}'],
  session_update: ['PATCH', '/api/sessions/{session_id}'],
  session_delete: ['DELETE', '/api/sessions/{session_id}'],
  session_messages: ['GET', '/api/sessions/{session_id}/messages'],
  session_fork: ['POST', '/api/sessions/{session_id}/fork'],
  session_chat: ['POST', '/api/sessions/{session_id}/chat'],
  session_chat_stream: ['POST', '/api/sessions/{session_id}/chat/stream'],
  skills: ['GET', '/v1/skills'],
  toolsets: ['GET', '/v1/toolsets'],
};

/** Routes advertised only while browser-extension control is on (spec §24). */
const BROWSER_CONTROL_ENDPOINTS: Record<string, [string, string]> = {
  browser_control_register: ['POST', '/v1/browser-control/register'],
  browser_control_ws: ['GET', '/v1/browser-control/ws'],
};

/** Features whose availability depends on configuration. */
export interface InfoFeatures {
  /** Browser-extension control is enabled (`api_server.browser_control.enabled`). */
  browserControl: boolean;
}

/** How long a readiness probe waits for the store before calling it unreachable. */
const STORE_PROBE_TIMEOUT_MS = 3_000;

/** True when the session store answers a one-row read within {@link STORE_PROBE_TIMEOUT_MS}. */
async function storeReachable(host: ServerContext['host']): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), STORE_PROBE_TIMEOUT_MS);
  });
  try {
    return await Promise.race([
      host.store.listSessions({ limit: 1 }).then(
        () => true,
        () => false,
      ),
      timedOut,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Health, models, model options and capabilities (spec §15 to §18). */
export function registerInfoRoutes(app: Hono, server: ServerContext, features: InfoFeatures): void {
  const { settings, host } = server;
  const health = { status: 'ok', platform: 'hermes-agent', version: VERSION };
  app.get('/health', (context) => context.json(health));
  app.get('/v1/health', (context) => context.json(health));

  // Readiness for a load balancer (no auth, like /health): 503 while the session store is unreachable or the instance
  // drains, so new turns go to another instance; /health stays the liveness check and answers 200 throughout.
  app.get('/health/ready', async (context) => {
    context.header('Cache-Control', 'no-store');
    if (server.admission.draining) return context.json({ status: 'draining', ready: false }, 503);
    if (!(await storeReachable(host))) {
      context.header('Retry-After', String(STORE_RETRY_AFTER_SECONDS));
      return context.json({ status: 'store_unavailable', ready: false }, 503);
    }
    return context.json({ status: 'ready', ready: true });
  });

  app.get('/health/detailed', async (context) => {
    let database = true;
    try {
      await host.store.listSessions({ limit: 1 });
    } catch {
      database = false;
    }
    let defaultModel = true;
    try {
      host.resolveModel(host.config.model.default ?? '');
    } catch {
      defaultModel = false;
    }
    const draining = server.admission.draining;
    const now = Date.now() / 1000;
    return context.json({
      status: draining ? 'draining' : database && defaultModel ? 'ok' : 'degraded',
      platform: 'hermes-agent',
      version: VERSION,
      gateway_state: draining ? 'draining' : 'running',
      readiness: {
        ready: database && defaultModel && !draining,
        checks: { database: { ok: database }, default_model: { ok: defaultModel } },
      },
      api_server: {
        // The slots of admitted turns under `max_concurrent_runs`; every path out of a turn gives its slot back.
        active_turns: server.admission.active,
        active_runs: server.admission.active,
        // Sessions with a turn in flight on any surface of this process (the gateway's included).
        busy_sessions: server.admission.turns.size,
        max_concurrent_runs: settings.maxConcurrentRuns,
        run_event_subscribers: server.runEventSubscribers(),
        response_store_entries: 0,
      },
      metrics_today: { ...server.metrics },
      active_agents: host.liveAgents().length,
      gateway_busy: server.admission.active > 0 || server.admission.turns.size > 0,
      gateway_drainable: true,
      last_heartbeat: now,
      updated_at: now,
      exit_reason: null,
      pid: process.pid,
    });
  });

  app.get('/v1/models', (context) => {
    const created = Math.floor(server.startedAt / 1000);
    const entry = (id: string, parent: string | null) => ({
      id,
      object: 'model',
      created,
      owned_by: 'hermes',
      permission: [],
      root: id,
      parent,
    });
    return context.json({
      object: 'list',
      data: [
        entry(settings.modelName, null),
        ...Object.keys(settings.modelRoutes).map((alias) => entry(alias, settings.modelName)),
      ],
    });
  });

  // The core builds the inventory and owns the probe policy and cache (openai-api §16), the same
  // payload the gateway's `model.options` shows.
  app.get('/api/model/options', async (context) => {
    const refresh = /^(1|true)$/i.test(context.req.query('refresh') ?? '');
    // Providers without credentials are listed too, as `configured:false` rows.
    return context.json(await buildModelOptions(host, { refresh, includeUnconfigured: true }));
  });

  app.get('/v1/capabilities', (context) =>
    context.json({
      object: 'hermes.api_server.capabilities',
      platform: 'hermes-agent',
      version: VERSION,
      model: settings.modelName,
      auth: { type: 'bearer', required: true },
      runtime: {
        mode: 'server_agent',
        tool_execution: 'server',
        split_runtime: false,
        description: 'Tools run on the server; clients receive results, progress and approval prompts.',
      },
      features: {
        chat_completions: true,
        chat_completions_streaming: true,
        chat_stream_events: {
          header: 'X-Hermes-Events',
          available: ['tool', 'status', 'approval'],
          default: settings.chatStreamEvents,
        },
        responses_api: true,
        responses_streaming: true,
        responses_store: { durable: true, retention_days: settings.responseStoreTtlDays },
        run_submission: true,
        runs_idempotency: { supported: true, durable: true, retention_seconds: 86400 },
        run_status: true,
        run_events_sse: true,
        run_events_replay: { supported: true, backlog_events: 1000 },
        run_stop: true,
        run_steer: true,
        run_approval_response: true,
        tool_progress_events: true,
        approval_events: true,
        reasoning_streaming: settings.showReasoning,
        model_options: true,
        session_resources: true,
        session_chat: true,
        session_chat_streaming: true,
        session_fork: true,
        session_continuity_header: 'X-Hermes-Session-Id',
        session_key_header: 'X-Hermes-Session-Key',
        cors: settings.corsOrigins.length > 0,
        skills_api: true,
        browser_extension_control: features.browserControl,
      },
      endpoints: Object.fromEntries(
        Object.entries({ ...ENDPOINTS, ...(features.browserControl ? BROWSER_CONTROL_ENDPOINTS : {}) }).map(
          ([name, [method, path]]) => [name, { method, path }],
        ),
      ),
    }),
  );
}
