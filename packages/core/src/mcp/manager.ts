import { createHash, randomUUID } from 'node:crypto';
import type { JSONSchema7 } from '@ai-sdk/provider';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { writeDotenvValue } from '../config/index.js';
import type { ToolContext, ToolDefinition, ToolResult } from '../tools/types.js';
import type { HostCallbacks, JsonValue, Logger } from '../types.js';
import { untilAborted } from '../util/abort.js';
import { importOnFirstUse } from '../util/import-on-first-use.js';
import { VERSION } from '../version.js';
import type { McpManager, McpServerConfig, McpServerStatus } from './types.js';

/** The MCP SDK, imported when the first server connects: a host without servers never loads it. */
async function loadMcpSdk() {
  const [client, stdio, http, types] = await importOnFirstUse(() =>
    Promise.all([
      import('@modelcontextprotocol/sdk/client/index.js'),
      import('@modelcontextprotocol/sdk/client/stdio.js'),
      import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
      import('@modelcontextprotocol/sdk/types.js'),
    ]),
  );
  return {
    Client: client.Client,
    StdioClientTransport: stdio.StdioClientTransport,
    DEFAULT_INHERITED_ENV_VARS: stdio.DEFAULT_INHERITED_ENV_VARS,
    StreamableHTTPClientTransport: http.StreamableHTTPClientTransport,
    ErrorCode: types.ErrorCode,
    McpError: types.McpError,
  };
}

type McpSdk = Awaited<ReturnType<typeof loadMcpSdk>>;

/** The HTTP transport, told apart structurally since the SDK's classes load lazily. */
function isHttpTransport(transport: unknown): transport is StreamableHTTPClientTransport {
  return typeof (transport as { terminateSession?: unknown } | null)?.terminateSession === 'function';
}
let mcpSdk: Promise<McpSdk> | null = null;

/** The minimal environment a stdio server receives, besides `LC_*` and its own `env` (spec/core.md §15.2). */
const BASE_ENV_NAMES: ReadonlySet<string> = new Set(['PATH', 'HOME', 'USER', 'LANG', 'TMPDIR', 'SHELL', 'TERM']);
const TOOL_NAME_LIMIT = 64;
const HASH_LENGTH = 6;
const DEFAULT_CALL_TIMEOUT_SECONDS = 120;
const DEFAULT_CONNECT_TIMEOUT_SECONDS = 60;
/** The longest delay a Node timer accepts; stands for "no limit" (a timeout of 0) in SDK request options. */
const NO_LIMIT_MS = 2_147_483_647;
/** How much of a server's stderr is kept to explain a failure. */
const STDERR_TAIL_CHARS = 2000;
/** An HTTP session's DELETE is a courtesy: closing never waits longer than this for it. */
const TERMINATE_SESSION_MS = 1000;

/** The MCP manager with the hooks the host needs. */
export interface McpManagerInternal extends McpManager {
  /** Connects the host's enabled servers in parallel; resolves when each has connected or failed. */
  start(): Promise<void>;
  /** Tools of the host's servers plus the session's own servers. */
  toolsFor(sessionId: string): ToolDefinition[];
  /** Closes every connection; stdio servers have exited when it resolves. */
  close(): Promise<void>;
}

/** Where a `notice` can be delivered: the core's agents expose `emitEvent`. */
export interface McpNoticeTarget {
  readonly sessionId: string;
  emitEvent?(type: 'notice', payload: { level: 'info' | 'warning' | 'error'; key: string; text: string }): void;
}

/** What the manager needs from its host. */
export interface McpManagerHost {
  /** A variable from the host environment, then `HERMES_HOME/.env`: used for `${VAR}` in `env` and `headers`. */
  lookupEnv(name: string): string | undefined;
  liveAgents(): readonly McpNoticeTarget[];
  /** The host's environment for subprocesses (default `process.env`): the source of a stdio server's base environment. */
  subprocessEnv?(): Record<string, string>;
  /**
   * `secret` is asked for a variable that a session server's `env` or `headers` reference and that
   * is not set (spec/core.md §24.7). Host servers connect while the host is being created, before
   * any client can answer, so for them a missing variable fails the server at once; a live session's
   * client is asked later (`askMissingVariables`, `reload({sessionId})`).
   */
  callbacks?: HostCallbacks;
  /** The `secret` callback of a live session (its client), preferred over the host's for that session. */
  sessionSecret?(sessionId: string): HostCallbacks['secret'] | undefined;
  /** Where an answered secret is written to `.env`; without it the answer is only kept in memory. */
  homeDir?: string;
}

