import { type AgentHost, HermesError, type Logger, redactSecrets, updateConfigFile } from '@hermes/core';
import type { DeltaParts, GatewayConnection } from './connection.js';
import { gitBranch } from './git-branch.js';
import { newRuntimeId, randomHex } from './ids.js';
import type { InstanceRelay, RelayBus } from './instance-relay.js';
import { LiveSession, type SessionGateway } from './live-session.js';
import { ReplayRings } from './replay-ring.js';
import { ServerRequestRegistry } from './server-requests.js';
import { loadSkills, skillsInfo } from './skills.js';
import { emptyUsage, usageOf } from './usage.js';
import { VERSION } from './version.js';
import { EncodedFrame, type EventEnvelope, encodeFrame, eventFrame, type SessionLiveInfo } from './wire/index.js';

/** The bytes an event frame adds around its params: the ring counts the params alone. */
const EVENT_ENVELOPE_BYTES = (() => {
  const params = { type: '', session_id: '', payload: {} };
  return encodeFrame(eventFrame(params)).length - JSON.stringify(params).length;
})();

/** Options of {@link createGateway}. */
export interface GatewayOptions {
  /** The agent host the gateway drives (from `createAgentHost`). */
  host: AgentHost;
  /** Overrides `tui_gateway.ws_orphan_reap_grace_s`, in milliseconds. */
  reapGraceMs?: number;
  /** Overrides `tui_gateway.ws_orphan_activity_stale_s`, in milliseconds. */
  activityStaleMs?: number;
  /** Interval of the reap settle polling (default 1 s, §3.5). */
  settlePollMs?: number;
  /** Overrides `sessions.max_resume_messages`. */
  maxResumeMessages?: number;
  /** Delay of the agent build after `session.create` (default 50 ms, §3.3). */
  buildDelayMs?: number;
  /** How long a turn waits for its agent (default 600 s, §3.3). */
  turnBuildWaitMs?: number;
  /** How long `session.compress` waits for its agent (default 30 s, §3.3). */
  methodBuildWaitMs?: number;
  /** Timeout of sudo and secret requests (default 300 s, §6.4). */
  secretTimeoutMs?: number;
  /** Delta coalescing interval (default 33 ms, §1.4). */
  coalesceMs?: number;
  /**
   * Runs as part of every agent build; a throw fails the build with that message. A seam for hosts
   * that prepare per-session resources, and for tests that need a failing build.
   */
  onAgentBuild?: (session: { runtimeId: string; storedId: string }) => void | Promise<void>;
  /** The project's CLI executable for `cli.exec` (§4.8), as argv prefix; e.g. `[process.execPath, '/path/bin.js']`. */
  cliCommand?: string[];
  /** Active profile name (default `default`, §2.4). */
  profileName?: string;
  /** Project version reported in `session.info` (default this package's version). */
  version?: string;
  /** Where diagnostics go; default the host's logger. Never stdout. */
  logger?: Logger;
  /**
   * The run bus of a deployment of several instances on one PostgreSQL database (`createRunBus`): a client may then
   * resume a session live on another instance, through it (ADR 0020). Ignored when the bus is not shared.
   */
  relayBus?: RelayBus;
  /** A tunnel to another instance whose other end is silent this long is closed (default `tui_gateway.instance_silence_s`, 30 s). */
  instanceSilenceMs?: number;
  /**
   * Overrides `tui_gateway.max_text_chars` (default 65,536, the HTTP API's text cap): a frame whose params hold a
   * longer string is refused with 4002 before its method runs.
   */
  maxTextChars?: number;
  /**
   * Overrides `tui_gateway.max_frame_bytes` (default 16 MiB, the least the spec allows): a longer stdio line is
   * discarded unread and answered -32700; a longer WebSocket message closes the socket with 1009.
   */
  maxFrameBytes?: number;
}

