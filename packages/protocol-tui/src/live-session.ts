import type {
  Agent,
  AgentEvent,
  AgentHost,
  ApprovalRequest,
  LiveSessionEvent,
  Logger,
  ModelSwitchResult,
  SteerResult,
  TurnClaim,
  TurnResult,
} from '@hermes/core';
import { HermesError, TextChunks } from '@hermes/core';
import type { GatewayConnection } from './connection.js';
import { randomHex } from './ids.js';
import { contentWithImages } from './image-parts.js';
import type { OpenServerRequest, RequestSession, ServerRequestRegistry } from './server-requests.js';
import { approvalFields, pickApprovalChoice, sessionCallbacks, settleAllApprovals } from './session-callbacks.js';
import { expandSkillText } from './skills.js';
import { emptyUsage, usageOf } from './usage.js';
import type { SessionLiveInfo } from './wire/index.js';

/**
 * What a live session needs from the gateway that owns it. The gateway's state implements it, so
 * a session reaches up only through this interface and knows nothing of the session registry, the
 * dispatcher or the method handlers.
 */
export interface SessionGateway {
  readonly host: AgentHost;
  readonly logger: Logger;
  readonly options: { readonly turnBuildWaitMs: number; readonly secretTimeoutMs: number };
  readonly serverRequests: ServerRequestRegistry;
  /** `SessionLiveInfo` of a session (§2.7). */
  info(session: LiveSession): SessionLiveInfo;
  /** Emits a session event: seq, replay ring, attached set (§2.6, §9.3). */
  emitSessionEvent(session: LiveSession, type: string, payload: Record<string, unknown>, delta: boolean): void;
  /** The agent build (§3.3). */
  buildAgent(session: LiveSession): Promise<void>;
  /** After a turn's `message.complete`: drains pending input (§8.4). */
  afterTurn(session: LiveSession): void;
  /** `display.tool_progress` (§5.4). */
  toolProgressMode(): 'off' | 'new' | 'all' | 'verbose';
  /** Masks secrets in text shown to clients. */
  redact(text: string): string;
}

/** One queued input (§8.3). */
export interface PendingEnvelope {
  text: string;
  hidden: boolean;
  images: string[];
  connection: GatewayConnection | null;
  submissions: number;
}

/** The in-flight view of a running or failed turn (§9.2). */
export interface Inflight {
  user: string;
  assistant: string;
  streaming: boolean;
  user_originated: boolean;
  corrections: string[];
  correction_offsets: number[];
  status?: 'error';
  error?: string;
  recoverable?: true;
  error_surface?: Record<string, unknown>;
}

/** Build states of a session's agent (§3.2). */
export type BuildState = 'none' | 'building' | 'ready' | 'failed';

/**
 * One live session of the gateway (§3.2): the core agent plus everything the wire adds: runtime
 * id, attached set, build state, turn state, pending input, open server requests and the replay seq.
 */
export class LiveSession implements RequestSession {
  readonly runtimeId: string;
  readonly agent: Agent;
  readonly gateway: SessionGateway;
  readonly attached = new Set<GatewayConnection>();
  readonly openRequests = new Map<string, OpenServerRequest>();
  readonly startedAt: number;
  closeOnDisconnect: boolean;
  cols = 80;
  modelPin: string | null;
  buildState: BuildState = 'none';
  buildFailure = '';
  private buildPromise: Promise<void> | null = null;
  running = false;
  compressing = false;
  turnStartedAt: number | null = null;
  private inflightState: Inflight | null = null;
  /** Deltas of the turn in flight not yet added to its `assistant` text: joined a few hundred at a time (ADR 0059). */
  private readonly assistantChunks: string[] = [];

  /** The turn in flight (§9.2), its `assistant` text holding every delta so far. */
  get inflight(): Inflight | null {
    if (this.assistantChunks.length > 0) this.foldAssistant();
    return this.inflightState;
  }

