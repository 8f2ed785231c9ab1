import { statSync } from 'node:fs';
import { isAbsolute, normalize, resolve as resolvePath } from 'node:path';
import {
  type AgentApp,
  type AgentContext,
  agent as createAgentApp,
  type InitializeResponse,
  type McpServer,
  RequestError,
  type SessionId,
} from '@agentclientprotocol/sdk/unstable';
import type {
  Agent,
  AgentHost,
  ApprovalRequest,
  CommandRunner,
  FileAccess,
  Logger,
  McpServerConfig,
  ResumeOptions,
} from '@hermes/core';
import * as z from 'zod';
import { type AcpCommandRegistry, createAcpCommandRegistry } from './acp-commands.js';
import { AcpSession, type SessionEnvironment } from './acp-session.js';
import { type ClientSeamCapabilities, createClientCommandRunner, createClientFileAccess } from './client-seams.js';
import { type CoreModule, importCore } from './core-module.js';
import { replayUpdates, ToolCallIds } from './history-replay.js';
import { initializeResponse, readInitializeCapabilities } from './initialize.js';
import { validatePrompt } from './prompt-content.js';
import { CHECK_HINT, firstLine, toRequestError } from './request-errors.js';
import {
  isSessionModeId,
  modelState,
  modelValues,
  modeState,
  REASONING_EFFORT_OPTIONS,
  type SessionModeId,
} from './session-config.js';
import { WireOrder } from './wire-order.js';

/** Waits at most this long for client MCP servers during set-up (spec/acp.md §13). */
const MCP_ATTACH_LIMIT_MS = 10_000;

/** The request methods the agent answers in v1 (spec/acp.md §1.3). */
export const ACP_REQUEST_METHODS = [
  'initialize',
  'authenticate',
  'session/new',
  'session/load',
  'session/list',
  'session/resume',
  'session/close',
  'session/fork',
  'session/prompt',
  'session/set_mode',
  'session/set_config_option',
  'session/set_model',
] as const;

/**
 * Params of the legacy unstable `session/set_model` (removed from the SDK schema, still sent by
 * clients such as acpx when a session advertises `models`; see docs/adr/0009).
 */
const setModelParams = z.object({ sessionId: z.string(), modelId: z.string() });

/** Options of {@link createAcpAgent}. */
export interface AcpAgentOptions {
  /**
   * Creates the core host. Called once, right after the first `initialize` response, so that
   * nothing slow runs before it (spec/acp.md §2.4); the agent imports `@hermes/core` just before.
   * The host must not connect configured MCP servers itself (`connectMcp: false`); the agent
   * starts them in the background.
   */
  createHost: () => Promise<AgentHost>;
  /** `agentInfo.version`: the CLI version. */
  version: string;
  /** Log lines go here (stderr in the CLI). */
  logger: Logger;
}

/** An ACP agent for one connection: the SDK app plus its shutdown. */
export interface AcpAgent {
  /** The SDK agent app with every v1 handler registered, not connected. */
  readonly app: AgentApp;
  /** The slash commands advertised to this connection's sessions; `register` adds more (§6.3). */
  readonly commands: AcpCommandRegistry;
  /**
   * Sees every incoming message in wire order, before the SDK dispatches it; `serveAcp` calls it.
   * A `session/cancel` takes effect here, so whether it covers a prompt follows the wire order
   * rather than the order the SDK happens to run handlers in (spec/acp.md §7.1).
   */
  observeIncoming(message: unknown): void;
  /**
   * Lets sessions send the deltas of one event-loop turn to the SDK as one `NotificationBatch`;
   * `serveAcp` calls it, since its writable (an `NdjsonSink`) writes a batch as one line per
   * notification. Without it every update is its own SDK send. `congested` tells when the output
   * holds more than the client has taken: text chunks queued meanwhile are then merged (ADR 0025).
   */
  useNotificationBatches(options?: { congested?: () => boolean }): void;
  /** The core host once created, for tests and shutdown. */
  host(): Promise<AgentHost>;
  /** Releases client terminals, closes sessions and the core host. Idempotent. */
  close(): Promise<void>;
}