/** `tui_gateway.max_text_chars` default: the HTTP API's cap on one message's text (spec/openai-api.md §6.2). */
export const DEFAULT_MAX_TEXT_CHARS = 65_536;
/** `tui_gateway.max_frame_bytes` default: the least inbound frame size the spec requires (§1.1). */
export const DEFAULT_MAX_FRAME_BYTES = 16 * 1024 * 1024;

type ResolvedOptions = Required<
  Omit<
    GatewayOptions,
    | 'onAgentBuild'
    | 'cliCommand'
    | 'reapGraceMs'
    | 'activityStaleMs'
    | 'maxResumeMessages'
    | 'logger'
    | 'relayBus'
    | 'instanceSilenceMs'
    | 'maxTextChars'
    | 'maxFrameBytes'
  >
> &
  Pick<
    GatewayOptions,
    'onAgentBuild' | 'reapGraceMs' | 'activityStaleMs' | 'maxResumeMessages' | 'maxTextChars' | 'maxFrameBytes'
  >;

/**
 * The gateway's state, shared by every connection: the settings, the live-session registry, the
 * replay rings, the server requests and the session lifecycle rules of §3. Method handlers receive
 * it; live sessions see it through {@link SessionGateway}. The dispatcher (`GatewayCore` in
 * `gateway-core.ts`) extends it with connections, routing and shutdown.
 */
export class GatewayState implements SessionGateway {
  readonly host: AgentHost;
  readonly options: ResolvedOptions;
  readonly logger: Logger;
  readonly replayEpoch = randomHex(16);
  readonly rings = new ReplayRings();
  readonly serverRequests = new ServerRequestRegistry();
  readonly sessions = new Map<string, LiveSession>();
  readonly connections = new Set<GatewayConnection>();
  readonly cliCommand: string[] | null;
  busyModeOverride: string | null = null;
  toolProgressOverride: string | null = null;
  defaultCwd: string | null = null;
  /** `loaded_rev` of the last MCP reload, and the reload in progress (§4.9). */
  mcpLoadedRevision: string | null = null;
  mcpReloading: Promise<void> | null = null;
  /** `delegation.pause` state (§4.10). */
  delegationPaused = false;
  /** Sessions live on other instances of the deployment (ADR 0020); null with one instance. */
  relay: InstanceRelay | null = null;
  /** The head of the last session's delta frames: a streamed reply's deltas are one session's, one type's, in a row. */
  private deltaHead: DeltaFrameHead | null = null;

  constructor(options: GatewayOptions) {
    this.host = options.host;
    this.logger = options.logger ?? options.host.logger;
    this.cliCommand = options.cliCommand ?? null;
    this.options = {
      host: options.host,
      settlePollMs: options.settlePollMs ?? 1000,
      buildDelayMs: options.buildDelayMs ?? 50,
      turnBuildWaitMs: options.turnBuildWaitMs ?? 600_000,
      methodBuildWaitMs: options.methodBuildWaitMs ?? 30_000,
      secretTimeoutMs: options.secretTimeoutMs ?? 300_000,
      coalesceMs: options.coalesceMs ?? 33,
      profileName: options.profileName ?? 'default',
      version: options.version ?? VERSION,
      onAgentBuild: options.onAgentBuild,
      reapGraceMs: options.reapGraceMs,
      activityStaleMs: options.activityStaleMs,
      maxResumeMessages: options.maxResumeMessages,
      maxTextChars: options.maxTextChars,
      maxFrameBytes: options.maxFrameBytes,
    };
    // A turn another surface ran on a stored session ended: input queued behind it may start now (ADR 0037).
    this.stopTurnWatch = this.host.turns.onRelease(({ sessionId, holder }) => {
      for (const session of this.sessions.values()) {
        const own = holder.surface === 'gateway' && holder.id === session.runtimeId;
        if (!own && session.storedId === sessionId) this.afterTurn(session);
      }
    });
  }