/** Options of {@link createMcpManager}. */
export interface McpManagerOptions {
  host: McpManagerHost;
  /**
   * False (the host's `connectMcp: false`): `start()` connects nothing and lists the host's servers
   * as `disabled`. `reload()` still connects them and session servers still connect when attached:
   * a protocol that creates its host this way starts the configured servers later with `reload()`
   * (spec/acp.md §15).
   */
  connect: boolean;
  /** The current `mcp_servers` section; re-read by `reload()`. */
  servers: () => Record<string, Omit<McpServerConfig, 'name'>>;
  logger: Logger;
  /**
   * Replaces the default delivery of notices (a `notice` event on each affected live agent) when a
   * server fails, disconnects, or a reload changes a session's tools.
   */
  onToolsChanged?: (sessionIds: string[] | 'all', text: string) => void;
}

/** A tool as listed by its server, after the include/exclude filter. */
interface ListedTool {
  /** The server's own name for it: calls use it. */
  name: string;
  description: string;
  inputSchema: JSONSchema7;
  /** The server's schema was not an object schema and sits under `value`. */
  wrapped: boolean;
  readOnly: boolean;
}

type Transport = StdioClientTransport | StreamableHTTPClientTransport;

interface Connection {
  /** `host:<name>` or, for a session server, the configuration's canonical JSON (identical ones are shared). */
  readonly key: string;
  readonly config: McpServerConfig;
  readonly scope: 'host' | 'session';
  status: McpServerStatus;
  client: Client | null;
  transport: Transport | null;
  tools: ListedTool[];
  /** Definitions by exposed name, for this connection attempt: stable objects, so the loop's per-definition caches hold. */
  definitions: Map<string, ToolDefinition>;
  /** Sessions using a session server. */
  readonly users: Set<string>;
  /** Incremented by every connection attempt; callbacks of an older attempt are ignored. */
  attempt: number;
  /** Aborts the current attempt (secret prompt, handshake, listing). */
  abort: AbortController;
  /** Closed for good: left the configuration, lost its last session, or the manager closed. */
  retired: boolean;
  /** Settles when the latest connection attempt has ended, either way. */
  ready: Promise<void>;
  stderrTail: string;
  /** The latest attempt failed only because a `${VAR}` was missing and nobody could be asked for it. */
  missingVariable: boolean;
}

interface VisibleTool {
  connection: Connection;
  tool: ListedTool;
  definition: ToolDefinition;
}

interface View {
  version: number;
  tools: ToolDefinition[];
  byName: Map<string, VisibleTool>;
}

/**
 * `mcp_<server>_<tool>` with characters outside `[A-Za-z0-9_-]` replaced by `_`; a name longer than
 * 64 characters is cut and given `_` + a 6-character hash, and a name already in `taken` is
 * resolved the same way (spec/core.md §15.3). The chosen name is added to `taken`.
 */
export function mcpToolName(server: string, tool: string, taken: Set<string> = new Set()): string {
  const clean = (text: string) => text.replace(/[^A-Za-z0-9_-]/g, '_');
  // The hash is of the original names, so two tools that sanitize alike still get different names.
  const hashed = (base: string, salt: string) =>
    `${base.slice(0, TOOL_NAME_LIMIT - HASH_LENGTH - 1)}_${createHash('sha256').update(salt).digest('hex').slice(0, HASH_LENGTH)}`;
  let name = `mcp_${clean(server)}_${clean(tool)}`;
  if (name.length > TOOL_NAME_LIMIT) name = hashed(name, `${server}\u0000${tool}`);
  const base = name;
  for (let attempt = 1; taken.has(name); attempt += 1) name = hashed(base, `${server}\u0000${tool}\u0000${attempt}`);
  taken.add(name);
  return name;
}

/** A `${VAR}` an MCP server's configuration references is not set and nobody answered for it. */
class MissingVariableError extends Error {}

/** Replaces `${VAR}` references; names that resolve to nothing are collected in `missing`. */
function expandVariables(value: string, lookup: (name: string) => string | undefined, missing: Set<string>): string {
  return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_match, name: string) => {
    const resolved = lookup(name);
    if (resolved === undefined) missing.add(name);
    return resolved ?? '';
  });
}

