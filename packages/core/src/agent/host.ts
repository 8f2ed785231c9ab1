import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import type { SharedV3ProviderOptions } from '@ai-sdk/provider';
import type {
  Agent,
  AgentHost,
  CommandRegistry,
  HostEvent,
  OpenSessionOptions,
  ResumeOptions,
  SessionOptions,
} from '../api/types.js';
import {
  alwaysScopeOf,
  type CommandAllowlistEntry,
  type CommandAllowlistListing,
  listCommandAllowlist,
  sameAllowlistEntry,
} from '../approvals/allowlist.js';
import { PATTERN_KEYS } from '../approvals/detect.js';
import { FileCheckpointStore } from '../checkpoints/file-checkpoints.js';
import { systemClock } from '../clock.js';
import { createCommandRegistry } from '../commands/registry.js';
import {
  appendCommandAllowlist,
  ensureHomeDir,
  type LoadedConfig,
  loadConfig,
  removeCommandAllowlist,
  resolveHomeDir,
  secretValues,
  setDefaultModel,
  writeDotenvValue,
} from '../config/index.js';
import { HermesError } from '../errors.js';
import { newId, newSessionId } from '../ids.js';
import { LiveSessionHub } from '../live-session-hub.js';
import { createStderrLogger } from '../logger.js';
import { createMcpManager, type McpManagerInternal } from '../mcp/manager.js';
import type { McpManager } from '../mcp/types.js';
import { costStatusFor, createProviderCatalog, type ProviderCatalog } from '../providers/index.js';
import type { ProviderAdapter, ResolvedRoute } from '../providers/types.js';
import { collectHostSecrets } from '../security/host-secrets.js';
import { SecretRedactor } from '../security/secret-redactor.js';
import { createSkillRegistry } from '../skills/registry.js';
import { createSkillTools } from '../skills/skill-tools.js';
import type { SkillRegistry } from '../skills/types.js';
import { openSessionStore, resolveStoreLocation } from '../store/index.js';
import type { SessionRow, SessionStore, StoredMessage, TurnLease, UsageByModelRow } from '../store/types.js';
import { clientTools } from '../tools/client-tools.js';
import {
  builtinTools,
  createLocalCommandRunner,
  createLocalFileAccess,
  createProcessRegistry,
  createToolRegistry,
} from '../tools/index.js';
import { isInside, resolveToolPath } from '../tools/paths.js';
import { expandHermesHome, POLICY_PATHS } from '../tools/protected-paths.js';
import { type CommandSandbox, resolveSandbox, type SandboxStatus } from '../tools/sandbox.js';
import { buildSubprocessEnv } from '../tools/subprocess-env.js';
import type { ProcessRegistry, ToolDefinition, ToolRegistry, ToolSettings } from '../tools/types.js';
import { markBuiltinFetch } from '../tools/web-fetch.js';
import { TurnsInFlight } from '../turns-in-flight.js';
import type { Clock, CostStatus, DeepPartial, HostCallbacks, Logger, ModelOption, Usage } from '../types.js';
import { BoundedMemo } from '../util/bounded-memo.js';
import { AgentCore } from './agent.js';
import type { HostContext } from './internals.js';
import type { HermesSettings } from './settings.js';
import { SpawnGate } from './spawn-gate.js';
import { toFunctionTool } from './turn-model.js';

export type { AgentHost, HostEvent };

/** Options of {@link createAgentHost} (spec/core.md §5.1). */
export interface AgentHostOptions {
  homeDir?: string;
  /** Overrides config.yaml. */
  config?: DeepPartial<HermesSettings>;
  /** Replaces process.env as the environment source. */
  env?: Record<string, string | undefined>;
  /**
   * SQLite file path, ':memory:', or a postgres:// URL; default HERMES_DATABASE_URL, then the
   * config's `database.url`, then <home>/state.db.
   */
  database?: string;
  callbacks?: HostCallbacks;
  /** Extra or replacement providers. */
  providers?: ProviderAdapter[];
  /** Extra tools. */
  tools?: ToolDefinition[];
  /**
   * Passed to every AI SDK provider and to web_fetch. Without it, web_fetch uses the global fetch and an
   * OpenAI-compatible model's stream calls go out through node:http (ADR 0026).
   */
  fetch?: typeof globalThis.fetch;
  /** Default true. */
  connectMcp?: boolean;
  logger?: Logger;
  clock?: Clock;
  /**
   * Where the ids of new sessions come from, given the clock's time; default the spec's `YYYYMMDD_HHMMSS_xxxxxx`
   * (spec/core.md §3). An id that a live session or a turn in flight of this host already holds is drawn again.
   */
  generateSessionId?: (now: number) => string;
  /** Lease holder identity; default `<instance id or hostname>:<pid>:<random>`. */
  holderId?: string;
  /**
   * More secrets by name (a server's API key, its gateway token): never passed to a subprocess and
   * redacted from tool output as `[REDACTED:<name>]`, like the secrets the host finds itself.
   */
  secrets?: Readonly<Record<string, string>>;
  /**
   * A name this server keeps across restarts, unique among the processes sharing its store (default: the
   * `HERMES_INSTANCE_ID` variable, else none). A host that starts reclaims at once the turn leases and runs of every
   * earlier process of that name; without one it does so for ended processes of its hostname only.
   */
  instanceId?: string;
}