  set inflight(value: Inflight | null) {
    this.assistantChunks.length = 0;
    this.inflightState = value;
  }
  queue: PendingEnvelope[] = [];
  heldSteers: string[] = [];
  images: string[] = [];
  todos: { todos: unknown[]; revision: number } | null = null;
  lastActive: number;
  lastActivity: number;
  parked = false;
  settling = false;
  reaping = false;
  finalized = false;
  reapTimer: ReturnType<typeof setTimeout> | null = null;
  deferredModel: string | null = null;
  /** This session's claim in the host's turns in flight, held from the accepted input to `message.complete`. */
  private turnClaim: TurnClaim | null = null;
  private turnAbort: AbortController | null = null;
  private turnDone: Promise<void> = Promise.resolve();
  private segmentText = new TextChunks();
  private lastToolName: string | null = null;
  private readonly shownCalls = new Set<string>();
  private lastUsageJson = '';
  private lastUsageAt = 0;

  constructor(init: {
    gateway: SessionGateway;
    agent: Agent;
    runtimeId: string;
    closeOnDisconnect: boolean;
    modelPin: string | null;
  }) {
    this.gateway = init.gateway;
    this.agent = init.agent;
    this.runtimeId = init.runtimeId;
    this.closeOnDisconnect = init.closeOnDisconnect;
    this.modelPin = init.modelPin;
    this.startedAt = Date.now() / 1000;
    this.lastActive = Date.now();
    this.lastActivity = Date.now();
    // Out-of-turn events (automatic titles, notices raised while persisting) reach only subscribers.
    const stopAgent = init.agent.subscribe((event) => {
      if (event.turnId === null && !this.finalized) this.translateOutOfTurn(event);
    });
    // Every turn of the stored session comes through the core's live-session hub: this session's own, and those another
    // surface runs (the HTTP API here, any surface on another instance) with their approvals (ADR 0053).
    const stopHub = init.gateway.host.live.subscribe(this.storedId, (delivered) => this.onLiveEvent(delivered));
    this.unsubscribe = () => {
      stopAgent();
      stopHub();
    };
  }

  /** Stops listening to the agent and the hub (finalization). */
  readonly unsubscribe: () => void;

  /** The turn another surface runs on the stored session, while its events are shown here. */
  private foreign: { turnId: string; remote: boolean; approvals: Set<string> } | null = null;

  /** One event of the stored session from the hub: every turn of it is shown, this session's own and any other's. */
  private onLiveEvent({ event, remote }: LiveSessionEvent): void {
    if (this.finalized || event.turnId === null) return;
    // This session's own turn: its start, end and approvals are its run's business (message.start before the agent is
    // ready, message.complete from the result, approvals through the session's callbacks); the rest is shown as is.
    if (!remote && this.turnClaim !== null && this.gateway.host.turns.holds(this.turnClaim)) {
      this.translate(event);
      return;
    }
    if (this.foreign === null || this.foreign.turnId !== event.turnId) {
      if (event.type === 'turn.end') return;
      this.startForeignTurn(event, remote);
    }
    const foreign = this.foreign as NonNullable<typeof this.foreign>;
    switch (event.type) {
      case 'turn.start':
        break;
      case 'turn.end':
        this.foreign = null;
        for (const requestId of foreign.approvals) this.withdrawApproval(requestId);
        this.finishTurn(event.result, false);
        break;
      case 'approval.request':
        foreign.approvals.add(event.request.requestId);
        this.raiseForeignApproval(event.request);
        break;
      case 'approval.resolved':
        foreign.approvals.delete(event.requestId);
        this.withdrawApproval(event.requestId);
        break;
      default:
        this.translate(event);
    }
  }

  /** A foreign turn begins (or is first seen mid-way): `message.start` and a fresh in-flight view, as for our own. */
  private startForeignTurn(event: AgentEvent, remote: boolean): void {
    this.foreign = { turnId: event.turnId as string, remote, approvals: new Set() };
    this.turnStartedAt = Date.now() / 1000;
    const text = event.type === 'turn.start' ? event.input.text : null;
    this.inflight = {
      user: text ?? '',
      assistant: '',
      streaming: true,
      user_originated: text !== null,
      corrections: [],
      correction_offsets: [],
    };
    this.segmentText = new TextChunks();
    this.lastToolName = null;
    this.emit('message.start', { input: text === null ? null : { role: 'user', text } });
  }