/** JSON with object keys sorted, so two equal configurations give the same key whatever their key order. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, item]) => item !== undefined)
      .sort(([left], [right]) => (left < right ? -1 : left > right ? 1 : 0));
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function toMilliseconds(seconds: number | undefined, fallback: number): number {
  const value = seconds ?? fallback;
  return value > 0 ? Math.min(value * 1000, NO_LIMIT_MS) : NO_LIMIT_MS;
}

function decodedLength(base64: unknown): number {
  return typeof base64 === 'string' ? Buffer.from(base64, 'base64').length : 0;
}

/** Maps a `tools/call` result to a tool result (spec/core.md §15.3). */
function mapResult(result: Record<string, unknown>): ToolResult {
  // Servers on the 2024-10-07 protocol answer with `toolResult` instead of `content`.
  if (!('content' in result) && 'toolResult' in result) return { content: JSON.stringify(result.toolResult ?? null) };
  const lines: string[] = [];
  for (const item of (result.content as Record<string, unknown>[] | undefined) ?? []) {
    if (item.type === 'text') lines.push(String(item.text ?? ''));
    else if (item.type === 'image' || item.type === 'audio') {
      lines.push(`[${item.type}: ${String(item.mimeType ?? 'unknown')}, ${decodedLength(item.data)} bytes]`);
    } else if (item.type === 'resource_link') lines.push(String(item.uri ?? ''));
    else if (item.type === 'resource') {
      const resource = (item.resource ?? {}) as Record<string, unknown>;
      if (typeof resource.text === 'string') lines.push(resource.text);
      else
        lines.push(
          `[resource: ${String(resource.uri ?? '')}, ${String(resource.mimeType ?? 'unknown')}, ${decodedLength(resource.blob)} bytes]`,
        );
    }
  }
  const mapped: ToolResult = { content: lines.join('\n') };
  if (result.structuredContent !== undefined && result.structuredContent !== null) {
    mapped.structured = result.structuredContent as JsonValue;
    // The model reads only `content`: a result with nothing else still has to reach it.
    if (lines.length === 0) mapped.content = JSON.stringify(result.structuredContent);
  }
  if (result.isError === true) {
    mapped.isError = true;
    mapped.status = 'failed';
  }
  return mapped;
}

function toListedTools(
  config: McpServerConfig,
  listed: { name: string; description?: string; inputSchema?: unknown; annotations?: { readOnlyHint?: boolean } }[],
): ListedTool[] {
  const include = config.tools?.include;
  const exclude = new Set(config.tools?.exclude ?? []);
  return listed
    .filter((tool) => (include ? include.includes(tool.name) : true) && !exclude.has(tool.name))
    .map((tool) => {
      const { $schema: _dialect, ...schema } = (tool.inputSchema ?? { type: 'object' }) as JSONSchema7;
      const wrapped = schema.type !== 'object';
      return {
        name: tool.name,
        description: tool.description ?? `${tool.name} from the ${config.name} MCP server`,
        // Tool parameters must be an object schema; anything else is passed as the one property `value`.
        inputSchema: wrapped ? { type: 'object', properties: { value: schema }, required: ['value'] } : schema,
        wrapped,
        readOnly: tool.annotations?.readOnlyHint === true,
      };
    });
}

function unavailable(server: string, detail?: string): ToolResult {
  return {
    content: `MCP server ${server} is unavailable${detail ? ` (${detail})` : ''}`,
    isError: true,
    status: 'failed',
  };
}

/**
 * The MCP client (spec/core.md §15) on @modelcontextprotocol/sdk: stdio and Streamable HTTP servers,
 * connected in parallel; a failing or slow server never blocks the host. Host servers come from
 * `mcp_servers`; session servers (§24.6) are shared between sessions with identical configurations
 * and closed with their last session.
 */