/**
 * Draws of a new session id before the host gives up: with the default ids a second draw is already needed less than
 * once in ten thousand sessions of a burst, so only a generator that keeps answering ids in use reaches this.
 */
const MAX_SESSION_ID_DRAWS = 16;

function sessionIdsExhausted(holder: string): HermesError {
  return new HermesError(
    'session_id_exhausted',
    `No unused session id after ${MAX_SESSION_ID_DRAWS} draws: every id drawn ${holder}.`,
  );
}

class HostImpl implements HostContext {
  readonly homeDir: string;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly store: SessionStore;
  readonly tools: ToolRegistry;
  readonly processes: ProcessRegistry;
  readonly commands: CommandRegistry;
  readonly skills: SkillRegistry;
  readonly holderId: string;
  /** `AgentHostOptions.instanceId` or `HERMES_INSTANCE_ID`; null when neither is set. */
  private readonly instanceId: string | null;
  readonly fetch: typeof globalThis.fetch;
  readonly callbacks: HostCallbacks;
  readonly defaultFileAccess = createLocalFileAccess();
  readonly checkpoints = new FileCheckpointStore({ now: () => this.clock.now() });
  readonly defaultCommandRunner = createLocalCommandRunner();
  readonly spawnGate = new SpawnGate();
  readonly turns = new TurnsInFlight();
  readonly live: LiveSessionHub;
  sandbox: SandboxStatus;
  /** The session store's own files when it is a SQLite file outside HERMES_HOME (protected like state.db). */
  private readonly storeFiles: string[];
  private redactor: SecretRedactor | null = null;
  private loaded: LoadedConfig;
  private catalog: ProviderCatalog;
  private readonly agents = new Map<string, AgentCore>();
  private readonly listeners = new Set<(event: HostEvent) => void>();
  private readonly options: AgentHostOptions;
  private closed = false;
  /** Warm-ups started, by model spec: sessions open often, and each model is warmed once. */
  private readonly warmUps = new BoundedMemo<string, Promise<void>>();
  /** Set once the warm-up has had the store compile its per-turn statements. */
  private storePrepared = false;
  private stopRunHeartbeat: (() => void) | null = null;
  mcpManager!: McpManagerInternal;

  constructor(init: {
    options: AgentHostOptions;
    homeDir: string;
    loaded: LoadedConfig;
    logger: Logger;
    clock: Clock;
    store: SessionStore;
    sandbox: SandboxStatus;
    storeFiles: string[];
  }) {
    this.options = init.options;
    this.sandbox = init.sandbox;
    this.storeFiles = init.storeFiles;
    this.homeDir = init.homeDir;
    this.loaded = init.loaded;
    this.logger = init.logger;
    this.clock = init.clock;
    this.store = init.store;
    this.fetch = init.options.fetch ?? markBuiltinFetch(globalThis.fetch.bind(globalThis));
    this.callbacks = init.options.callbacks ?? {};
    const instanceId = init.options.instanceId ?? init.loaded.lookup('HERMES_INSTANCE_ID')?.trim();
    this.instanceId = instanceId ? instanceId : null;
    this.holderId = init.options.holderId ?? `${this.instanceId ?? hostname()}:${process.pid}:${newId('', 8)}`;
    liveHoldersOfThisProcess().add(this.holderId);
    this.live = new LiveSessionHub(this.holderId, this.logger);
    // A stop or steer of a turn from a surface that did not start it (the runs API naming a gateway turn, a gateway
    // client of another instance) reaches the session's live agent, only while that turn is its turn (ADR 0076).
    const agentRunning = (sessionId: string, turnId: string) => {
      const agent = this.agents.get(sessionId);
      return agent && !agent.isClosed && agent.status().turnId === turnId ? agent : undefined;
    };
    this.live.controlTurnsWith({
      interrupt: (sessionId, turnId, options) => agentRunning(sessionId, turnId)?.interrupt(options) ?? false,
      steer: (sessionId, turnId, text, redirect) => {
        const agent = agentRunning(sessionId, turnId);
        if (!agent) return { status: 'rejected', reason: 'no_active_turn' };
        return redirect ? agent.redirect(text) : agent.steer(text);
      },
    });
    this.catalog = this.providerCatalog();
    this.tools = createToolRegistry();
    for (const tool of builtinTools()) this.tools.register(tool);
    // Offered only to sessions whose host can reach a client (HostCallbacks.clientRequest).
    for (const tool of clientTools()) this.tools.register(tool);
    for (const tool of init.options.tools ?? []) this.tools.register(tool);
    this.processes = createProcessRegistry({ clock: this.clock });
    this.commands = createCommandRegistry();
    this.skills = createSkillRegistry({
      homeSkillsDir: join(this.homeDir, 'skills'),
      isBuiltinCommand: (name) => this.commands.find(name) !== undefined,
      logger: this.logger,
    });
    for (const tool of createSkillTools(this.skills)) this.tools.register(tool);
  }