function validateCwd(cwd: string): string {
  if (!isAbsolute(cwd)) throw RequestError.invalidParams({ cwd }, 'cwd must be an absolute path');
  const normalized = normalize(resolvePath(cwd));
  let isDirectory = false;
  try {
    isDirectory = statSync(normalized).isDirectory();
  } catch {
    isDirectory = false;
  }
  if (!isDirectory) throw RequestError.invalidParams({ cwd }, 'cwd must be an existing directory');
  return normalized.length > 1 && normalized.endsWith('/') ? normalized.slice(0, -1) : normalized;
}

function mcpConfigs(servers: readonly McpServer[] | undefined, logger: Logger): McpServerConfig[] {
  const byName = new Map<string, McpServerConfig>();
  for (const server of servers ?? []) {
    let config: McpServerConfig | undefined;
    if (!('type' in server) || server.type === undefined) {
      const stdio = server as Extract<McpServer, { command: string }>;
      config = {
        name: stdio.name,
        command: stdio.command,
        args: stdio.args,
        env: Object.fromEntries(stdio.env.map((variable) => [variable.name, variable.value])),
      };
    } else if (server.type === 'http') {
      config = {
        name: server.name,
        url: server.url,
        headers: Object.fromEntries(server.headers.map((header) => [header.name, header.value])),
      };
    } else {
      logger.warn(`MCP server "${server.name}" uses the unsupported transport "${server.type}"; skipped`);
      continue;
    }
    if (byName.has(config.name)) logger.warn(`MCP server "${config.name}" is listed twice; the later entry is used`);
    byName.set(config.name, config);
  }
  return [...byName.values()];
}

/** What the handlers work with once the core is loaded: the host and this connection's seams. */
interface CoreRuntime {
  core: CoreModule;
  host: AgentHost;
  files: FileAccess;
  commands: CommandRunner;
}

/**
 * Builds the ACP agent (spec/acp.md): the SDK agent app with one handler per v1 method, over a
 * core host created lazily after `initialize`.
 */