  /** Stops watching the host's turns in flight (shutdown). */
  readonly stopTurnWatch: () => void;

  // ---- configuration -------------------------------------------------------------------------

  /** A key of a protocol-owned config section. */
  section(name: string, key: string): unknown {
    const value = this.host.configSection(name);
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined;
  }

  /** `display.busy_input_mode` (§8.2). */
  busyMode(): 'queue' | 'steer' | 'interrupt' {
    const value = this.busyModeOverride ?? this.section('display', 'busy_input_mode');
    return value === 'queue' || value === 'steer' ? value : 'interrupt';
  }

  /** `display.tool_progress` (§5.4). */
  toolProgressMode(): 'off' | 'new' | 'all' | 'verbose' {
    const value = this.toolProgressOverride ?? this.section('display', 'tool_progress');
    return value === 'off' || value === 'new' || value === 'verbose' ? value : 'all';
  }

  reapGraceMs(): number {
    if (this.options.reapGraceMs !== undefined) return this.options.reapGraceMs;
    const value = this.section('tui_gateway', 'ws_orphan_reap_grace_s');
    return (typeof value === 'number' && value >= 0 ? value : 20) * 1000;
  }

  activityStaleMs(): number {
    if (this.options.activityStaleMs !== undefined) return this.options.activityStaleMs;
    const value = this.section('tui_gateway', 'ws_orphan_activity_stale_s');
    return (typeof value === 'number' && value >= 0 ? value : 600) * 1000;
  }

  /** `tui_gateway.max_text_chars`: the longest string a frame's params may hold. */
  maxTextChars(): number {
    if (this.options.maxTextChars !== undefined) return this.options.maxTextChars;
    const value = this.section('tui_gateway', 'max_text_chars');
    return typeof value === 'number' && Number.isInteger(value) && value > 0 ? value : DEFAULT_MAX_TEXT_CHARS;
  }

  /** `tui_gateway.max_frame_bytes`: the longest inbound frame; never below the spec's 16 MiB. */
  maxFrameBytes(): number {
    const value = this.options.maxFrameBytes ?? this.section('tui_gateway', 'max_frame_bytes');
    return typeof value === 'number' && Number.isInteger(value) && value >= DEFAULT_MAX_FRAME_BYTES
      ? value
      : DEFAULT_MAX_FRAME_BYTES;
  }

  maxResumeMessages(): number {
    if (this.options.maxResumeMessages !== undefined) return this.options.maxResumeMessages;
    const sessions = this.host.configSection('sessions');
    const value =
      typeof sessions === 'object' && sessions !== null
        ? (sessions as Record<string, unknown>).max_resume_messages
        : undefined;
    return typeof value === 'number' && value >= 0 ? value : 20_000;
  }

  /** Writes one config key with the core's write rules, then reloads the host's configuration. */
  async persistConfig(path: string[], value: unknown): Promise<void> {
    await updateConfigFile(this.host.homeDir, (document) => {
      document.setIn(path, value);
    });
    await this.host.reloadConfig();
  }

  /** Masks secrets in text shown to clients (§2.7 `PendingApproval.command`). */
  redact(text: string): string {
    return redactSecrets(text);
  }

  // ---- sessions ------------------------------------------------------------------------------

  /** Registers a live session around a core agent. */
  addSession(agent: LiveSession['agent'], init: { closeOnDisconnect: boolean; modelPin: string | null }): LiveSession {
    const session = new LiveSession({ gateway: this, agent, runtimeId: newRuntimeId(), ...init });
    this.sessions.set(session.runtimeId, session);
    return session;
  }

  /** The live session with this stored id. */
  sessionByStoredId(storedId: string): LiveSession | undefined {
    for (const session of this.sessions.values()) if (session.storedId === storedId) return session;
    return undefined;
  }