  get config(): Readonly<HermesSettings> {
    return this.loaded.config;
  }

  get mcp(): McpManager {
    return this.mcpManager;
  }

  settings(): HermesSettings {
    return this.loaded.config;
  }

  toolSettings(): ToolSettings {
    const config = this.loaded.config;
    return {
      terminalTimeout: config.terminal.timeout,
      terminalMaxTimeout: config.terminal.max_timeout,
      writeDenylist: [...config.file.write_denylist],
      protectedPaths: [
        ...expandHermesHome(config.file.protected_paths, this.homeDir),
        ...(config.file.protected_paths.length > 0 ? this.storeFiles : []),
      ],
      policyPaths: expandHermesHome(POLICY_PATHS, this.homeDir),
      webFetchTimeout: config.web.fetch_timeout,
      webMaxBytes: config.web.max_bytes,
      webAllowPrivateHosts: [...config.web.allow_private_hosts],
      maxResultChars: config.tools.max_result_chars,
      clarifyTimeout: config.agent.clarify_timeout,
      maxConcurrentChildren: config.delegation.max_concurrent_children,
      homeDir: this.loaded.env.HOME ?? process.env.HOME ?? '/',
    };
  }

  resolveRoute(spec: string, currentProvider?: string | null): ResolvedRoute {
    return this.catalog.resolve(spec, currentProvider ? { currentProvider } : {});
  }

  defaultModelSpec(): string | null {
    return this.catalog.defaultSpec();
  }

  createModel(route: ResolvedRoute) {
    return this.catalog.createModel(route);
  }

  warmModel(spec?: string): Promise<void> {
    const wanted = spec ?? this.defaultModelSpec();
    if (wanted === null || this.closed) return Promise.resolve();
    // By the spec as asked for: a server opens a session per request, and a warmed model costs one lookup.
    return this.warmUps.get(wanted, () => this.loadModel(wanted));
  }

  private async loadModel(spec: string): Promise<void> {
    try {
      // The first request also declares the tools, each converted to a JSON schema once per definition (about 7 ms for
      // the built-in set). Done first, while the model's package loads below, it is not in the first turn's way.
      for (const tool of this.tools.list()) toFunctionTool(tool);
    } catch {
      // A schema that cannot be converted fails the turn that declares it, as before.
    }
    let loading: PromiseLike<unknown> | Record<string, unknown>;
    try {
      // A built-in provider's model imports its AI SDK package when it is first asked for anything, this included.
      loading = this.createModel(this.resolveRoute(spec)).supportedUrls;
    } catch {
      // The first turn resolves and loads the model again, and reports what is wrong with it.
      return;
    } finally {
      // The store's per-turn statements too (ADR 0102), compiled while the package's file is read.
      this.prepareStoreStatements();
    }
    try {
      await loading;
      // The AI SDK builds each request's headers with the fetch API's `Headers`; node loads undici on its first use.
      void globalThis.Headers;
    } catch {
      // The first turn resolves and loads the model again, and reports what is wrong with it.
    }
  }

  /** Compiles the store's per-turn statements once; a store that cannot (closed, an outage) compiles them at first use. */
  private prepareStoreStatements(): void {
    if (this.storePrepared) return;
    this.storePrepared = true;
    try {
      this.store.prepareStatements?.();
    } catch (error) {
      this.logger.debug('the store statements were left to their first use', { error: String(error) });
    }
  }

  /** Warms a session's model once the caller's reply to opening it is on its way (a macrotask later). */
  private warmSoon(agent: AgentCore): void {
    const spec = agent.model?.spec;
    if (spec === undefined || this.warmUps.has(spec)) return;
    setImmediate(() => void this.warmModel(spec));
  }