export function createMcpManager(options: McpManagerOptions): McpManagerInternal {
  const { host, logger } = options;
  let hostConnections: Connection[] = [];
  /** Session servers by key, in first-attach order. */
  const shared = new Map<string, Connection>();
  const sessionConnections = new Map<string, Connection[]>();
  /** Serializes attach calls per session, so a later list always replaces an earlier one. */
  const sessionQueues = new Map<string, Promise<unknown>>();
  /** Clients being closed; `close()` waits for them, so no child process outlives the manager. */
  const closing = new Set<Promise<void>>();
  /** Secrets answered through the `secret` callback, until `.env` is read again. */
  const answeredSecrets = new Map<string, string>();
  const views = new Map<string, View>();
  let version = 0;
  let closed = false;
  let starting: Promise<void> = Promise.resolve();
  let reloading: Promise<unknown> | null = null;

  const changed = () => {
    version += 1;
  };

  const notify = (target: string[] | 'all', key: string, text: string) => {
    if (target !== 'all' && target.length === 0) return;
    try {
      if (options.onToolsChanged) {
        options.onToolsChanged(target, text);
        return;
      }
      for (const agent of host.liveAgents()) {
        if (target === 'all' || target.includes(agent.sessionId))
          agent.emitEvent?.('notice', { level: 'warning', key, text });
      }
    } catch (error) {
      logger.warn('an MCP notice could not be delivered', { error: messageOf(error) });
    }
  };

  const audienceOf = (connection: Connection): string[] | 'all' =>
    connection.scope === 'host' ? 'all' : [...connection.users];

  const newConnection = (config: McpServerConfig, key: string, scope: Connection['scope']): Connection => ({
    key,
    config,
    scope,
    status: {
      name: config.name,
      transport: config.url !== undefined && config.command === undefined ? 'http' : 'stdio',
      state: config.enabled === false ? 'disabled' : 'connecting',
      toolCount: 0,
    },
    client: null,
    transport: null,
    tools: [],
    definitions: new Map(),
    users: new Set(),
    attempt: 0,
    abort: new AbortController(),
    retired: false,
    ready: Promise.resolve(),
    stderrTail: '',
    missingVariable: false,
  });

  const closeClient = (client: Client | null, transport: Transport | null): Promise<void> => {
    if (!client) return Promise.resolve();
    const done = (async () => {
      if (isHttpTransport(transport)) {
        // Ends the server-side session politely; a server that is gone must not hold the close up.
        await Promise.race([
          transport.terminateSession().catch(() => {}),
          new Promise((resolve) => setTimeout(resolve, TERMINATE_SESSION_MS).unref()),
        ]);
      }
      // For stdio the SDK closes stdin, then sends SIGTERM and SIGKILL to a server that does not exit.
      await client
        .close()
        .catch((error: unknown) => logger.debug('closing an MCP client failed', { error: messageOf(error) }));
    })();
    closing.add(done);
    void done.finally(() => closing.delete(done));
    return done;
  };

  /** Drops the current client; the tools stay as they are until the caller says otherwise. */
  const dropClient = (connection: Connection): Promise<void> => {
    const { client, transport } = connection;
    connection.client = null;
    connection.transport = null;
    return closeClient(client, transport);
  };

  const retire = (connection: Connection): Promise<void> => {
    connection.retired = true;
    connection.abort.abort(new Error(`the ${connection.config.name} MCP server was closed`));
    connection.tools = [];
    connection.definitions = new Map();
    if (connection.status.state === 'connected' || connection.status.state === 'connecting') {
      connection.status = { ...connection.status, state: 'failed', toolCount: 0, error: 'closed' };
    }
    changed();
    return dropClient(connection);
  };

  /** A server that went away after connecting: failed, its tools kept and answering "unavailable" (§15.2). */
  const markDisconnected = (connection: Connection, attempt: number, reason: string) => {
    if (closed || connection.retired || connection.attempt !== attempt || connection.status.state !== 'connected')
      return;
    const error = connection.stderrTail.trim() ? `${reason}; stderr: ${lastLines(connection.stderrTail)}` : reason;
    connection.status = { ...connection.status, state: 'failed', error };
    logger.warn(`MCP server ${connection.config.name} disconnected`, { server: connection.config.name, error });
    changed();
    void dropClient(connection);
    notify(
      audienceOf(connection),
      'mcp_server_failed',
      `MCP server ${connection.config.name} disconnected; its tools are unavailable until the MCP servers are reloaded.`,
    );
  };

  const lookupVariable = (name: string) => host.lookupEnv(name) ?? answeredSecrets.get(name);

  /** Resolves `${VAR}` in `env` and `headers`; asks the `secret` callback for what is missing (spec/core.md §24.7). */
  const resolveVariables = async (config: McpServerConfig, sessionId: string | null, signal: AbortSignal) => {
    const expandAll = (values: Record<string, string> | undefined, missing: Set<string>) =>
      Object.fromEntries(
        Object.entries(values ?? {}).map(([name, value]) => [name, expandVariables(value, lookupVariable, missing)]),
      );
    const missing = new Set<string>();
    expandAll(config.env, missing);
    expandAll(config.headers, missing);
    for (const name of missing) {
      const secret = (sessionId !== null ? host.sessionSecret?.(sessionId) : undefined) ?? host.callbacks?.secret;
      let value = '';
      if (secret && sessionId !== null) {
        try {
          const request = {
            requestId: randomUUID(),
            sessionId,
            envVar: name,
            prompt: `The ${config.name} MCP server needs ${name}.`,
          };
          const answer = await untilAborted(secret(request, signal), signal);
          value = answer.value;
        } catch (error) {
          if (signal.aborted) throw error;
          value = '';
        }
      }
      if (value === '')
        throw new MissingVariableError(
          `${name} is not set (referenced by the ${config.name} MCP server configuration)`,
        );
      answeredSecrets.set(name, value);
      if (host.homeDir !== undefined) {
        await writeDotenvValue(host.homeDir, name, value).catch((error: unknown) =>
          logger.warn(`${name} could not be written to .env`, { error: messageOf(error) }),
        );
      }
    }
    const stillMissing = new Set<string>();
    return { env: expandAll(config.env, stillMissing), headers: expandAll(config.headers, stillMissing) };
  };

  const stdioEnvironment = (sdk: McpSdk, resolved: Record<string, string>): Record<string, string> => {
    const source: Record<string, string | undefined> = host.subprocessEnv?.() ?? process.env;
    const env: Record<string, string | undefined> = {};
    // The SDK spreads its own defaults (read from process.env, LOGNAME among them) under the env it
    // is given; Node leaves out variables whose value is undefined, so the server sees exactly the
    // base of §15.2 from the host's environment plus its configured env.
    for (const name of sdk.DEFAULT_INHERITED_ENV_VARS) env[name] = undefined;
    for (const [name, value] of Object.entries(source)) {
      if (value !== undefined && (BASE_ENV_NAMES.has(name) || name.startsWith('LC_'))) env[name] = value;
    }
    Object.assign(env, resolved);
    return env as Record<string, string>;
  };

  const createTransport = (
    sdk: McpSdk,
    connection: Connection,
    resolved: { env: Record<string, string>; headers: Record<string, string> },
  ): Transport => {
    const config = connection.config;
    if (config.command !== undefined) {
      const parameters: ConstructorParameters<typeof StdioClientTransport>[0] = {
        command: config.command,
        args: config.args ?? [],
        env: stdioEnvironment(sdk, resolved.env),
        stderr: 'pipe',
      };
      if (config.cwd) parameters.cwd = config.cwd;
      const transport = new sdk.StdioClientTransport(parameters);
      let pending = '';
      transport.stderr?.on('data', (chunk: Buffer) => {
        const text = chunk.toString();
        connection.stderrTail = (connection.stderrTail + text).slice(-STDERR_TAIL_CHARS);
        const lines = (pending + text).split('\n');
        pending = lines.pop() ?? '';
        for (const line of lines)
          if (line.trim() !== '') logger.info(`mcp ${config.name}: ${line.trimEnd()}`, { server: config.name });
      });
      return transport;
    }
    return new sdk.StreamableHTTPClientTransport(new URL(config.url as string), {
      requestInit: { headers: resolved.headers },
    });
  };

  /** One connection attempt; never throws: a failure is the server's status. */
  const connect = (connection: Connection, sessionId: string | null): Promise<void> => {
    connection.attempt += 1;
    const attempt = connection.attempt;
    const config = connection.config;
    connection.abort.abort(new Error(`the ${config.name} MCP server is reconnecting`));
    connection.abort = new AbortController();
    connection.tools = [];
    connection.definitions = new Map();
    connection.stderrTail = '';
    connection.missingVariable = false;
    connection.status = {
      name: config.name,
      transport: connection.status.transport,
      state: 'connecting',
      toolCount: 0,
    };
    changed();
    const current = () => !closed && !connection.retired && connection.attempt === attempt;
    const connectTimeoutMs = toMilliseconds(config.connect_timeout, DEFAULT_CONNECT_TIMEOUT_SECONDS);
    const deadline = new AbortController();
    const timer = setTimeout(
      () =>
        deadline.abort(
          new Error(`did not connect within ${config.connect_timeout ?? DEFAULT_CONNECT_TIMEOUT_SECONDS} s`),
        ),
      connectTimeoutMs,
    );
    timer.unref();
    const signal = AbortSignal.any([deadline.signal, connection.abort.signal]);
    const run = async () => {
      let client: Client | null = null;
      let transport: Transport | null = null;
      try {
        if ((config.command === undefined) === (config.url === undefined)) {
          throw new Error(
            config.command === undefined
              ? 'an MCP server needs either command or url'
              : 'an MCP server has either command or url, not both',
          );
        }
        const resolved = await resolveVariables(config, sessionId, signal);
        signal.throwIfAborted();
        mcpSdk ??= loadMcpSdk();
        const sdk = await mcpSdk;
        transport = createTransport(sdk, connection, resolved);
        client = new sdk.Client({ name: 'hermes', version: VERSION });
        connection.client = client;
        connection.transport = transport;
        client.onerror = (error) =>
          logger.debug(`MCP server ${config.name}: ${messageOf(error)}`, { server: config.name });
        client.onclose = () => markDisconnected(connection, attempt, 'the server closed the connection');
        const requestOptions = { signal, timeout: connectTimeoutMs };
        await untilAborted(client.connect(transport, requestOptions), signal);
        const listed: Parameters<typeof toListedTools>[1] = [];
        let cursor: string | undefined;
        do {
          const page = await untilAborted(
            client.listTools(cursor === undefined ? undefined : { cursor }, requestOptions),
            signal,
          );
          listed.push(...(page.tools as Parameters<typeof toListedTools>[1]));
          cursor = page.nextCursor;
        } while (cursor !== undefined);
        if (!current()) {
          // Retired or superseded meanwhile; whoever did that may have closed an earlier client only.
          void closeClient(client, transport);
          return;
        }
        connection.tools = toListedTools(config, listed);
        connection.status = {
          name: config.name,
          transport: connection.status.transport,
          state: 'connected',
          toolCount: connection.tools.length,
        };
        logger.debug(`MCP server ${config.name} connected`, { server: config.name, tools: connection.tools.length });
      } catch (error) {
        if (!current()) {
          void closeClient(client, transport);
          return;
        }
        // The deadline's reason says what happened; the SDK's own error for an aborted request does not.
        const reason = deadline.signal.aborted ? messageOf(deadline.signal.reason) : messageOf(error);
        const message = connection.stderrTail.trim()
          ? `${reason}; stderr: ${lastLines(connection.stderrTail)}`
          : reason;
        connection.status = {
          name: config.name,
          transport: connection.status.transport,
          state: 'failed',
          toolCount: 0,
          error: message,
        };
        connection.tools = [];
        // Asked of nobody (the host's start): a session's client can still answer it (askMissingVariables).
        connection.missingVariable = error instanceof MissingVariableError && !signal.aborted;
        if (connection.client === client) {
          connection.client = null;
          connection.transport = null;
        }
        // Not awaited: a server that ignores stdin's end takes seconds to kill, and start() must not wait for it.
        void closeClient(client, transport);
        logger.warn(`MCP server ${config.name} failed: ${message}`, { server: config.name });
        notify(audienceOf(connection), 'mcp_server_failed', `MCP server ${config.name} is unavailable: ${message}`);
      } finally {
        clearTimeout(timer);
        changed();
      }
    };
    connection.ready = run();
    return connection.ready;
  };

  const enabled = (connection: Connection) => connection.config.enabled !== false;

  const buildHostConnections = (): Connection[] =>
    Object.entries(options.servers()).map(([name, config]) =>
      newConnection({ ...config, name }, `host:${name}`, 'host'),
    );

  const visibleFor = (sessionId: string): View => {
    const own = sessionConnections.get(sessionId);
    // Sessions without servers of their own share one view of the host's tools.
    const viewKey = own ? `session:${sessionId}` : 'host';
    const cached = views.get(viewKey);
    if (cached && cached.version === version) return cached;
    const taken = new Set<string>();
    const byName = new Map<string, VisibleTool>();
    const tools: ToolDefinition[] = [];
    // Host tools first: their names never depend on what a session attaches.
    for (const connection of [...hostConnections, ...(own ?? [])]) {
      for (const tool of connection.tools) {
        const name = mcpToolName(connection.config.name, tool.name, taken);
        let definition = connection.definitions.get(name);
        if (!definition) {
          definition = defineTool(name, tool, connection);
          connection.definitions.set(name, definition);
        }
        byName.set(name, { connection, tool, definition });
        tools.push(definition);
      }
    }
    const view = { version, tools, byName };
    views.set(viewKey, view);
    return view;
  };

  const callTool = async (
    connection: Connection,
    tool: ListedTool,
    args: unknown,
    signal: AbortSignal,
  ): Promise<ToolResult> => {
    const config = connection.config;
    const client = connection.client;
    if (connection.status.state !== 'connected' || !client) return unavailable(config.name);
    const attempt = connection.attempt;
    const timeoutSeconds = config.timeout ?? DEFAULT_CALL_TIMEOUT_SECONDS;
    const argumentsObject = (tool.wrapped ? (args as { value?: unknown } | null)?.value : args) ?? {};
    try {
      // The SDK sends notifications/cancelled when the signal aborts or the timeout passes.
      const result = await client.callTool(
        { name: tool.name, arguments: argumentsObject as Record<string, unknown> },
        undefined,
        {
          signal,
          timeout: toMilliseconds(config.timeout, DEFAULT_CALL_TIMEOUT_SECONDS),
        },
      );
      return mapResult(result as Record<string, unknown>);
    } catch (error) {
      // The loop turns an abort into a cancelled call; the SDK reports it as a timeout, so the signal decides.
      if (signal.aborted) throw signal.reason ?? error;
      if (connection.retired || connection.attempt !== attempt || connection.status.state !== 'connected') {
        return unavailable(config.name, 'the connection closed during the call');
      }
      mcpSdk ??= loadMcpSdk();
      const sdk = await mcpSdk;
      if (error instanceof sdk.McpError) {
        if (error.code === sdk.ErrorCode.RequestTimeout) {
          return {
            content: `MCP tool ${tool.name} on server ${config.name} did not answer within ${timeoutSeconds} s`,
            isError: true,
            status: 'failed',
          };
        }
        if (error.code === sdk.ErrorCode.ConnectionClosed) {
          markDisconnected(connection, attempt, messageOf(error));
          return unavailable(config.name, 'the connection closed during the call');
        }
        return {
          content: `MCP tool ${tool.name} on server ${config.name} failed: ${error.message}`,
          isError: true,
          status: 'failed',
        };
      }
      // Anything else is the transport failing (an HTTP server that went away): the server is gone until a reload.
      if (isHttpTransport(connection.transport)) {
        markDisconnected(connection, attempt, messageOf(error));
        return unavailable(config.name, messageOf(error));
      }
      return {
        content: `MCP tool ${tool.name} on server ${config.name} failed: ${messageOf(error)}`,
        isError: true,
        status: 'failed',
      };
    }
  };

  function defineTool(name: string, tool: ListedTool, connection: Connection): ToolDefinition {
    return {
      name,
      description: tool.description,
      inputSchema: tool.inputSchema,
      toolset: 'mcp',
      kind: 'other',
      readOnly: tool.readOnly,
      display: () => ({ title: `${connection.config.name}: ${tool.name}` }),
      // Looked up again at call time: a turn keeps the definitions it sent even after a reload (§15.2).
      async execute(args, context: ToolContext) {
        if (reloading)
          await untilAborted(reloading, context.signal).catch((error: unknown) => {
            if (context.signal.aborted) throw error;
          });
        const visible = visibleFor(context.sessionId).byName.get(name);
        if (!visible) return { content: `Tool ${name} is no longer available`, isError: true, status: 'failed' };
        return callTool(visible.connection, visible.tool, args, context.signal);
      },
    };
  }

  const toolNamesBySession = (): Map<string, string> => {
    const sessions = new Set<string>([
      ...host.liveAgents().map((agent) => agent.sessionId),
      ...sessionConnections.keys(),
    ]);
    return new Map(
      [...sessions].map((sessionId) => [
        sessionId,
        visibleFor(sessionId)
          .tools.map((tool) => tool.name)
          .join('\n'),
      ]),
    );
  };

  const queueForSession = <T>(sessionId: string, task: () => Promise<T>): Promise<T> => {
    const previous = sessionQueues.get(sessionId) ?? Promise.resolve();
    const next = previous.then(task, task);
    const settled = next.catch(() => {});
    sessionQueues.set(sessionId, settled);
    void settled.then(() => {
      if (sessionQueues.get(sessionId) === settled) sessionQueues.delete(sessionId);
    });
    return next;
  };

  const snapshot = (connections: Iterable<Connection>) =>
    [...connections].map((connection) => ({ ...connection.status }));

  const status = () => snapshot([...hostConnections, ...shared.values()]);

  return {
    start() {
      if (closed) return Promise.resolve();
      hostConnections = buildHostConnections();
      changed();
      if (!options.connect) {
        for (const connection of hostConnections) connection.status.state = 'disabled';
        return starting;
      }
      // Host creation waits for each server at most its own connect_timeout; a failure only marks the server.
      starting = Promise.all(hostConnections.filter(enabled).map((connection) => connect(connection, null))).then(
        () => {},
      );
      return starting;
    },

    status,

    async reload(options = {}) {
      await starting;
      const previousReload = reloading ?? Promise.resolve();
      const run = async (): Promise<McpServerStatus[]> => {
        await previousReload.catch(() => {});
        if (closed) return status();
        const before = toolNamesBySession();
        // In-flight calls on the old connections end with an error result (§15.2).
        const closes = hostConnections.map(retire);
        hostConnections = buildHostConnections();
        // A reload asked from a session lets that session's client answer the host servers' missing variables.
        const asking = options.sessionId ?? null;
        const reconnects = hostConnections.filter(enabled).map((connection) => connect(connection, asking));
        // Session servers keep their configuration but reconnect too: a reload is how a failed server comes back.
        for (const connection of shared.values()) {
          if (!enabled(connection)) continue;
          closes.push(dropClient(connection));
          reconnects.push(connect(connection, [...connection.users][0] ?? null));
        }
        changed();
        await Promise.all(reconnects);
        await Promise.all(closes);
        const after = toolNamesBySession();
        const affected = [...after.keys()].filter((sessionId) => before.get(sessionId) !== after.get(sessionId));
        notify(affected, 'mcp_tools_changed', 'The MCP servers were reloaded and the available MCP tools changed.');
        return status();
      };
      const current = run();
      reloading = current;
      try {
        return await current;
      } finally {
        if (reloading === current) reloading = null;
      }
    },

    askMissingVariables(sessionId) {
      if (closed) return [];
      const retried: string[] = [];
      for (const connection of hostConnections) {
        if (connection.retired || !connection.missingVariable || connection.status.state !== 'failed') continue;
        retried.push(connection.config.name);
        void connect(connection, sessionId).then(() => {
          if (connection.status.state !== 'connected') return;
          notify(
            audienceOf(connection),
            'mcp_tools_changed',
            `MCP server ${connection.config.name} connected and its tools are available.`,
          );
        });
      }
      return retried;
    },

    attachSessionServers(sessionId, servers) {
      return queueForSession(sessionId, async () => {
        if (closed) return [];
        const previous = sessionConnections.get(sessionId) ?? [];
        const next: Connection[] = [];
        for (const server of servers) {
          const key = canonicalJson(server);
          let connection = shared.get(key);
          if (!connection) {
            connection = newConnection({ ...server }, key, 'session');
            shared.set(key, connection);
            if (enabled(connection)) void connect(connection, sessionId);
          }
          connection.users.add(sessionId);
          if (!next.includes(connection)) next.push(connection);
        }
        if (next.length > 0) sessionConnections.set(sessionId, next);
        else {
          sessionConnections.delete(sessionId);
          views.delete(`session:${sessionId}`);
        }
        changed();
        const closes: Promise<void>[] = [];
        for (const connection of previous) {
          if (next.includes(connection)) continue;
          connection.users.delete(sessionId);
          if (connection.users.size === 0) {
            shared.delete(connection.key);
            closes.push(retire(connection));
          }
        }
        // A reload meanwhile starts a new attempt; the answer reports the latest one.
        for (;;) {
          const attempts = next.map((connection) => connection.ready);
          await Promise.all(attempts);
          if (next.every((connection, index) => connection.ready === attempts[index])) break;
        }
        await Promise.all(closes);
        return snapshot(next);
      });
    },

    toolsFor(sessionId) {
      return visibleFor(sessionId).tools;
    },

    async close() {
      if (closed) return;
      closed = true;
      const connections = [...hostConnections, ...shared.values()];
      const closes = connections.map(retire);
      // Attempts still connecting end quickly now that their clients are closed and their signals aborted.
      await Promise.all(connections.map((connection) => connection.ready));
      await Promise.all(closes);
      await Promise.all([...closing]);
      shared.clear();
      sessionConnections.clear();
      views.clear();
    },
  };
}

/** The last few lines of a server's stderr, for a failure message. */
function lastLines(text: string): string {
  return text.trim().split('\n').slice(-3).join(' | ');
}
