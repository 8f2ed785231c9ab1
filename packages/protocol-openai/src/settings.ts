import type { AgentHost } from '@hermes/core';

/** One `model_routes` alias (spec §2). */
export interface ModelRouteAlias {
  model: string;
  provider?: string;
  model_options?: Record<string, unknown>;
}

/** The `api_server` settings (spec §2), resolved. */
export interface ApiServerSettings {
  host: string;
  port: number;
  key: string;
  modelName: string;
  corsOrigins: string[];
  /** 0 disables the cap. */
  maxConcurrentRuns: number;
  chatStreamEvents: string[];
  showReasoning: boolean;
  directModelRequests: boolean;
  modelRoutes: Record<string, ModelRouteAlias>;
  responseStoreTtlDays: number;
  drainTimeoutSeconds: number;
  /**
   * What one streamed answer may hold for a client that does not read (ADR 0038); past it the connection is cut.
   * 0 disables the bound.
   */
  streamBufferBytes: number;
  /**
   * Most events of one run kept while the shared store cannot take them (issue 33.2, ADR 0050); past it the run ends
   * `interrupted` (`interrupted_by_system(run_event_outbox_overflow)`). Used with several instances (PostgreSQL).
   */
  runEventOutbox: number;
}

/** Defaults of every setting but the key, which has none. */
export const DEFAULT_SETTINGS: Omit<ApiServerSettings, 'key'> = {
  host: '127.0.0.1',
  port: 8642,
  modelName: 'hermes-agent',
  corsOrigins: [],
  maxConcurrentRuns: 10,
  chatStreamEvents: [],
  showReasoning: false,
  directModelRequests: false,
  modelRoutes: {},
  responseStoreTtlDays: 30,
  drainTimeoutSeconds: 30,
  streamBufferBytes: 1024 * 1024,
  runEventOutbox: 10_000,
};

function list(value: unknown): string[] | undefined {
  if (Array.isArray(value))
    return value
      .map(String)
      .map((item) => item.trim())
      .filter(Boolean);
  if (typeof value === 'string')
    return value
      .split(',')
      .map((item) => item.trim())
      .filter(Boolean);
  return undefined;
}

function integer(value: unknown): number | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  const parsed = Number(value);
  return Number.isFinite(parsed) ? Math.trunc(parsed) : undefined;
}

/**
 * Reads the `api_server` section of the host's config and its environment variables; a variable wins over the file
 * (spec §2).
 */
export function resolveApiServerSettings(
  host: Pick<AgentHost, 'configSection' | 'lookupEnv'>,
  overrides: Partial<ApiServerSettings> = {},
): ApiServerSettings {
  const section = (host.configSection('api_server') ?? {}) as Record<string, unknown>;
  const environment = (name: string) => host.lookupEnv(name);
  const pick = <T>(parse: (value: unknown) => T | undefined, variable: string | null, key: string): T | undefined =>
    (variable ? parse(environment(variable)) : undefined) ?? parse(section[key]);
  const text = (value: unknown) => (typeof value === 'string' && value !== '' ? value : undefined);
  const bool = (value: unknown) => (typeof value === 'boolean' ? value : undefined);
  const resolved: ApiServerSettings = {
    host: pick(text, 'API_SERVER_HOST', 'host') ?? DEFAULT_SETTINGS.host,
    port: pick(integer, 'API_SERVER_PORT', 'port') ?? DEFAULT_SETTINGS.port,
    key: pick(text, 'API_SERVER_KEY', 'key') ?? '',
    modelName: pick(text, 'API_SERVER_MODEL_NAME', 'model_name') ?? DEFAULT_SETTINGS.modelName,
    corsOrigins: pick(list, 'API_SERVER_CORS_ORIGINS', 'cors_origins') ?? [],
    maxConcurrentRuns: Math.max(
      0,
      pick(integer, 'API_SERVER_MAX_CONCURRENT_RUNS', 'max_concurrent_runs') ?? DEFAULT_SETTINGS.maxConcurrentRuns,
    ),
    chatStreamEvents: pick(list, 'API_SERVER_CHAT_STREAM_EVENTS', 'chat_stream_events') ?? [],
    showReasoning: pick(bool, null, 'show_reasoning') ?? false,
    directModelRequests: pick(bool, null, 'direct_model_requests') ?? false,
    modelRoutes: (section.model_routes as Record<string, ModelRouteAlias> | undefined) ?? {},
    responseStoreTtlDays: pick(integer, null, 'response_store_ttl_days') ?? DEFAULT_SETTINGS.responseStoreTtlDays,
    drainTimeoutSeconds: pick(integer, null, 'drain_timeout_s') ?? DEFAULT_SETTINGS.drainTimeoutSeconds,
    streamBufferBytes: Math.max(
      0,
      pick(integer, 'API_SERVER_STREAM_BUFFER_BYTES', 'stream_buffer_bytes') ?? DEFAULT_SETTINGS.streamBufferBytes,
    ),
    runEventOutbox: Math.max(1, pick(integer, null, 'run_event_outbox') ?? DEFAULT_SETTINGS.runEventOutbox),
  };
  const merged = { ...resolved, ...overrides };
  merged.maxConcurrentRuns = Math.max(0, merged.maxConcurrentRuns);
  return merged;
}

const PLACEHOLDERS = ['changeme', 'change-me', 'placeholder', 'your-api-key'];

/**
 * Why a key is unusable, or null when it is acceptable (spec §4): the server must refuse to listen with a message
 * naming API_SERVER_KEY.
 */
export function weakKeyReason(key: string | undefined): string | null {
  if (!key) return 'API_SERVER_KEY is required: set it to a random secret of at least 16 characters.';
  if (key.length < 16) return 'API_SERVER_KEY is too short: use at least 16 characters.';
  if (new Set(key).size === 1) return 'API_SERVER_KEY must not be one repeated character.';
  const lower = key.toLowerCase();
  if (PLACEHOLDERS.some((placeholder) => lower.includes(placeholder)))
    return 'API_SERVER_KEY looks like a placeholder: use a random secret.';
  return null;
}