  /** The providers of the loaded configuration. They get the caller's fetch only: without one, the lean model stream sends with node:http (ADR 0026). */
  private providerCatalog() {
    return createProviderCatalog(this.loaded, { providers: this.options.providers ?? [], fetch: this.options.fetch });
  }

  providerAdapter(id: string): ProviderAdapter | undefined {
    return this.catalog.adapter(id);
  }

  providerOptions(route: ResolvedRoute, reasoningEffort: string | null): SharedV3ProviderOptions | undefined {
    return this.catalog.providerOptionsFor(
      route,
      (reasoningEffort ?? this.loaded.config.model.reasoning_effort ?? null) as never,
    );
  }

  cost(route: ResolvedRoute, usage: Usage): { costUsd: number; status: CostStatus } {
    return costStatusFor({
      usage,
      price: this.catalog.priceFor(route.spec),
      local: this.catalog.isLocal(route.provider),
    });
  }

  subprocessEnv(): Record<string, string> {
    const terminal = this.loaded.config.terminal;
    return buildSubprocessEnv(this.loaded.env, {
      mode: terminal.env,
      include: terminal.env_include,
      exclude: terminal.env_exclude,
      passthrough: terminal.env_passthrough,
      secretValues: this.hostSecrets()
        .filter((secret) => secret.server)
        .map((secret) => secret.value),
    });
  }

  private hostSecrets() {
    return collectHostSecrets(this.loaded, this.options.secrets);
  }

  secretRedactor(): SecretRedactor {
    this.redactor ??= new SecretRedactor(this.hostSecrets());
    return this.redactor;
  }

  commandSandbox(workspace: string): CommandSandbox | undefined {
    if (this.sandbox.active !== 'bwrap' || this.sandbox.executable === null) return undefined;
    const terminal = this.loaded.config.terminal;
    const userHome = this.loaded.env.HOME ?? process.env.HOME ?? '/';
    return {
      kind: 'bwrap',
      executable: this.sandbox.executable,
      workspace,
      writable: terminal.sandbox_writable.map((path) => resolveToolPath(path, workspace, userHome)),
      hidden: [this.homeDir, ...this.storeFiles],
      network: terminal.sandbox_network,
    };
  }

  async persistAllowlist(entry: CommandAllowlistEntry): Promise<void> {
    await this.allowCommands(entry);
  }

  commandAllowlist(): CommandAllowlistListing[] {
    return listCommandAllowlist(this.loaded.config.command_allowlist);
  }

  async allowCommands(entry: CommandAllowlistEntry): Promise<void> {
    if ('command' in entry && entry.command.trim() === '')
      throw new HermesError('invalid_input', 'an allowlist command cannot be empty');
    if ('pattern' in entry && !(PATTERN_KEYS as readonly string[]).includes(entry.pattern))
      throw new HermesError('invalid_input', `unknown pattern class: ${entry.pattern}`);
    const stored = 'command' in entry ? { command: alwaysScopeOf(entry.command) } : { pattern: entry.pattern };
    await appendCommandAllowlist(this.homeDir, [stored]);
    const current = this.loaded.config.command_allowlist;
    if (!current.some((item) => sameAllowlistEntry(item, stored) && typeof item !== 'string')) current.push(stored);
  }

  async revokeCommands(entry: CommandAllowlistEntry): Promise<number> {
    const removed = await removeCommandAllowlist(this.homeDir, entry);
    this.loaded.config.command_allowlist = this.loaded.config.command_allowlist.filter(
      (item) => !sameAllowlistEntry(item, entry),
    );
    return removed;
  }

  async storeSecret(envVar: string, value: string): Promise<void> {
    await writeDotenvValue(this.homeDir, envVar, value);
    // lookup() reads this map, so the key works without a reload.
    this.loaded.dotenv[envVar] = value;
    // A new key is a new secret to redact.
    this.redactor = null;
  }

  configWritable(): boolean {
    return this.loaded.writable;
  }

  async persistDefaultModel(route: ResolvedRoute): Promise<void> {
    await setDefaultModel(this.homeDir, { provider: route.provider, model: route.model });
  }

  toolsForSession(sessionId: string): ToolDefinition[] {
    return [...this.tools.list({ sessionId }), ...this.mcpManager.toolsFor(sessionId)];
  }

  emitHostEvent(event: {
    type: 'session.created' | 'session.updated' | 'session.deleted';
    sessionId: string;
    fields?: string[];
  }): void {
    const hostEvent: HostEvent =
      event.type === 'session.updated'
        ? { type: event.type, sessionId: event.sessionId, fields: event.fields ?? [] }
        : { type: event.type, sessionId: event.sessionId };
    for (const listener of this.listeners) {
      try {
        listener(hostEvent);
      } catch (error) {
        this.logger.warn('host event listener threw', { error: String(error) });
      }
    }
  }