  /** The agent build (§3.3). */
  async buildAgent(session: LiveSession): Promise<void> {
    await this.options.onAgentBuild?.({ runtimeId: session.runtimeId, storedId: session.storedId });
    // The built info lists the session's skills (§2.7), so the build reads them.
    await loadSkills(this.host, session.agent.cwd);
    // A host MCP server that failed at start for a missing variable asks this session's client for it (§6.4).
    this.host.mcp.askMissingVariables(session.agent.sessionId);
    if (session.modelPin) {
      const result = await session.agent.switchModel(session.modelPin);
      if (result.ok) return;
      // A pinned model whose key is missing is not a failed build either: the first turn asks the client for
      // the key (`secret`, §6.4) and switches to the pin then (LiveSession.switchModelAsking).
      if (result.error?.code === 'missing_credentials') {
        session.deferredModel ??= session.modelPin;
        return;
      }
      throw new Error(result.error?.message ?? `cannot use model ${session.modelPin}`);
    }
    const spec = this.host.config.model.default ?? this.host.lookupEnv('HERMES_MODEL');
    if (!spec) throw new Error('no model configured');
    try {
      this.host.resolveModel(spec);
    } catch (error) {
      // A missing key is not a failed build: the first turn asks the client for it with a `secret`
      // request (§6.4, core §24.7) and saves the answer; failing here would never let it ask.
      if (HermesError.isInstance(error) && error.code === 'missing_credentials') return;
      throw error;
    }
  }

  /** `SessionLiveInfo` of a session (§2.7); the lazy form before the agent is built. */
  info(session: LiveSession): SessionLiveInfo {
    const built = session.buildState === 'ready';
    const status = session.agent.status();
    const route = session.agent.model ?? status.model;
    const config = this.host.config;
    const pinned = session.modelPin ? safeParse(this.host, session.modelPin) : null;
    const info: SessionLiveInfo = {
      model: route?.model ?? pinned?.model ?? defaultRoute(this.host)?.model ?? '',
      provider: route?.provider ?? pinned?.provider ?? defaultRoute(this.host)?.provider ?? '',
      reasoning_effort: status.reasoningEffort ?? config.model.reasoning_effort ?? 'none',
      fast: false,
      yolo: config.approvals.yolo,
      approval_mode: config.approvals.mode,
      tools: {},
      skills: built ? skillsInfo(this.host, session.agent.cwd) : {},
      cwd: session.agent.cwd,
      branch: gitBranch(session.agent.cwd),
      project: null,
      // Another surface's turn on the stored session, shown here, is this session's running turn for a client.
      running: session.running || session.foreignTurn,
      turn_started_at: session.turnStartedAt,
      title: status.title ?? '',
      stored_session_id: session.storedId,
      version: this.options.version,
      usage: built ? usageOf(session.agent, true) : emptyUsage(),
      profile_name: this.options.profileName,
      mcp_servers: [],
    };
    if (built) {
      const names = this.host.tools.list({ sessionId: session.storedId }).map((tool) => tool.name);
      info.tools = { default: names };
    } else {
      info.lazy = true;
    }
    return info;
  }

  /** Adds a connection to a session's attached set (§3.4); ends parking. */
  attach(session: LiveSession, connection: GatewayConnection | null): void {
    if (!connection?.open) return;
    session.attached.add(connection);
    if (session.parked) {
      session.parked = false;
      if (session.reapTimer) clearTimeout(session.reapTimer);
      session.reapTimer = null;
    }
  }

  /** Emits a session event: seq, replay ring, attached set (§2.6, §9.3). */
  emitSessionEvent(session: LiveSession, type: string, payload: Record<string, unknown>, delta: boolean): void {
    const params = { type, session_id: session.runtimeId, payload, seq: this.rings.nextSeq(session.runtimeId) };
    if (delta && isTextPayload(payload)) {
      this.emitDelta(session, params, payload.text);
      return;
    }
    // Encoded once for the replay ring's size and every attached connection (ADR 0023).
    const text = encodeFrame(eventFrame(params));
    this.rings.record(params, Buffer.byteLength(text) - EVENT_ENVELOPE_BYTES);
    const frame = new EncodedFrame(text);
    for (const connection of session.attached) connection.send(frame, delta);
  }