  /** Asks the attached clients about a foreign turn's approval; an answer goes back to the core's hub. */
  private raiseForeignApproval(request: ApprovalRequest): void {
    void this.gateway.serverRequests.raise(this, 'approval', approvalFields(request, this.gateway)).then((outcome) => {
      if (outcome.kind !== 'result') return;
      const picked = pickApprovalChoice(outcome.result.choice, request.choices);
      this.gateway.host.live.answerApproval(request.requestId, picked);
      if (outcome.result.all === true) settleAllApprovals(this, picked);
    });
  }

  /** Withdraws the server request of an approval that was settled elsewhere (`request.cancel`, reason `resolved`). */
  private withdrawApproval(requestId: string): void {
    for (const open of [...this.openRequests.values()])
      if (open.method === 'approval' && open.params.request_id === requestId)
        open.settle({ kind: 'withdrawn', reason: 'resolved' });
  }

  private translateOutOfTurn(event: AgentEvent): void {
    if (event.type === 'title' && (event.source === 'llm' || event.source === 'derived')) {
      this.emit('session.title', { session_id: this.storedId, title: event.title });
      this.emit('session.info', this.gateway.info(this));
    } else if (event.type === 'notice') {
      const taken = /^The title "(.*)" was taken meanwhile; using "(.*)"\.$/.exec(event.text);
      this.emit('notice', { message: taken ? `title changed to ${taken[2]}: ${taken[1]} is taken` : event.text });
    }
  }

  /** The stored id (§3.1): the core's session id, reserved before any row exists. */
  get storedId(): string {
    return this.agent.sessionId;
  }

  /**
   * Busy: a turn running or a compression in progress (§8.1), or a turn that another surface of this process (the HTTP
   * API, another gateway session on the same stored session) runs on the stored session (ADR 0037).
   */
  get busy(): boolean {
    return this.running || this.compressing || this.foreignTurn;
  }

  /** True while a turn this session did not start holds the stored session. */
  get foreignTurn(): boolean {
    // A turn on another instance is known from its events only (the turn lease serialises it with ours).
    if (this.foreign?.remote) return true;
    const current = this.gateway.host.turns.current(this.storedId);
    return current !== undefined && current !== this.turnClaim;
  }

  /**
   * Claims the stored session for a turn of this session and marks it running; false when another surface's turn
   * holds it (the caller then treats the input as busy input). Synchronous, so a busy check and the claim never race.
   */
  reserveTurn(): boolean {
    if (this.turnClaim !== null && !this.turnClaim.released) {
      this.running = true;
      return true;
    }
    const claim = this.gateway.host.turns.claim(this.storedId, { surface: 'gateway', id: this.runtimeId });
    if (claim === null) return false;
    this.turnClaim = claim;
    this.running = true;
    return true;
  }

  /** Gives this session's claim back (the turn ended, or an accepted input never started one). */
  releaseTurn(): void {
    const claim = this.turnClaim;
    this.turnClaim = null;
    claim?.release();
  }

  /** Emits a session event to the attached set and the replay ring. */
  emit(type: string, payload: Record<string, unknown>, delta = false): void {
    this.lastActive = Date.now();
    this.gateway.emitSessionEvent(this, type, payload, delta);
  }

  /** {@link emit} of a streamed delta, with the time {@link translate} just read (one clock read per delta). */
  private emitDelta(type: 'message.delta' | 'reasoning.delta', text: string, now: number): void {
    this.lastActive = now;
    this.gateway.emitSessionEvent(this, type, { text }, true);
  }

  /** Records agent activity (§3.5). */
  noteActivity(): void {
    this.lastActivity = Date.now();
  }

  /** Starts the agent build if it has not started (§3.3). */
  startBuild(): Promise<void> {
    if (this.buildState === 'ready') return Promise.resolve();
    if (this.buildPromise) return this.buildPromise;
    this.buildState = 'building';
    this.buildPromise = (async () => {
      try {
        await this.gateway.buildAgent(this);
        this.buildState = 'ready';
        this.buildPromise = null;
        if (this.finalized) return;
        for (const text of this.heldSteers.splice(0)) this.agent.steer(text);
        this.emit('session.info', this.gateway.info(this));
      } catch (error) {
        this.buildState = 'failed';
        this.buildFailure = error instanceof Error ? error.message : String(error);
        this.buildPromise = null;
        if (!this.finalized) this.emit('error', { message: `agent init failed: ${this.buildFailure}` });
      }
    })();
    return this.buildPromise;
  }