  forgetAgent(sessionId: string): void {
    this.agents.delete(sessionId);
    // Session-scoped MCP servers close when their last session closes (spec/core.md §15.2).
    void this.mcpManager.attachSessionServers(sessionId, []).catch(() => {});
  }

  private assertOpen(): void {
    if (this.closed) throw new HermesError('session_closed', 'The host is closed.');
  }

  async newSession(options: SessionOptions = {}): Promise<Agent> {
    // A stored session's id is also one the store does not hold yet (ADR 0087): its first commit creates the row
    // when missing, and would otherwise continue a session of the same second that drew the same id.
    const agent = options.ephemeral
      ? this.createAgent(options)
      : this.createAgent(options, { sessionId: await this.newStoredSessionId() });
    // The session's own MCP servers are connected before its first turn builds the stored prompt.
    if (options.mcpServers && options.mcpServers.length > 0)
      await this.mcpManager.attachSessionServers(agent.sessionId, options.mcpServers);
    return agent;
  }

  /** Creates an agent; also used for branches and children. */
  createAgent(options: SessionOptions, extra: Partial<ConstructorParameters<typeof AgentCore>[0]> = {}): AgentCore {
    this.assertOpen();
    if (options.model !== undefined) this.resolveRoute(options.model);
    const sessionId = extra.sessionId ?? this.newSessionId();
    const agent = new AgentCore({ host: this, options, ...extra, sessionId });
    this.agents.set(sessionId, agent);
    this.warmSoon(agent);
    if (options.mcpServers && options.mcpServers.length > 0)
      void this.mcpManager.attachSessionServers(sessionId, options.mcpServers);
    return agent;
  }

  /**
   * A new session id that no live agent and no turn in flight of this host holds. The spec's id has 24 random bits
   * per second of creation: a thousand sessions created within a second or two (the ephemeral agent of every
   * header-less chat completion of a burst) share an id once in a few dozen bursts, and the second agent then found its
   * session busy with the other's turn (a 500) and took its place in the live map. Drawn again, the two stay apart.
   */
  newSessionId(): string {
    for (let attempt = 0; attempt < MAX_SESSION_ID_DRAWS; attempt += 1) {
      const sessionId = this.drawSessionId();
      if (!this.sessionIdInUse(sessionId)) return sessionId;
    }
    throw sessionIdsExhausted('names a live session of this host');
  }

  /**
   * {@link newSessionId}, drawn again while the store holds it too. The in-use check runs after the store's answer,
   * so an id a live agent or a turn took while the look-up was away is drawn again as well.
   */
  async newStoredSessionId(): Promise<string> {
    for (let attempt = 0; attempt < MAX_SESSION_ID_DRAWS; attempt += 1) {
      const sessionId = this.drawSessionId();
      if (this.sessionIdInUse(sessionId)) continue;
      // A store that cannot answer (an outage) does not refuse the session here: its first write reports the store
      // as it did before this look-up, and a session that is never written cannot continue another.
      const stored = await this.store.getSession(sessionId).catch(() => null);
      if (stored === null && !this.sessionIdInUse(sessionId)) return sessionId;
    }
    throw sessionIdsExhausted('names a live or stored session');
  }

  private drawSessionId(): string {
    return (this.options.generateSessionId ?? newSessionId)(this.clock.now());
  }

  /** Whether a live agent or a turn in flight of this host holds the id. */
  private sessionIdInUse(sessionId: string): boolean {
    return this.agents.has(sessionId) || this.turns.holder(sessionId) !== undefined;
  }

  async resumeSession(idOrTitle: string, options: ResumeOptions = {}): Promise<Agent> {
    this.assertOpen();
    const stored = options.stored?.session.id === idOrTitle ? options.stored : undefined;
    // An id is looked up before a title, so a row the caller read under this id is the one a lookup would find.
    if (stored) return this.resumeRow(stored.session, options, { rows: stored.rows, usage: stored.usage });
    const row = await this.store.resolveSession(idOrTitle);
    if (!row) throw new HermesError('session_not_found', `No session with id or title "${idOrTitle}".`);
    return this.resumeRow(row, options);
  }