  /**
   * A delta event (`payload` is `{ text }`): its frame is the text of the cached head, the text's JSON and the seq,
   * the same bytes `encodeFrame(eventFrame(params))` writes, without encoding the frame object for every delta
   * (ADR 0071). Its parts let a congested connection join it to the held delta before it (ADR 0059).
   */
  private emitDelta(session: LiveSession, params: EventEnvelope & { seq: number }, deltaText: string): void {
    let head = this.deltaHead;
    if (head === null || head.runtimeId !== session.runtimeId || head.type !== params.type) {
      head = new DeltaFrameHead(params.type, session.runtimeId);
      this.deltaHead = head;
    }
    const text = head.frameText(deltaText, params.seq);
    this.rings.record(params, Buffer.byteLength(text) - EVENT_ENVELOPE_BYTES);
    const frame = new EncodedFrame(text);
    const parts = new DeltaFrameParts(head, deltaText, params.seq);
    for (const connection of session.attached) connection.send(frame, parts);
  }

  /** Emits a broadcast event (`session_id: ""`, no seq) to every open connection. */
  broadcast(type: string, payload: Record<string, unknown>): void {
    const frame = new EncodedFrame(encodeFrame(eventFrame({ type, session_id: '', payload })));
    for (const connection of this.connections) connection.send(frame);
  }

  /** After a turn's `message.complete`: drain pending input (§8.4). */
  afterTurn(session: LiveSession): void {
    if (session.finalized || session.busy) return;
    const next = session.queue.shift();
    if (!next) return;
    if (next.connection?.open) this.attach(session, next.connection);
    session.startTurn({ text: next.text, hidden: next.hidden, images: next.images });
  }

  /** Finalization (§3.3). */
  async finalize(session: LiveSession, endReason: string): Promise<void> {
    if (session.finalized) return;
    session.finalized = true;
    this.sessions.delete(session.runtimeId);
    session.queue = [];
    session.heldSteers = [];
    this.serverRequests.withdrawAll(session, endReason === 'tui_shutdown' ? 'shutdown' : 'session_closed');
    if (session.running) {
      session.interruptTurn(true);
      await Promise.race([session.whenTurnEnds(), delay(5000)]);
    }
    session.attached.clear();
    session.unsubscribe();
    if (session.reapTimer) clearTimeout(session.reapTimer);
    session.reapTimer = null;
    await session.agent.close({ endReason }).catch((error: unknown) => {
      this.logger.warn('closing an agent failed', { error: String(error) });
    });
  }

  /** Removes a closed connection from every attached set; parks or closes orphaned sessions (§3.5). */
  detach(connection: GatewayConnection): void {
    if (!this.connections.delete(connection)) return;
    connection.detach();
    this.relay?.connectionClosed(connection);
    for (const session of [...this.sessions.values()]) {
      if (!session.attached.delete(connection) || session.attached.size > 0) continue;
      if (session.closeOnDisconnect) {
        void this.finalize(session, 'ws_disconnect');
        continue;
      }
      session.parked = true;
      this.startReapTimer(session);
    }
  }

  private startReapTimer(session: LiveSession): void {
    if (session.reapTimer) clearTimeout(session.reapTimer);
    session.reapTimer = setTimeout(() => this.onReapTimer(session), this.reapGraceMs());
  }