  /** Waits for the agent (§3.3): 'ready', 'failed' or 'timeout'. */
  async waitForAgent(timeoutMs: number, signal?: AbortSignal): Promise<'ready' | 'failed' | 'timeout' | 'aborted'> {
    if (this.buildState === 'ready') return 'ready';
    if (this.buildState === 'none' || (this.buildState === 'failed' && !this.buildPromise)) void this.startBuild();
    const build = this.buildPromise ?? Promise.resolve();
    let timer: ReturnType<typeof setTimeout> | null = null;
    const outcome = await Promise.race([
      build.then((): 'ready' | 'failed' => (this.buildState === 'ready' ? 'ready' : 'failed')),
      new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), timeoutMs);
      }),
      new Promise<'aborted'>((resolve) => {
        if (signal?.aborted) resolve('aborted');
        signal?.addEventListener('abort', () => resolve('aborted'), { once: true });
      }),
    ]);
    if (timer) clearTimeout(timer);
    return outcome;
  }

  /** Starts a turn from an input envelope (§4.4 step 10, §8.4). Events follow asynchronously. */
  startTurn(envelope: { text: string; hidden: boolean; images: string[]; displayText?: string }): void {
    if (!this.reserveTurn()) {
      // Another surface took the session between the input's acceptance and now: the input waits for its turn.
      this.running = false;
      this.queue.unshift({ ...envelope, connection: null, submissions: 1 });
      return;
    }
    this.turnStartedAt = Date.now() / 1000;
    const shown = envelope.displayText ?? envelope.text;
    this.inflight = {
      user: envelope.hidden ? '' : shown,
      assistant: '',
      streaming: true,
      user_originated: !envelope.hidden,
      corrections: [],
      correction_offsets: [],
    };
    this.segmentText = new TextChunks();
    this.lastToolName = null;
    this.lastUsageJson = '';
    this.lastUsageAt = 0;
    const abort = new AbortController();
    this.turnAbort = abort;
    this.turnDone = this.runTurn(envelope, abort).catch((error) => {
      this.gateway.logger.error('turn failed outside the core', { error: String(error) });
    });
  }

  /** Resolves when the current turn (if any) has delivered its `message.complete`. */
  whenTurnEnds(): Promise<void> {
    return this.turnDone;
  }

  /** Interrupts the running turn (§4.4 `session.interrupt`); before the build, cancels it. */
  interruptTurn(hard: boolean): void {
    if (!this.running) {
      // The busy-input policy applies to a turn another surface started too (ADR 0037).
      if (this.foreignTurn) this.agent.interrupt({ issuer: 'user', hard });
      return;
    }
    if (this.buildState !== 'ready') {
      this.turnAbort?.abort(new Error('interrupted'));
      return;
    }
    this.agent.interrupt({ issuer: 'user', hard });
    this.turnAbort?.abort(new Error('interrupted'));
  }

  /** The id of the turn another instance runs on the stored session, while it is shown here; else null. */
  get remoteTurnId(): string | null {
    return this.foreign?.remote ? this.foreign.turnId : null;
  }

  /**
   * Interrupts the turn another instance runs on the stored session: the hub asks that instance, which interrupts it
   * (ADR 0076). Null when no such turn is shown; `unreachable` when that instance did not answer.
   */
  async interruptRemoteTurn(hard: boolean): Promise<'done' | 'not_running' | 'unreachable' | null> {
    const turnId = this.remoteTurnId;
    if (turnId === null) return null;
    const outcome = await this.gateway.host.live.actOnTurn(turnId, {
      kind: 'interrupt',
      options: { issuer: 'user', hard },
    });
    return outcome.status;
  }

  /**
   * Steers (or, with `redirect`, redirects) the turn another instance runs on the stored session, through the hub
   * (ADR 0076). Null when no such turn is shown; `unreachable` when that instance did not answer. An accepted text is
   * recorded as a correction of the shown turn.
   */
  async steerRemoteTurn(text: string, redirect: boolean): Promise<SteerResult | 'unreachable' | null> {
    const turnId = this.remoteTurnId;
    if (turnId === null) return null;
    const outcome = await this.gateway.host.live.actOnTurn(turnId, { kind: 'steer', text, redirect });
    if (outcome.status === 'unreachable') return 'unreachable';
    const result: SteerResult =
      outcome.status === 'done' && outcome.steer ? outcome.steer : { status: 'rejected', reason: 'no_active_turn' };
    if (result.status !== 'rejected' && this.foreign?.turnId === turnId) this.recordCorrection(text);
    return result;
  }

  /** Records an accepted steer or redirect text (§9.2). */
  recordCorrection(text: string): void {
    if (!this.inflight) return;
    this.inflight.corrections.push(text);
    this.inflight.correction_offsets.push([...this.inflight.assistant].length);
  }

  private async runTurn(
    envelope: { text: string; hidden: boolean; images: string[]; displayText?: string },
    abort: AbortController,
  ): Promise<void> {
    this.emit('message.start', {
      input: envelope.hidden ? null : { role: 'user', text: envelope.displayText ?? envelope.text },
    });
    const agentState = await this.waitForAgent(this.gateway.options.turnBuildWaitMs, abort.signal);
    if (agentState !== 'ready') {
      if (agentState === 'aborted') {
        this.complete({ text: '', usage: this.usage(), status: 'interrupted' });
      } else {
        const message =
          agentState === 'timeout' ? 'agent initialization timed out' : `agent init failed: ${this.buildFailure}`;
        this.failTurn(message, { layer: 'gateway', code: 'agent_init_failed', retryable: true });
      }
      return;
    }
    if (this.deferredModel) {
      const spec = this.deferredModel;
      this.deferredModel = null;
      const switched = await this.switchModelAsking(spec, abort.signal).catch((error: unknown) => ({
        ok: false,
        error: { code: 'error', message: error instanceof Error ? error.message : String(error) },
      }));
      if (!switched.ok) this.emit('error', { message: `model switch failed: ${switched.error?.message ?? 'unknown'}` });
      else this.emit('session.info', this.gateway.info(this));
    }
    const input: Parameters<Agent['runTurn']>[0] =
      envelope.images.length > 0
        ? { content: contentWithImages(envelope.text, envelope.images) }
        : { text: envelope.text };
    if (envelope.hidden) input.persistAs = { text: envelope.text, displayKind: 'hidden' };
    else if (envelope.displayText !== undefined && envelope.displayText !== envelope.text)
      input.persistAs = { text: envelope.text, displayMetadata: { display_text: envelope.displayText } };
    // §4.4 step 7: a typed skill command reaches the model as the expanded skill message.
    if (!envelope.hidden && envelope.displayText === undefined)
      Object.assign(input, (await expandSkillText(this.gateway.host, this.agent.cwd, envelope.text))?.input ?? {});
    let result: TurnResult;
    try {
      const run = this.agent.runTurn(input, {
        signal: abort.signal,
        ...(this.turnClaim !== null ? { claim: this.turnClaim } : {}),
      });
      for await (const _event of run) {
        // Shown from the hub subscription, like every turn of the stored session (ADR 0053).
      }
      result = await run.result;
    } catch (error) {
      this.failTurn(error instanceof Error ? error.message : String(error), {
        layer: 'gateway',
        code: 'turn_failed',
        retryable: true,
      });
      return;
    }
    this.finishTurn(result, true);
  }

  /**
   * Switches to `spec`; when its provider's key is missing, asks this session's client for it with a `secret`
   * request (§6.4, core §24.7), saves the answer as the provider's key and switches again.
   */
  private async switchModelAsking(spec: string, signal: AbortSignal): Promise<ModelSwitchResult> {
    const first = await this.agent.switchModel(spec);
    if (first.ok || first.error?.code !== 'missing_credentials') return first;
    const missing = missingKeyOf(this.gateway.host, spec);
    if (missing === null) return first;
    const secret = this.callbacks().secret;
    const answer = await secret(
      {
        requestId: `sec_${randomHex(8)}`,
        sessionId: this.agent.sessionId,
        envVar: missing.envVar,
        prompt: `${first.error.message} Enter ${missing.envVar}:`,
      },
      signal,
    ).catch(() => null);
    if (answer === null || answer.value.trim() === '') return first;
    await this.gateway.host.saveProviderKey(missing.provider, answer.value);
    return this.agent.switchModel(spec);
  }

  private usage() {
    return this.buildState === 'ready' ? usageOf(this.agent, true) : emptyUsage();
  }

  private failTurn(message: string, surface: Record<string, unknown>): void {
    const text = this.inflight?.assistant ?? '';
    this.complete({
      text,
      usage: this.usage(),
      status: 'error',
      error: message,
      recoverable: true,
      error_surface: surface,
      ...(text ? { partial: true } : {}),
    });
  }

  /** `message.complete` of a settled turn; `own` for this session's turn (a foreign turn's pending steer is not ours). */
  private finishTurn(result: TurnResult, own: boolean): void {
    const status =
      result.outcome === 'completed' ? 'complete' : result.outcome === 'cancelled' ? 'interrupted' : 'error';
    const text = result.finalText;
    const payload: Record<string, unknown> = { text, usage: this.usage(), status };
    if (result.lastReasoning) payload.reasoning = result.lastReasoning;
    if (status === 'error') {
      payload.error = result.error?.message ?? result.exitReason;
      payload.recoverable = true;
      payload.error_surface = {
        layer: result.error?.provider ? 'provider' : 'agent',
        code: result.error?.code ?? result.exitReason,
        retryable: result.error?.retryable ?? false,
        ...(result.error?.provider ? { provider: result.error.provider } : {}),
        ...(result.route?.model ? { model: result.route.model } : {}),
      };
    }
    if (status !== 'complete' && text.length > 0) payload.partial = true;
    if (result.rowIds.length > 0 || result.userRowId !== null) {
      const persisted: Record<string, unknown> = { row_ids: result.rowIds, complete: status === 'complete' };
      if (result.userRowId !== null) persisted.user_row_id = result.userRowId;
      const last = result.rowIds[result.rowIds.length - 1];
      if (last !== undefined && status === 'complete') persisted.final_assistant_row_id = last;
      payload.persisted_turn = persisted;
    }
    if (own && result.pendingSteer)
      this.queue.unshift({ text: result.pendingSteer, hidden: false, images: [], connection: null, submissions: 1 });
    this.complete(payload, own);
  }

  /** Emits `message.complete`; for this session's own turn (`own`), also ends its running state and frees its claim. */
  private complete(payload: Record<string, unknown>, own = true): void {
    const failed = payload.status === 'error';
    const inflight = this.inflight;
    this.emit('message.complete', payload);
    this.turnStartedAt = null;
    if (!own) {
      this.inflight = null;
      this.gateway.afterTurn(this);
      return;
    }
    this.running = false;
    this.turnAbort = null;
    this.inflight =
      failed && inflight
        ? {
            ...inflight,
            streaming: false,
            status: 'error',
            error: String(payload.error ?? ''),
            recoverable: true,
            error_surface: payload.error_surface as Record<string, unknown>,
          }
        : null;
    // Freed after the state above is settled: whoever waited for the session (another surface, this session's
    // pending input through the release listener) starts from a finished turn.
    this.releaseTurn();
    this.gateway.afterTurn(this);
  }

  private foldAssistant(): void {
    if (this.inflightState) this.inflightState.assistant += this.assistantChunks.join('');
    this.assistantChunks.length = 0;
  }

  /** Translates one core event to wire events (§5). */
  private translate(event: AgentEvent): void {
    const now = Date.now();
    this.lastActivity = now;
    switch (event.type) {
      case 'message.start':
        this.segmentText = new TextChunks();
        break;
      case 'message.delta':
        if (this.inflightState) {
          this.assistantChunks.push(event.text);
          if (this.assistantChunks.length >= 512) this.foldAssistant();
        }
        this.segmentText.push(event.text);
        this.emitDelta('message.delta', event.text, now);
        break;
      case 'reasoning.delta':
        this.emitDelta('reasoning.delta', event.text, now);
        break;
      case 'message.end':
        if (event.hasToolCalls && event.text.length > 0)
          this.emit('message.interim', { text: event.text, already_streamed: true });
        else if (event.interrupted && event.discarded) {
          const segment = this.segmentText.toString();
          if (segment.length > 0) this.emit('message.interim', { text: segment, already_streamed: true });
        }
        this.segmentText = new TextChunks();
        break;
      case 'tool.generating': {
        // Read here, not per event: the mode matters to tool events only, and a streamed reply is thousands of deltas.
        const mode = this.gateway.toolProgressMode();
        if (mode === 'all' || mode === 'verbose' || event.name === 'clarify')
          this.emit('tool.generating', { name: event.name });
        break;
      }
      case 'tool.start': {
        const show = this.showTool(this.gateway.toolProgressMode(), event.name);
        this.lastToolName = event.name;
        if (!show) break;
        this.shownCalls.add(event.callId);
        const payload: Record<string, unknown> = { tool_id: event.callId, name: event.name, context: event.title };
        if (typeof event.args === 'object' && event.args !== null) payload.args = event.args;
        else payload.args_text = String(event.args ?? '');
        this.emit('tool.start', payload);
        break;
      }
      case 'tool.end': {
        // A call's completion is shown exactly when its start was (§5.4, `new` mode included).
        if (!this.shownCalls.delete(event.callId)) break;
        const payload: Record<string, unknown> = {
          tool_id: event.callId,
          name: event.name,
          duration_s: event.durationMs / 1000,
          summary: event.status,
        };
        try {
          payload.result = JSON.parse(event.result) as unknown;
        } catch {
          payload.result_text = event.result;
        }
        const diff = event.diffs?.[0];
        if (diff) payload.inline_diff = diff.unified;
        this.emit('tool.complete', payload);
        break;
      }
      case 'todo.updated': {
        const revision = (this.todos?.revision ?? 0) + 1;
        this.todos = { todos: event.todos, revision };
        this.emit('todo.updated', { todos: event.todos, revision });
        break;
      }
      case 'usage': {
        const usage = this.usage();
        const json = JSON.stringify(usage);
        const now = Date.now();
        if (json !== this.lastUsageJson && now - this.lastUsageAt >= 1000) {
          this.lastUsageJson = json;
          this.lastUsageAt = now;
          this.emit('session.usage', { usage });
        }
        break;
      }
      case 'retry':
        this.emit('status.update', { kind: 'status', text: event.message });
        break;
      case 'compaction.start':
        this.emit('status.update', { kind: 'compacting', text: 'compacting messages…' });
        break;
      case 'compaction.end':
        this.emit('status.update', { kind: 'ready', text: '' });
        break;
      case 'notice':
        this.emit('notice', { message: event.text });
        break;
      case 'steer.delivered':
        break;
      case 'subagent.start':
        this.emit('subagent.start', {
          goal: event.goal,
          task_count: 1,
          task_index: event.taskIndex,
          subagent_id: event.childId,
          child_session_id: event.childSessionId,
          status: 'running',
          ...(event.model ? { model: event.model.model } : {}),
        });
        break;
      case 'subagent.progress':
        this.emit(event.kind === 'tool' ? 'subagent.tool' : 'subagent.progress', {
          goal: '',
          task_count: 1,
          task_index: 0,
          subagent_id: event.childId,
          text: event.text,
          ...(event.name ? { tool_name: event.name } : {}),
        });
        break;
      case 'subagent.end':
        this.emit('subagent.complete', {
          goal: '',
          task_count: 1,
          task_index: 0,
          subagent_id: event.childId,
          status: event.status,
          summary: event.summary,
        });
        break;
      default:
        break;
    }
  }

  private showTool(mode: string, name: string): boolean {
    if (name === 'clarify') return true;
    if (mode === 'off') return false;
    if (mode === 'new') return name !== this.lastToolName;
    return true;
  }

  /** Host callbacks of this session: human prompts become server requests (§6). */
  callbacks() {
    return sessionCallbacks(this, this.gateway);
  }
}

/** The provider and key variable a model spec lacks, or null when its failure is not a missing key. */
function missingKeyOf(host: AgentHost, spec: string): { provider: string; envVar: string } | null {
  try {
    host.resolveModel(spec);
    return null;
  } catch (error) {
    if (!HermesError.isInstance(error) || error.code !== 'missing_credentials') return null;
    const provider = error.details?.provider;
    const envVar = error.details?.envVar;
    if (typeof provider !== 'string' || typeof envVar !== 'string' || envVar === 'HERMES_BASE_URL') return null;
    return { provider, envVar };
  }
}