  async openSession(sessionId: string, options: OpenSessionOptions = {}): Promise<Agent | null> {
    this.assertOpen();
    const live = this.agents.get(sessionId);
    if (live && !live.isClosed) return live;
    if (options.create) {
      // One statement on PostgreSQL (issue 34.2). Another request (here or on another instance) that created it a
      // moment ago is no error: this one resumes it.
      // A session created here is born with the lease of the turn the caller is about to run (the turn takes it
      // instead of a take of its own): opening a new session and taking its lease are one statement.
      const turnId = newId('turn_', 16);
      const run = options.create.run;
      const opened = await this.store.getOrCreateSession(
        { id: sessionId, source: options.create.source },
        {
          lease: { holder: this.holderId, turnId, ttlMs: this.loaded.config.session.lease_ttl * 1000 },
          ...(run ? { run } : {}),
        },
      );
      // A found session got no run row with it.
      if (run && !opened.created) await this.store.runs.create({ ...run, sessionId });
      // Just created: no rows and no usage to read back (issue 34.3, a chat turn naming a new session).
      if (!opened.created) return this.resumeRow(opened.row, options);
      return this.resumeRow(
        opened.row,
        options,
        { rows: [], usage: [] },
        opened.lease ? { turnId, lease: opened.lease } : undefined,
      );
    }
    const row = await this.store.getSession(sessionId);
    return row ? this.resumeRow(row, options) : null;
  }

  /** The live agent of a stored row, or a new one from the row, its transcript and its usage (read unless known). */
  private async resumeRow(
    row: SessionRow,
    options: ResumeOptions,
    known?: { rows: StoredMessage[]; usage: UsageByModelRow[] },
    bornLease?: { turnId: string; lease: TurnLease },
  ): Promise<Agent> {
    const live = this.agents.get(row.id);
    if (live && !live.isClosed) {
      void bornLease?.lease.release().catch(() => undefined);
      return live;
    }
    if (row.endedAt !== null) await this.store.reopenSession(row.id);
    // Known rows may include inactive ones (a caller's read for display): the agent keeps the active ones only.
    const rows = known ? known.rows : await this.store.loadConversation(row.id);
    const sessionOptions: SessionOptions = {};
    if (options.callbacks) sessionOptions.callbacks = options.callbacks;
    if (options.cwd !== undefined) sessionOptions.cwd = options.cwd;
    if (options.fileAccess) sessionOptions.fileAccess = options.fileAccess;
    if (options.commandRunner) sessionOptions.commandRunner = options.commandRunner;
    const agent = new AgentCore({
      host: this,
      sessionId: row.id,
      options: sessionOptions,
      row: { ...row, endedAt: null, endReason: null },
      rows,
      ...(bornLease ? { bornLease } : {}),
    });
    if (options.cwd !== undefined && options.cwd !== row.cwd)
      await this.store.updateSession(row.id, { cwd: options.cwd });
    this.agents.set(row.id, agent);
    this.warmSoon(agent);
    const usage = known ? known.usage : await this.store.usageByModel(row.id);
    agent.restoreUsageByModel(usage);
    return agent;
  }

  getAgent(sessionId: string): Agent | undefined {
    return this.agents.get(sessionId);
  }

  /** The `secret` callback of a live session, for the MCP manager (spec/core.md §24.7). */
  sessionSecret(sessionId: string): HostCallbacks['secret'] | undefined {
    return this.agents.get(sessionId)?.secretCallback();
  }

  liveAgents(): Agent[] {
    return [...this.agents.values()];
  }

  releaseAgent(sessionId: string): boolean {
    const agent = this.agents.get(sessionId);
    if (!agent || agent.busy || agent.attached || agent.kind === 'subagent') return false;
    // A lease the session was created with and no turn took (the request failed before its turn) goes back now.
    agent.dropBornLease();
    // Not closed: the stored session stays open, and the next resume reads it again from the store.
    this.agents.delete(sessionId);
    return true;
  }

  resolveModel(spec: string) {
    const route = this.resolveRoute(spec);
    return {
      spec: route.spec,
      provider: route.provider,
      model: route.model,
      baseUrl: route.baseUrl,
      contextWindow: route.contextWindow,
    };
  }

  listModels(): ModelOption[] {
    return this.catalog.listModels();
  }

  get delegationPaused(): boolean {
    return this.spawnGate.paused;
  }

  pauseDelegation(paused: boolean): void {
    this.spawnGate.setPaused(paused);
  }

  customProviders(): string[] {
    return this.catalog.customProviders();
  }

  remoteModels(provider: string, options?: { signal?: AbortSignal; timeoutMs?: number }): Promise<string[]> {
    return this.catalog.remoteModels(provider, options);
  }

  configSection(name: string): unknown {
    return this.loaded.section(name);
  }

  lookupEnv(name: string): string | undefined {
    return this.loaded.lookup(name);
  }