export function createAcpAgent(options: AcpAgentOptions): AcpAgent {
  const logger = options.logger;
  const sessions = new Map<string, AcpSession>();
  const commands = createAcpCommandRegistry();
  const wire = new WireOrder();
  let capabilities: ClientSeamCapabilities = { readTextFile: false, writeTextFile: false, terminal: false };
  let client: AgentContext | undefined;
  let runtimePromise: Promise<CoreRuntime> | undefined;
  let closed = false;
  let batches = false;
  let congested: () => boolean = () => false;
  const unsubscribes: (() => void)[] = [];
  // Open sessions announce the new command list when commands are registered or skills reloaded (§6.3).
  const announceCommands = (): void => {
    for (const session of sessions.values()) {
      session
        .sendAvailableCommands()
        .catch((error: unknown) => logger.warn('announcing the commands failed', { error: String(error) }));
    }
  };
  unsubscribes.push(commands.onChange(announceCommands));

  const getClient = (): AgentContext => {
    if (!client) throw new Error('The ACP connection is not open');
    return client;
  };
  const seamContext = {
    capabilities: () => capabilities,
    client: getClient,
    session: (sessionId: string) => sessions.get(sessionId),
  };
  const ensureRuntime = (): Promise<CoreRuntime> => {
    runtimePromise ??= importCore().then(async (core) => {
      const host = await options.createHost();
      // The editor is typing its first prompt meanwhile; its reply need not wait for the model's package to load.
      setImmediate(() => void host.warmModel());
      unsubscribes.push(host.skills.onReload(announceCommands));
      if (Object.keys(host.config.mcp_servers ?? {}).length > 0) {
        void host.mcp
          .reload()
          .catch((error: unknown) => logger.warn('configured MCP servers failed', { error: String(error) }));
      }
      return {
        core,
        host,
        files: createClientFileAccess(seamContext, core.createLocalFileAccess()),
        commands: createClientCommandRunner(seamContext, core.createLocalCommandRunner()),
      };
    });
    return runtimePromise;
  };
  const ensureHost = (): Promise<AgentHost> => ensureRuntime().then((runtime) => runtime.host);
  const requireRuntime = async (): Promise<CoreRuntime> => {
    try {
      return await ensureRuntime();
    } catch (error) {
      const message = firstLine(error instanceof Error ? error.message : String(error));
      throw new RequestError(-32603, `The Hermes configuration is broken: ${message} ${CHECK_HINT}`);
    }
  };
  const requireCredentials = (host: AgentHost): void => {
    try {
      host.resolveModel(host.config.model.default ?? '');
    } catch (error) {
      const mapped = toRequestError(error);
      if (mapped.code === -32000) throw mapped;
      throw RequestError.authRequired(undefined, firstLine(mapped.message));
    }
  };
  const activeSession = (sessionId: SessionId): AcpSession => {
    const session = sessions.get(sessionId);
    if (!session) throw RequestError.sessionNotFound(sessionId);
    return session;
  };

  const initialMode = (host: AgentHost): SessionModeId =>
    host.config.approvals.yolo || host.config.approvals.mode === 'off' ? 'yolo' : 'default';
  const callbacksFor = (sessionId: () => string) => ({
    approve: (request: ApprovalRequest, signal: AbortSignal) => {
      const session = sessions.get(sessionId()) ?? sessions.get(request.sessionId);
      if (!session) return Promise.resolve('deny' as const);
      return session.approve(request, signal);
    },
  });

  const attachMcp = async (
    host: AgentHost,
    session: AcpSession,
    servers: readonly McpServer[] | undefined,
    replace: boolean,
  ) => {
    const configs = mcpConfigs(servers, logger);
    session.clientMcpServers = configs.map((config) => config.name);
    if (configs.length === 0 && !replace) return;
    let timer: NodeJS.Timeout | undefined;
    const attached = host.mcp.attachSessionServers(session.sessionId, configs).then((statuses) => {
      for (const status of statuses) {
        if (status.state === 'failed')
          logger.warn(`MCP server "${status.name}" failed: ${status.error ?? 'unknown error'}`);
      }
    });
    await Promise.race([
      attached.catch((error: unknown) => logger.warn('attaching MCP servers failed', { error: String(error) })),
      new Promise<void>((resolve) => (timer = setTimeout(resolve, MCP_ATTACH_LIMIT_MS))),
    ]);
    clearTimeout(timer);
  };

  const environment = (runtime: CoreRuntime): SessionEnvironment => ({
    core: runtime.core,
    host: runtime.host,
    client: getClient,
    logger,
    files: runtime.files,
    commands,
    version: options.version,
    nextSeq: () => wire.next(),
    batches: () => batches,
    congested: () => congested(),
  });

  /** Opens a stored session (load, resume, fork target) with this connection's seams. */
  const openStored = async (runtime: CoreRuntime, sessionId: string, cwd: string): Promise<Agent> => {
    const resumeOptions: ResumeOptions = {
      cwd,
      callbacks: callbacksFor(() => sessionId),
      fileAccess: runtime.files,
      commandRunner: runtime.commands,
    };
    const agent = await runtime.host.resumeSession(sessionId, resumeOptions);
    if (agent.cwd !== cwd) await agent.setCwd(cwd);
    return agent;
  };

  const setupResponse = (session: AcpSession) => ({
    modes: modeState(session.mode),
    configOptions: session.configOptions(),
    models: modelState(session.configOptions()),
  });

  /** Switches the session's model (session-scoped); the core's `model.switched` sends `config_option_update`. */
  const switchSessionModel = async (session: AcpSession, value: string): Promise<void> => {
    const { host } = await requireRuntime();
    const current = session.agent.model?.spec ?? null;
    if (!modelValues(host.listModels(), current).includes(value)) {
      throw RequestError.invalidParams({ value }, `Unknown model "${value}"`);
    }
    const result = await session.agent.switchModel(value, { persist: 'session' });
    if (!result.ok) throw new RequestError(-32603, firstLine(result.error?.message ?? 'The model switch failed'));
  };

  const afterResponse = (work: () => Promise<void>) => {
    setImmediate(
      () =>
        void work().catch((error: unknown) => logger.debug('post-response updates failed', { error: String(error) })),
    );
  };

  const app = createAgentApp({ name: 'hermes-agent' })
    .onConnect((connection) => {
      client = connection.client;
    })
    .onRequest('initialize', ({ params }): InitializeResponse => {
      const read = readInitializeCapabilities(params.clientCapabilities);
      capabilities = { readTextFile: read.readTextFile, writeTextFile: read.writeTextFile, terminal: read.terminal };
      if (params.clientInfo) logger.info(`client: ${params.clientInfo.name} ${params.clientInfo.version ?? ''}`.trim());
      // The host is created once the response is on its way (§2.4).
      setImmediate(
        () => void ensureHost().catch((error: unknown) => logger.error(`cannot start the core: ${String(error)}`)),
      );
      // The same function answers an `initialize` read before the SDK loaded (initialize.ts).
      return initializeResponse(read, options.version);
    })
    .onRequest('authenticate', async ({ params }) => {
      if (params.methodId !== 'api-key-env') {
        throw RequestError.invalidParams(
          { methodId: params.methodId },
          `Unknown authentication method "${params.methodId}"`,
        );
      }
      const { host } = await requireRuntime();
      await host.reloadConfig();
      requireCredentials(host);
      return {};
    })
    .onRequest('session/new', async ({ params }) => {
      const cwd = validateCwd(params.cwd);
      const runtime = await requireRuntime();
      const { host } = runtime;
      requireCredentials(host);
      if (params.additionalDirectories && params.additionalDirectories.length > 0) {
        logger.warn('additionalDirectories is not supported and is ignored');
      }
      let sessionId = '';
      const agent = await host
        .newSession({
          source: 'acp',
          cwd,
          callbacks: callbacksFor(() => sessionId),
          fileAccess: runtime.files,
          commandRunner: runtime.commands,
        })
        .catch((error: unknown) => {
          throw toRequestError(error);
        });
      sessionId = agent.sessionId;
      const session = new AcpSession({
        agent,
        mode: initialMode(host),
        ids: new ToolCallIds(),
        environment: environment(runtime),
      });
      session.agent.setYolo(session.mode === 'yolo');
      await attachMcp(host, session, params.mcpServers, false);
      sessions.set(agent.sessionId, session);
      afterResponse(() => session.sendSetupUpdates({ title: false }));
      return { sessionId: agent.sessionId, ...setupResponse(session) };
    })
    .onRequest('session/load', async ({ params, signal }) => {
      const cwd = validateCwd(params.cwd);
      const runtime = await requireRuntime();
      const { host } = runtime;
      const row = await host.store.getSession(params.sessionId);
      if (!row) throw RequestError.sessionNotFound(params.sessionId);
      requireCredentials(host);
      const previous = sessions.get(params.sessionId);
      if (previous?.hasPromptsInProgress || host.getAgent(params.sessionId)?.busy) {
        throw RequestError.invalidParams({ sessionId: params.sessionId }, 'session has a prompt in progress');
      }
      if (previous) {
        previous.detach();
        sessions.delete(params.sessionId);
      }
      const agent = await openStored(runtime, params.sessionId, cwd).catch((error: unknown) => {
        throw toRequestError(error);
      });
      const ids = new ToolCallIds();
      const session = new AcpSession({ agent, mode: initialMode(host), ids, environment: environment(runtime) });
      session.agent.setYolo(session.mode === 'yolo');
      await attachMcp(host, session, params.mcpServers, true);
      let updates: ReturnType<typeof replayUpdates>;
      try {
        const rows = await host.store.loadConversation(params.sessionId, { includeInactive: true });
        updates = replayUpdates({ host, rows, cwd, ids });
      } catch (error) {
        session.detach();
        throw new RequestError(-32603, `The history could not be read: ${firstLine(String(error))}`);
      }
      for (const update of updates) {
        if (signal.aborted) break;
        void session.send(update);
      }
      await session.flush();
      if (signal.aborted) {
        session.detach();
        throw RequestError.requestCancelled();
      }
      sessions.set(params.sessionId, session);
      afterResponse(() => session.sendSetupUpdates({ title: true }));
      return setupResponse(session);
    })
    .onRequest('session/resume', async ({ params }) => {
      const cwd = validateCwd(params.cwd);
      const runtime = await requireRuntime();
      const { host } = runtime;
      const row = await host.store.getSession(params.sessionId);
      if (!row) throw RequestError.sessionNotFound(params.sessionId);
      requireCredentials(host);
      const previous = sessions.get(params.sessionId);
      if (previous?.hasPromptsInProgress) {
        throw RequestError.invalidParams({ sessionId: params.sessionId }, 'session has a prompt in progress');
      }
      previous?.detach();
      const agent = await openStored(runtime, params.sessionId, cwd).catch((error: unknown) => {
        throw toRequestError(error);
      });
      const ids = new ToolCallIds();
      // Ids already used in the history stay reserved, so live calls never reuse them (§9.1).
      replayUpdates({
        host,
        rows: await host.store.loadConversation(params.sessionId, { includeInactive: true }),
        cwd,
        ids,
      });
      const session = new AcpSession({ agent, mode: initialMode(host), ids, environment: environment(runtime) });
      session.agent.setYolo(session.mode === 'yolo');
      await attachMcp(host, session, params.mcpServers, true);
      sessions.set(params.sessionId, session);
      afterResponse(() => session.sendSetupUpdates({ title: true }));
      return setupResponse(session);
    })
    .onRequest('session/fork', async ({ params }) => {
      const cwd = validateCwd(params.cwd);
      const runtime = await requireRuntime();
      const { host } = runtime;
      const source = sessions.get(params.sessionId);
      const live = host.getAgent(params.sessionId);
      const row = await host.store.getSession(params.sessionId);
      if (!row && !live) throw RequestError.sessionNotFound(params.sessionId);
      requireCredentials(host);
      if (source?.hasPromptsInProgress || live?.busy) {
        throw RequestError.invalidParams({ sessionId: params.sessionId }, 'session has a prompt in progress');
      }
      let forkId: string;
      if (live && !live.persisted) {
        // The core persists a live, never-prompted source before copying it.
        const branched = await live.branch();
        forkId = branched.sessionId;
        await branched.close();
      } else {
        forkId = (await host.store.branch(params.sessionId)).id;
      }
      const agent = await openStored(runtime, forkId, cwd).catch((error: unknown) => {
        throw toRequestError(error);
      });
      const ids = new ToolCallIds();
      replayUpdates({ host, rows: await host.store.loadConversation(forkId, { includeInactive: true }), cwd, ids });
      const session = new AcpSession({
        agent,
        mode: source?.mode ?? initialMode(host),
        ids,
        environment: environment(runtime),
      });
      session.agent.setYolo(session.mode === 'yolo');
      await attachMcp(host, session, params.mcpServers, false);
      sessions.set(forkId, session);
      afterResponse(() => session.sendSetupUpdates({ title: false }));
      return { sessionId: forkId, ...setupResponse(session) };
    })
    .onRequest('session/list', async ({ params }) => {
      if (params.cwd !== undefined && params.cwd !== null && !isAbsolute(params.cwd)) {
        throw RequestError.invalidParams({ cwd: params.cwd }, 'cwd must be an absolute path');
      }
      const { host } = await requireRuntime();
      const cwdFilter = params.cwd ? normalize(params.cwd).replace(/(.)\/$/, '$1') : undefined;
      let page: Awaited<ReturnType<AgentHost['store']['listSessions']>>;
      try {
        page = await host.store.listSessions({
          ...(cwdFilter ? { cwd: cwdFilter } : {}),
          ...(params.cursor ? { cursor: params.cursor } : {}),
        });
      } catch (error) {
        throw RequestError.invalidParams(
          { cursor: params.cursor },
          firstLine(error instanceof Error ? error.message : String(error)),
        );
      }
      return {
        sessions: page.items.map((item) => ({
          sessionId: item.id,
          cwd: item.cwd ?? '/',
          ...(item.title ? { title: item.title } : {}),
          updatedAt: new Date(item.lastActivityAt).toISOString(),
        })),
        ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}),
      };
    })
    .onRequest('session/close', async ({ params }) => {
      const session = activeSession(params.sessionId);
      sessions.delete(params.sessionId);
      await session.close();
      return {};
    })
    .onRequest('session/prompt', async ({ params, signal, requestId }) => {
      const seq = wire.takePrompt(requestId);
      const session = activeSession(params.sessionId);
      validatePrompt(params.prompt);
      return session.prompt(params.prompt, signal, seq);
    })
    .onRequest('session/set_mode', async ({ params }) => {
      const session = activeSession(params.sessionId);
      if (!isSessionModeId(params.modeId)) {
        throw RequestError.invalidParams({ modeId: params.modeId }, `Unknown mode "${params.modeId}"`);
      }
      await session.setMode(params.modeId, { currentModeUpdate: false, configOptionUpdate: true });
      return {};
    })
    .onRequest('session/set_config_option', async ({ params }) => {
      const session = activeSession(params.sessionId);
      const value = (params as { value?: unknown }).value;
      if (typeof value !== 'string')
        throw RequestError.invalidParams({ configId: params.configId }, 'Only select values exist');
      switch (params.configId) {
        case 'mode':
          if (!isSessionModeId(value)) throw RequestError.invalidParams({ value }, `Unknown mode "${value}"`);
          await session.setMode(value, { currentModeUpdate: true, configOptionUpdate: false });
          break;
        case 'model':
          await switchSessionModel(session, value);
          break;
        case 'reasoning_effort': {
          if (!REASONING_EFFORT_OPTIONS.some((option) => option.value === value)) {
            throw RequestError.invalidParams({ value }, `Unknown reasoning effort "${value}"`);
          }
          await session.agent.setReasoningEffort(
            value === 'default' ? null : (value as 'none' | 'low' | 'medium' | 'high'),
          );
          break;
        }
        default:
          throw RequestError.invalidParams({ configId: params.configId }, `Unknown config option "${params.configId}"`);
      }
      return { configOptions: session.configOptions() };
    })
    .onRequest('session/set_model', setModelParams, async ({ params }) => {
      const session = activeSession(params.sessionId);
      await switchSessionModel(session, params.modelId);
      await session.flush();
      return {};
    })
    .onNotification('session/cancel', ({ params }) => {
      // Already applied in wire order by observeIncoming, unless the message bypassed it.
      if (wire.takeAppliedCancel(params.sessionId)) return;
      sessions.get(params.sessionId)?.cancel();
    });

  return {
    app,
    commands,
    observeIncoming(message) {
      const observed = wire.observe(message);
      if (observed) sessions.get(observed.cancel.sessionId)?.cancel(observed.cancel.seq);
    },
    useNotificationBatches(options) {
      batches = true;
      if (options?.congested) congested = options.congested;
    },
    host: ensureHost,
    async close() {
      if (closed) return;
      closed = true;
      for (const unsubscribe of unsubscribes.splice(0)) unsubscribe();
      const open = [...sessions.values()];
      sessions.clear();
      // Each session's turn is cancelled and awaited, so a command it started is killed before the core closes
      // (and before the process may exit): cancelling without waiting could leave that command running.
      await Promise.allSettled(open.map((session) => session.close()));
      if (!runtimePromise) return;
      const host = await ensureHost().catch(() => undefined);
      await host?.close().catch((error: unknown) => logger.warn('closing the core failed', { error: String(error) }));
    },
  };
}