  private onReapTimer(session: LiveSession): void {
    session.reapTimer = null;
    if (!session.parked || session.finalized) return;
    if (!session.running) {
      void this.reap(session);
      return;
    }
    if (Date.now() - session.lastActivity < this.activityStaleMs()) {
      this.startReapTimer(session);
      return;
    }
    session.settling = true;
    this.reapingSessions.add(session);
    session.interruptTurn(true);
    let checks = 0;
    const poll = () => {
      checks += 1;
      if (!session.running || checks >= 60) {
        void this.reap(session);
        return;
      }
      setTimeout(poll, this.options.settlePollMs);
    };
    setTimeout(poll, this.options.settlePollMs);
  }

  private async reap(session: LiveSession): Promise<void> {
    session.reaping = true;
    this.reapingSessions.add(session);
    await this.finalize(session, 'ws_orphan_reap');
    session.settling = false;
    this.reapingSessions.delete(session);
    this.broadcast('session.reclaimed', {
      session_id: session.runtimeId,
      stored_session_id: session.storedId,
      reason: 'ws_orphan_reap',
    });
  }

  /**
   * A session that is settling or being reaped refuses resume and activate (§3.5). Tracked apart
   * from the registry because finalization removes the runtime id before it ends.
   */
  reapingSessionFor(storedId: string): LiveSession | undefined {
    for (const session of this.reapingSessions) if (session.storedId === storedId) return session;
    return undefined;
  }

  /** The settling or reaping session with this runtime id. */
  reapingSessionByRuntimeId(runtimeId: string): LiveSession | undefined {
    for (const session of this.reapingSessions) if (session.runtimeId === runtimeId) return session;
    return undefined;
  }

  private readonly reapingSessions = new Set<LiveSession>();
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function safeParse(host: AgentHost, spec: string): { model: string; provider: string } | null {
  try {
    return host.resolveModel(spec);
  } catch {
    return null;
  }
}

function defaultRoute(host: AgentHost): { model: string; provider: string } | null {
  const spec = host.config.model.default ?? host.lookupEnv('HERMES_MODEL');
  return spec ? safeParse(host, spec) : null;
}

/** Whether an event payload is exactly `{ text }` with a string text (a delta's). */
function isTextPayload(payload: Record<string, unknown>): payload is { text: string } {
  if (typeof payload.text !== 'string') return false;
  for (const key in payload) if (key !== 'text') return false;
  return true;
}

/** The JSON text of a delta event frame up to its text, for one session and delta type. */
class DeltaFrameHead {
  readonly type: string;
  readonly runtimeId: string;
  /** The connection's joining key: deltas of one session and type join (ADR 0059). */
  readonly key: string;
  private readonly head: string;
  constructor(type: string, runtimeId: string) {
    this.type = type;
    this.runtimeId = runtimeId;
    this.key = `${type}\n${runtimeId}`;
    // The key order of eventFrame and of the envelope, as JSON.stringify writes them.
    this.head = `{"jsonrpc":"2.0","method":"event","params":{"type":${JSON.stringify(type)},"session_id":${JSON.stringify(runtimeId)},"payload":{"text":`;
  }
  /**
   * The frame of one delta: `encodeFrame(eventFrame({ type, session_id, payload: { text }, seq }))`; a joined one
   * also names the seq of its first delta (`first_seq`).
   */
  frameText(text: string, seq: number, firstSeq: number | null = null): string {
    const first = firstSeq === null ? '' : `,"first_seq":${firstSeq}`;
    return `${this.head}${JSON.stringify(text)}},"seq":${seq}${first}}}`;
  }
}

/** A delta's {@link DeltaParts}: an object without a closure per delta, its frame made again only when joined. */
class DeltaFrameParts implements DeltaParts {
  readonly key: string;
  readonly text: string;
  private readonly head: DeltaFrameHead;
  readonly seq: number;
  constructor(head: DeltaFrameHead, text: string, seq: number) {
    this.key = head.key;
    this.text = text;
    this.head = head;
    this.seq = seq;
  }
  rebuild(joined: string, firstSeq: number | null): EncodedFrame {
    return new EncodedFrame(this.head.frameText(joined, this.seq, firstSeq));
  }
}