  async saveProviderKey(provider: string, apiKey: string): Promise<{ provider: string; variable: string }> {
    const status = this.catalog.keyStatus(provider);
    if (status.variable === null)
      throw new HermesError('invalid_input', `Provider '${status.provider}' does not read an API key variable`);
    await this.storeSecret(status.variable, apiKey.trim());
    return { provider: status.provider, variable: status.variable };
  }

  async removeProviderKey(provider: string): Promise<{ provider: string; variable: string | null; present: boolean }> {
    const status = this.catalog.keyStatus(provider);
    if (status.variable !== null && this.loaded.dotenv[status.variable] !== undefined)
      await this.storeSecret(status.variable, '');
    return this.catalog.keyStatus(provider);
  }

  subscribe(listener: (event: HostEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async reloadConfig(): Promise<void> {
    this.loaded = await loadConfig({
      homeDir: this.homeDir,
      env: this.options.env ?? process.env,
      overrides: this.options.config,
      logger: this.logger,
    });
    this.catalog = this.providerCatalog();
    this.redactor = null;
    this.sandbox = await sandboxFor(this.loaded);
  }

  /** Starts background duties: orphaned runs and the runs heartbeat (spec/core.md §9.4.12). */
  async start(): Promise<void> {
    const ttl = this.loaded.config.session.lease_ttl * 1000;
    // This host's earlier lives (a crash, kill -9) left turn leases and unfinished runs behind: a session they held would
    // wait for the lease's time to live (300 s by default) before its next turn. They are reclaimed at once.
    const reclaimed = await this.store.runs.reclaimHolders((holder) => isDeadHolder(holder, this.instanceId), {
      exitReason: 'interrupted_by_system(process_restarted)',
      message: 'The process running this run ended before it finished; it was settled when the server started again.',
    });
    if (reclaimed.holders.length > 0)
      this.logger.warn('reclaimed the turn leases and runs of processes that ended', {
        holders: reclaimed.holders,
        leases: reclaimed.leases,
        runs: reclaimed.runs,
      });
    await this.store.runs.markOrphaned(this.clock.now() - ttl);
    // Like a turn's lease refresh: every 60 s, or three times per `session.lease_ttl` when that is shorter, so a
    // short TTL (which another instance's start uses to decide a run is orphaned) never outruns the heartbeat.
    const intervalMs = Math.min(60_000, Math.max(250, ttl / 3));
    let failures = 0;
    const beat = () => {
      this.stopRunHeartbeat = this.clock.setTimer(() => {
        // A store that is down (a database restart, a failover) must not end the process: the beat is logged,
        // counted and tried again at the next tick.
        this.store.runs
          .heartbeat(this.holderId)
          .catch((error: unknown) => {
            failures += 1;
            this.logger.warn('runs heartbeat failed; retrying at the next beat', {
              error: String(error),
              code: HermesError.isInstance(error) ? error.code : null,
              failures,
            });
          })
          .finally(() => {
            if (!this.closed) beat();
          });
      }, intervalMs);
    };
    beat();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stopRunHeartbeat?.();
    const agents = [...this.agents.values()];
    for (const agent of agents) agent.interrupt({ issuer: 'shutdown', reason: 'the host is closing' });
    // Wait up to 5 s for the turns to end; the timer is cancelled at once so it never holds the process open.
    const grace = new AbortController();
    await Promise.race([
      Promise.all(agents.map((agent) => agent.settle())),
      this.clock.sleep(5000, grace.signal).catch(() => {}),
    ]);
    grace.abort();
    await Promise.all(
      agents.map((agent) => agent.close({ endReason: 'shutdown', issuer: 'shutdown' }).catch(() => {})),
    );
    await this.processes.killAll();
    await this.mcpManager.close();
    await this.store.close();
    liveHoldersOfThisProcess().delete(this.holderId);
  }
}

/**
 * Holder ids of the hosts open in this process, shared by every copy of this package loaded in it: several hosts may
 * share one store in one process (two `createAgent` calls on one HERMES_HOME), and none may reclaim another's leases.
 */
function liveHoldersOfThisProcess(): Set<string> {
  const key = Symbol.for('hermes.core.liveHolders');
  const registry = globalThis as unknown as Record<symbol, Set<string> | undefined>;
  registry[key] ??= new Set<string>();
  return registry[key];
}

/**
 * True when `holder` (a turn lease's or a run's holder id, `<instance id or hostname>:<pid>:<random>` as a host forms
 * it) names a process that no longer runs. With `instanceId` (unique among the processes sharing the store, kept across
 * restarts), every holder of that name that no host open in this process has is an earlier life. Otherwise a holder of
 * this machine's hostname is dead when its pid is not alive, or is this process's pid but no host open in this process
 * has it (a restart that got the same pid, as in a container whose server is pid 1). Holders of other names, and ids a
 * caller chose (`AgentHostOptions.holderId`), are never taken for dead: only their lease's expiry frees them.
 */
export function isDeadHolder(holder: string, instanceId: string | null = null): boolean {
  if (liveHoldersOfThisProcess().has(holder)) return false;
  const match = /^(.*):(\d+):[^:]+$/u.exec(holder);
  if (!match) return false;
  if (instanceId !== null && match[1] === instanceId) return true;
  if (match[1] !== hostname()) return false;
  const pid = Number(match[2]);
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    // EPERM: the process exists but belongs to another user.
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

/** Creates a host (spec/core.md §5.1). */
export async function createAgentHost(options: AgentHostOptions = {}): Promise<AgentHost> {
  const env = options.env ?? process.env;
  const homeDir = resolveHomeDir({ homeDir: options.homeDir, env });
  await ensureHomeDir(homeDir);
  const bootstrapLogger = options.logger ?? createStderrLogger();
  const loaded = await loadConfig({ homeDir, env, overrides: options.config, logger: bootstrapLogger });
  const logger = options.logger ?? createStderrLogger({ secrets: () => secretValues(loaded) });
  const legacyKeys = loaded.config.command_allowlist.filter((item): item is string => typeof item === 'string');
  if (legacyKeys.length > 0) {
    logger.warn(
      'command_allowlist: bare pattern keys are no longer honoured (an old "always" answer wrote them without saying it allowed the whole class); write `- pattern: <key>` to allow a class on purpose, or remove them with /permissions revoke',
      { keys: legacyKeys },
    );
  }
  const clock = options.clock ?? systemClock;
  // Probed before anything opens: an explicit `bwrap` that cannot start stops the host here.
  const sandbox = await sandboxFor(loaded);
  const location = resolveStoreLocation({
    database: options.database,
    // The environment first, then HERMES_HOME/.env, like every other HERMES_* variable (§4.2).
    env: { HERMES_DATABASE_URL: loaded.lookup('HERMES_DATABASE_URL') },
    configUrl: loaded.config.database.url,
    defaultPath: join(homeDir, 'state.db'),
  });
  const store = await openSessionStore({
    ...location,
    clock,
    journalMode: loaded.config.database.journal_mode,
    logger,
  });
  const host = new HostImpl({
    options,
    homeDir,
    loaded,
    logger,
    clock,
    store,
    sandbox,
    storeFiles: storeFilesOutside(location, homeDir),
  });
  if (sandbox.reason !== null && sandbox.setting === 'auto')
    logger.info(`commands run without a sandbox: ${sandbox.reason}`);
  host.mcpManager = createMcpManager({
    host,
    connect: options.connectMcp ?? true,
    servers: () => host.settings().mcp_servers,
    logger,
  });
  await host.start();
  await host.mcpManager.start();
  // The bash grammar for approval detection (about 40 ms of CPU and 4-5 MB of RSS: web-tree-sitter and two
  // WebAssembly modules) is not loaded here: the turn loop starts it when a model first calls `terminal`, and
  // judgeCommand waits for it, so a process that never runs a command never holds it (ADR 0099).
  return host;
}

/** The sandbox the configuration asks for, probed once per process (issue 32). */
function sandboxFor(loaded: LoadedConfig): Promise<SandboxStatus> {
  const terminal = loaded.config.terminal;
  return resolveSandbox({
    setting: terminal.sandbox,
    network: terminal.sandbox_network,
    executable: terminal.bwrap_path,
    path: loaded.env.PATH ?? process.env.PATH,
  });
}

/** The files of a SQLite store that lies outside HERMES_HOME (inside it, `state.db*` already covers them). */
function storeFilesOutside(location: { location: string; urlOnly: boolean }, homeDir: string): string[] {
  const path = location.location;
  if (location.urlOnly || path === ':memory:' || path === '' || /^[a-z][a-z0-9+.-]*:\/\//i.test(path)) return [];
  const absolute = resolve(path);
  if (isInside(absolute, homeDir)) return [];
  return [absolute, `${absolute}-wal`, `${absolute}-shm`, `${absolute}-journal`];
}

/** One call for embedding: a private host and a new session on it (spec/core.md §5.1). */
export async function createAgent(options: AgentHostOptions & SessionOptions = {}): Promise<Agent> {
  const host = (await createAgentHost(options)) as HostImpl;
  const agent = host.createAgent(options, { ownsHost: true });
  return agent;
}

/** Internal: the implementation class, for delegation. */
export type { HostImpl };
