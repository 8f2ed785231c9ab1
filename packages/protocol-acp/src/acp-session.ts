import { randomUUID } from 'node:crypto';
import { resolve as resolvePath, sep } from 'node:path';
import {
  type AgentContext,
  type ContentBlock,
  type PermissionOption,
  type PromptResponse,
  RequestError,
  type RequestPermissionResponse,
  type SessionConfigOption,
  type SessionUpdate,
  type ToolCallContent,
  type ToolCallStatus,
} from '@agentclientprotocol/sdk/unstable';
import type {
  Agent,
  AgentEvent,
  AgentHost,
  ApprovalDecision,
  ApprovalRequest,
  FileAccess,
  JsonValue,
  Logger,
  TurnResult,
} from '@hermes/core';
import { type AcpCommand, type AcpCommandRegistry, runAcpCommand } from './acp-commands.js';
import type { CoreModule } from './core-module.js';
import type { ToolCallIds } from './history-replay.js';
import { NotificationBatch, TextChunkRun } from './ndjson-sink.js';
import { convertPrompt } from './prompt-content.js';
import { firstLine, isAbortError } from './request-errors.js';
import { configOptions, type ReasoningEffortValue, type SessionModeId } from './session-config.js';
import { skillCommands, skillCommandsNow, skillTurnInput, warmSkills } from './skill-commands.js';
import { completionContent, completionStatus, planEntries, rawOutputOf, runningContent } from './tool-rendering.js';

/** Released after this long at most when a cancelled turn stops its client terminals (§7.1). */
const TERMINAL_CLEANUP_BUDGET_MS = 1000;

/** A client terminal a turn created, until released. */
export interface TerminalRecord {
  terminalId: string;
  callId: string;
  released: boolean;
  release(): Promise<void>;
  kill(): Promise<void>;
}

interface AnnouncedCall {
  name: string;
  args: JsonValue;
  status: ToolCallStatus;
  terminalId?: string;
}

/** State of one running prompt turn. */
export class TurnState {
  readonly controller = new AbortController();
  /** Core call id → announced ACP id. */
  readonly ids = new Map<string, string>();
  readonly announced = new Map<string, AnnouncedCall>();
  /** The client sent `session/cancel` (or `$/cancel_request`) for this turn. */
  clientCancelled = false;
  readonly terminals = new Set<TerminalRecord>();
  /** Releases the core asked for, held until the call's completion update is written (§12.3). */
  readonly pendingReleases = new Map<string, TerminalRecord>();
}

interface QueueEntry {
  /** Wire number of the prompt request (see WireOrder). */
  seq: number;
  cancelled: boolean;
}

/** What a session needs from its connection. */
export interface SessionEnvironment {
  /** The core, imported with the host. */
  core: CoreModule;
  host: AgentHost;
  client: () => AgentContext;
  logger: Logger;
  files: FileAccess;
  /** The slash commands of the connection (§6.3). */
  commands: AcpCommandRegistry;
  /** The CLI version, for `/version`. */
  version: string;
  /** A wire number later than every message read so far, for cancels not read from the wire. */
  nextSeq: () => number;
  /** Whether the connection's writable takes a {@link NotificationBatch} (`serveAcp`'s sink does). */
  batches: () => boolean;
  /** Whether the connection's output is congested (the client lags); false where nobody can tell. */
  congested: () => boolean;
}

/** One ACP session active on a connection (spec/acp.md §5.1). */
export class AcpSession {
  readonly sessionId: string;
  readonly agent: Agent;
  readonly ids: ToolCallIds;
  mode: SessionModeId;
  readonly rejectedKeys = new Set<string>();
  clientMcpServers: string[] = [];
  currentTurn: TurnState | null = null;
  #currentEntry: QueueEntry | null = null;
  #tail: Promise<void> = Promise.resolve();
  #queued = 0;
  /** Wire number of the latest cancel: prompts read before it and not yet running are cancelled. */
  #lastCancelSeq = 0;
  #writes: Promise<void> = Promise.resolve();
  /** Updates queued since the pending write started; they go out together, in call order. */
  #batch: (SessionUpdate | TextChunkRun)[] | null = null;
  #permissionSlot: Promise<void> = Promise.resolve();
  #closed = false;
  readonly #environment: SessionEnvironment;
  readonly #unsubscribe: () => void;

  constructor(init: { agent: Agent; mode: SessionModeId; ids: ToolCallIds; environment: SessionEnvironment }) {
    this.agent = init.agent;
    this.sessionId = init.agent.sessionId;
    this.mode = init.mode;
    this.ids = init.ids;
    this.#environment = init.environment;
    this.#unsubscribe = this.agent.subscribe((event) => this.#onSessionEvent(event));
    warmSkills(init.environment.host, init.agent.cwd);
  }

  /** True while a prompt of this session runs or waits. */
  get hasPromptsInProgress(): boolean {
    return this.currentTurn !== null || this.#queued > 0 || this.agent.busy;
  }

  /**
   * Queues one `session/update`; updates of a session are written in call order. Updates queued
   * before the pending write starts (the deltas of one event-loop turn) join it and go to the SDK
   * as one send; each is still its own notification on the wire.
   */
  send(update: SessionUpdate | TextChunkRun): Promise<void> {
    if (this.#batch) {
      // A client that lags gets the text queued meanwhile in fewer, longer chunks: what waits for it stays one
      // update per message however long the answer, instead of one per delta (ADR 0025).
      const last = this.#batch.length - 1;
      const previous = this.#batch[last] as SessionUpdate | TextChunkRun;
      const merged =
        previous instanceof TextChunkRun || update instanceof TextChunkRun || !this.#environment.congested()
          ? null
          : mergedChunk(previous, update);
      if (merged) this.#batch[last] = merged;
      else this.#batch.push(update);
      return this.#writes;
    }
    const batch = [update];
    this.#batch = batch;
    const client = this.#environment.client();
    this.#writes = this.#writes
      .then(() => {
        if (this.#batch === batch) this.#batch = null;
        if (batch.length === 1 || !this.#environment.batches()) return this.#notifyEach(client, batch);
        return client.notify('session/update', NotificationBatch.sessionUpdates(this.sessionId, batch) as never);
      })
      .catch((error: unknown) =>
        this.#environment.logger.debug('session/update not written', { error: String(error) }),
      );
    return this.#writes;
  }

  async #notifyEach(client: AgentContext, updates: (SessionUpdate | TextChunkRun)[]): Promise<void> {
    for (const entry of updates) {
      const update = entry instanceof TextChunkRun ? (entry.update() as SessionUpdate) : entry;
      await client.notify('session/update', { sessionId: this.sessionId, update });
    }
  }

  /**
   * Queues a streamed text chunk. While the client lags, it joins the run of chunks of the same message queued
   * before it (ADR 0025); otherwise it is an update of its own, as every chunk is for a client that keeps up.
   */
  #sendTextChunk(kind: TextChunkRun['kind'], text: string, messageId: string | undefined): void {
    const batch = this.#batch;
    if (batch !== null) {
      const last = batch[batch.length - 1];
      if (
        last instanceof TextChunkRun &&
        last.kind === kind &&
        last.messageId === messageId &&
        this.#environment.congested()
      ) {
        last.push(text);
        return;
      }
    }
    void this.send(new TextChunkRun(kind, text, messageId));
  }

  /** Resolves when every queued update has been written. */
  flush(): Promise<void> {
    return this.#writes;
  }

  /** The complete config option list for this session. */
  configOptions(): SessionConfigOption[] {
    const status = this.agent.status();
    return configOptions({
      mode: this.mode,
      modelSpec: this.agent.model?.spec ?? status.model?.spec ?? null,
      reasoningEffort: (status.reasoningEffort ?? 'default') as ReasoningEffortValue,
      models: this.#environment.host.listModels(),
    });
  }

  /** Applies a mode (§11.1); `announce` sends `current_mode_update` for changes the client did not ask for by mode. */
  async setMode(mode: SessionModeId, options: { currentModeUpdate: boolean; configOptionUpdate: boolean }) {
    this.mode = mode;
    this.agent.setYolo(mode === 'yolo');
    if (options.currentModeUpdate) void this.send({ sessionUpdate: 'current_mode_update', currentModeId: mode });
    if (options.configOptionUpdate) {
      void this.send({ sessionUpdate: 'config_option_update', configOptions: this.configOptions() });
    }
    await this.flush();
  }

  /** Sends `usage_update` from the Agent's snapshot when the context window is known (§8.4). */
  sendUsageSnapshot(): Promise<void> {
    const snapshot = this.agent.usage();
    const size = snapshot.context.contextWindow;
    if (!size) return this.flush();
    const used = Math.min(snapshot.context.lastPromptTokens || snapshot.context.estimatedTokens, size);
    return this.send({
      sessionUpdate: 'usage_update',
      used,
      size,
      ...(snapshot.costStatus !== 'unknown' ? { cost: { amount: snapshot.costUsd, currency: 'USD' } } : {}),
    });
  }

  /** The updates sent after a set-up response (§5.3, §5.4, §5.6). */
  async sendSetupUpdates(options: { title: boolean }): Promise<void> {
    // Skills read in time are announced with the built-in commands; otherwise a second update follows.
    const skills = skillCommandsNow(this.#environment.host, this.agent.cwd);
    void this.send({
      sessionUpdate: 'available_commands_update',
      availableCommands: [...this.#availableCommands(), ...(skills ?? [])],
    });
    if (skills === null)
      void skillCommands(this.#environment.host, this.agent.cwd).then((later) =>
        later.length > 0
          ? this.send({
              sessionUpdate: 'available_commands_update',
              availableCommands: [...this.#availableCommands(), ...later],
            })
          : undefined,
      );
    void this.sendUsageSnapshot();
    const title = this.agent.title();
    if (options.title && title) {
      void this.send({ sessionUpdate: 'session_info_update', title, updatedAt: new Date().toISOString() });
    }
    await this.flush();
  }

  #availableCommands() {
    return this.#environment.commands.available(this.#environment.host);
  }

  /** Sends the current command list, skills included, again (after commands were registered or skills reloaded). */
  async sendAvailableCommands(): Promise<void> {
    const skills = await skillCommands(this.#environment.host, this.agent.cwd);
    await this.send({
      sessionUpdate: 'available_commands_update',
      availableCommands: [...this.#availableCommands(), ...skills],
    });
  }

  /** The advertised command a prompt invokes, with its argument string, or null for a model prompt (§6.3). */
  #commandOf(prompt: ContentBlock[]): { command: AcpCommand; args: string } | null {
    const first = prompt[0];
    if (first?.type !== 'text') return null;
    const parsed = this.#environment.core.parseCommandLine(first.text);
    const command = parsed ? this.#environment.commands.find(parsed.name) : undefined;
    return parsed && command ? { command, args: parsed.args } : null;
  }

  /**
   * Handles `session/prompt`: queue, run, answer exactly once (§6). `seq` is the wire number the
   * request was read with, so a `session/cancel` read after it covers it even when the SDK runs
   * the cancel's handler first (§7.1).
   */
  async prompt(prompt: ContentBlock[], requestSignal: AbortSignal, seq: number): Promise<PromptResponse> {
    const invoked = this.#commandOf(prompt);
    // `/steer` acts on the running turn, so it cannot wait behind it in the queue.
    if (invoked?.command.immediate) return this.#runCommand(invoked.command, invoked.args);
    const entry: QueueEntry = { seq, cancelled: false };
    const previous = this.#tail;
    let release!: () => void;
    this.#tail = new Promise<void>((resolve) => {
      release = resolve;
    });
    this.#queued++;
    const onRequestCancelled = () => {
      entry.cancelled = true;
      if (this.#currentEntry === entry) this.#abortTurn(true, 'user');
    };
    requestSignal.addEventListener('abort', onRequestCancelled, { once: true });
    try {
      await previous;
      this.#queued--;
      if (entry.cancelled || this.#lastCancelSeq > entry.seq || this.#closed) {
        return { stopReason: 'cancelled' };
      }
      this.#currentEntry = entry;
      return await this.#runPrompt(prompt);
    } finally {
      this.#currentEntry = null;
      requestSignal.removeEventListener('abort', onRequestCancelled);
      // The next queued turn starts after this response has been handed to the writer (§6.1).
      setImmediate(release);
    }
  }

  /**
   * `session/cancel` read with wire number `seq` (§7.1): aborts the running turn and every prompt
   * read before it; prompts read after it run normally. Without `seq` (a cancel from elsewhere,
   * such as a `cancelled` permission outcome) it covers everything received so far.
   */
  cancel(seq: number = this.#environment.nextSeq()): void {
    this.#lastCancelSeq = Math.max(this.#lastCancelSeq, seq);
    const current = this.#currentEntry;
    if (current && current.seq > seq) return;
    this.#abortTurn(true, 'user');
  }

  #abortTurn(byClient: boolean, issuer: string): void {
    const turn = this.currentTurn;
    if (!turn || turn.controller.signal.aborted) return;
    turn.clientCancelled = byClient;
    turn.controller.abort({ issuer, reason: 'cancelled by the client', hard: true });
  }

  async #runPrompt(prompt: ContentBlock[]): Promise<PromptResponse> {
    const invoked = this.#commandOf(prompt);
    if (invoked) return this.#runCommand(invoked.command, invoked.args);
    const turn = new TurnState();
    this.currentTurn = turn;
    try {
      const converted = await convertPrompt(prompt, { files: this.#environment.files, sessionId: this.sessionId });
      const first = prompt[0];
      const skill =
        first?.type === 'text'
          ? await skillTurnInput(this.#environment.host, this.agent.cwd, first.text, converted)
          : null;
      const run = this.agent.runTurn(
        skill ??
          (converted.persistAs
            ? { content: converted.content, persistAs: converted.persistAs }
            : { content: converted.content }),
        { signal: turn.controller.signal },
      );
      try {
        for await (const event of run) this.#onTurnEvent(turn, event);
      } catch (error) {
        this.#environment.logger.debug('turn event stream ended with an error', { error: String(error) });
      }
      const result = await run.result;
      return await this.#finishTurn(turn, result);
    } catch (error) {
      if (turn.controller.signal.aborted || isAbortError(error)) {
        await this.#cleanUpTerminals(turn);
        await this.flush();
        return { stopReason: 'cancelled' };
      }
      throw error;
    } finally {
      this.currentTurn = null;
    }
  }

  async #runCommand(command: AcpCommand, args: string): Promise<PromptResponse> {
    const outcome = await runAcpCommand(
      command,
      {
        agent: this.agent,
        host: this.#environment.host,
        version: this.#environment.version,
        clientMcpServers: this.clientMcpServers,
        commands: this.#environment.commands.list(),
      },
      args,
    );
    void this.send({
      sessionUpdate: 'agent_message_chunk',
      content: { type: 'text', text: outcome.text || '(no output)' },
      messageId: randomUUID(),
    });
    if (outcome.usageUpdate) void this.sendUsageSnapshot();
    await this.flush();
    return { stopReason: 'end_turn' };
  }

  #onSessionEvent(event: AgentEvent): void {
    if (this.#closed) return;
    switch (event.type) {
      case 'title':
        void this.send({
          sessionUpdate: 'session_info_update',
          title: event.title,
          updatedAt: new Date().toISOString(),
        });
        break;
      case 'model.switched':
        void this.send({ sessionUpdate: 'config_option_update', configOptions: this.configOptions() });
        break;
      case 'compaction.end':
        if (event.turnId === null) void this.sendUsageSnapshot();
        break;
      default:
        break;
    }
  }

  #onTurnEvent(turn: TurnState, event: AgentEvent): void {
    const logger = this.#environment.logger;
    switch (event.type) {
      case 'message.delta':
        this.#sendTextChunk('agent_message_chunk', event.text, event.messageId);
        break;
      case 'reasoning.delta':
        this.#sendTextChunk('agent_thought_chunk', event.text, `${event.messageId}-reasoning`);
        break;
      case 'tool.start': {
        // After a cancel no new call is announced (§7.1).
        if (turn.controller.signal.aborted) break;
        const toolCallId = this.ids.assign(event.callId);
        turn.ids.set(event.callId, toolCallId);
        turn.announced.set(toolCallId, { name: event.name, args: event.args, status: 'in_progress' });
        const content = runningContent(event.name, event.args);
        void this.send({
          sessionUpdate: 'tool_call',
          toolCallId,
          name: event.name,
          title: event.title,
          kind: event.kind,
          status: 'in_progress',
          rawInput: event.args,
          locations: event.locations,
          ...(content ? { content } : {}),
        });
        break;
      }
      case 'tool.end': {
        const toolCallId = turn.ids.get(event.callId);
        const call = toolCallId ? turn.announced.get(toolCallId) : undefined;
        if (!toolCallId || !call) break;
        let written: Promise<void>;
        if (event.status === 'cancelled') {
          call.status = 'failed';
          written = turn.clientCancelled
            ? this.flush()
            : this.send({
                sessionUpdate: 'tool_call_update',
                toolCallId,
                status: 'failed',
                content: [{ type: 'content', content: { type: 'text', text: 'Cancelled' } }],
              });
        } else {
          const status = completionStatus(event.status);
          call.status = status;
          const content = completionContent({
            name: event.name,
            args: call.args,
            status: event.status,
            result: event.result,
            diffs: event.diffs,
            terminalId: call.terminalId,
          });
          const rawOutput = rawOutputOf(event.structured);
          written = this.send({
            sessionUpdate: 'tool_call_update',
            toolCallId,
            status,
            ...(content ? { content } : {}),
            ...(event.locations ? { locations: event.locations } : {}),
            ...(rawOutput !== undefined ? { rawOutput } : {}),
          });
        }
        const terminal = turn.pendingReleases.get(event.callId);
        if (terminal) {
          turn.pendingReleases.delete(event.callId);
          void written.then(() => terminal.release());
        }
        break;
      }
      case 'todo.updated':
        void this.send({ sessionUpdate: 'plan', entries: planEntries(event.todos) });
        break;
      case 'usage': {
        if (!event.contextWindow) break;
        void this.send({
          sessionUpdate: 'usage_update',
          used: Math.min(event.contextTokens, event.contextWindow),
          size: event.contextWindow,
          ...(event.costStatus !== 'unknown' && event.costUsd.session !== null
            ? { cost: { amount: event.costUsd.session, currency: 'USD' } }
            : {}),
        });
        break;
      }
      case 'status':
        logger.debug(`status: ${event.text}`);
        break;
      case 'retry':
      case 'fallback':
      case 'notice':
      case 'steer.delivered':
        logger.info(`${event.type}`, { event: JSON.parse(JSON.stringify(event)) });
        break;
      default:
        break;
    }
  }

  /** Closes calls left open, then maps the turn result to a response or an error (§6.4–§6.6). */
  async #finishTurn(turn: TurnState, result: TurnResult): Promise<PromptResponse> {
    if (result.outcome === 'cancelled') {
      await this.#cleanUpTerminals(turn);
      await this.flush();
      return { stopReason: 'cancelled' };
    }
    for (const [toolCallId, call] of turn.announced) {
      if (call.status !== 'in_progress' && call.status !== 'pending') continue;
      call.status = 'failed';
      void this.send({
        sessionUpdate: 'tool_call_update',
        toolCallId,
        status: 'failed',
        content: [{ type: 'content', content: { type: 'text', text: 'Tool call did not complete' } }],
      });
    }
    await this.#cleanUpTerminals(turn);
    void this.sendUsageSnapshot();
    await this.flush();
    if (result.outcome === 'failed') {
      if (result.exitReason.startsWith('max_iterations_reached')) return { stopReason: 'max_turn_requests' };
      const message = firstLine(result.error?.message ?? result.exitReason);
      if (result.exitReason === 'provider_error(auth)' || result.error?.code === 'missing_credentials') {
        const provider = result.error?.provider ?? result.route?.provider ?? 'the provider';
        throw RequestError.authRequired(
          { code: result.error?.code, exitReason: result.exitReason },
          `${provider}: ${message}`,
        );
      }
      throw new RequestError(-32603, message, {
        code: result.error?.code ?? 'turn_failed',
        exitReason: result.exitReason,
      });
    }
    if (result.finishReason === 'length') return { stopReason: 'max_tokens' };
    if (result.finishReason === 'content_filter') {
      // The refused prompt leaves the history (§6.4).
      await this.agent
        .undo()
        .catch((error: unknown) =>
          this.#environment.logger.warn('undo after refusal failed', { error: String(error) }),
        );
      return { stopReason: 'refusal' };
    }
    return { stopReason: 'end_turn' };
  }

  /** Kills and releases the turn's client terminals, waiting at most one second (§7.1, §12.3). */
  async #cleanUpTerminals(turn: TurnState): Promise<void> {
    const open = [...turn.terminals].filter((terminal) => !terminal.released);
    if (open.length === 0) return;
    const aborted = turn.controller.signal.aborted;
    const work = Promise.all(
      open.map(async (terminal) => {
        if (aborted) await terminal.kill().catch(() => {});
        await terminal.release().catch(() => {});
      }),
    );
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      work,
      new Promise<void>((resolve) => (timer = setTimeout(resolve, TERMINAL_CLEANUP_BUDGET_MS))),
    ]);
    clearTimeout(timer);
  }

  /** Marks a call as running in a client terminal and shows the terminal (§9.6). */
  attachTerminal(turn: TurnState, callId: string, terminalId: string): void {
    const toolCallId = turn.ids.get(callId);
    const call = toolCallId ? turn.announced.get(toolCallId) : undefined;
    if (!toolCallId || !call) return;
    call.terminalId = terminalId;
    void this.send({ sessionUpdate: 'tool_call_update', toolCallId, content: [{ type: 'terminal', terminalId }] });
  }

  /** Runs `work` when no other permission request of this session is outstanding (§10.5). */
  async withPermissionSlot<T>(work: () => Promise<T>): Promise<T> {
    const previous = this.#permissionSlot;
    let done!: () => void;
    this.#permissionSlot = new Promise<void>((resolve) => {
      done = resolve;
    });
    try {
      await previous;
      return await work();
    } finally {
      done();
    }
  }

  /**
   * Sends one `session/request_permission` and waits for the answer or for `signal`. A
   * `cancelled` outcome from the client cancels the turn (§10.3).
   */
  async requestPermission(
    toolCall: { toolCallId: string; content?: ToolCallContent[] },
    options: PermissionOption[],
    signal: AbortSignal,
  ): Promise<{ outcome: 'selected'; optionId: string } | { outcome: 'cancelled' } | { outcome: 'error' }> {
    if (signal.aborted) return { outcome: 'cancelled' };
    try {
      const response = await this.#environment
        .client()
        .request<RequestPermissionResponse>(
          'session/request_permission',
          { sessionId: this.sessionId, toolCall, options },
          { cancellationSignal: signal, stopWaitingOnCancel: true },
        );
      if (response.outcome.outcome === 'cancelled') {
        if (!signal.aborted) this.cancel();
        return { outcome: 'cancelled' };
      }
      const optionId = response.outcome.optionId;
      if (!options.some((option) => option.optionId === optionId)) {
        this.#environment.logger.warn(`unknown permission option "${optionId}", treated as a rejection`);
        return { outcome: 'selected', optionId: 'reject_once' };
      }
      return { outcome: 'selected', optionId };
    } catch (error) {
      if (signal.aborted) return { outcome: 'cancelled' };
      this.#environment.logger.warn('permission request failed, treated as a rejection', { error: String(error) });
      return { outcome: 'error' };
    }
  }

  /** The approve callback of §10 for this session's commands. */
  async approve(request: ApprovalRequest, signal: AbortSignal): Promise<ApprovalDecision> {
    const rejected = () => request.patternKeys.some((key) => this.rejectedKeys.has(key));
    if (rejected()) return 'deny';
    const turn = this.currentTurn;
    const combined = turn ? AbortSignal.any([signal, turn.controller.signal]) : signal;
    return this.withPermissionSlot(async () => {
      if (rejected()) return 'deny';
      if (combined.aborted) return 'deny';
      let toolCallId = turn?.ids.get(request.callId);
      let subagentCall = false;
      if (!toolCallId) {
        // A subagent's command: announce it first, so the request refers to a known call (§9.2).
        subagentCall = true;
        toolCallId = this.ids.assign(request.callId);
        turn?.ids.set(request.callId, toolCallId);
        turn?.announced.set(toolCallId, { name: 'terminal', args: { command: request.command }, status: 'pending' });
        void this.send({
          sessionUpdate: 'tool_call',
          toolCallId,
          name: request.toolName,
          title: `[subagent] ${request.command.split('\n')[0]}`,
          kind: 'execute',
          status: 'pending',
          rawInput: { command: request.command },
          content: [{ type: 'content', content: { type: 'text', text: `\`\`\`sh\n$ ${request.command}\n\`\`\`` } }],
        });
      }
      const options: PermissionOption[] = [];
      if (request.choices.includes('once'))
        options.push({ optionId: 'allow_once', kind: 'allow_once', name: 'Allow once' });
      if (request.choices.includes('session')) {
        options.push({
          optionId: 'allow_session',
          kind: 'allow_always',
          name: 'Allow this kind of command for this session',
        });
      }
      if (request.choices.includes('always')) {
        // `always` allows exactly this command from then on, never its class (ADR 0034): say so.
        const scope = request.alwaysScope ?? request.command.trim();
        const shown = scope.length > 80 || scope.includes('\n') ? `${scope.split('\n')[0]?.slice(0, 77)}…` : scope;
        options.push({ optionId: 'allow_always', kind: 'allow_always', name: `Always allow \`${shown}\`` });
      }
      if (request.choices.includes('deny')) {
        options.push({ optionId: 'reject_once', kind: 'reject_once', name: 'Reject' });
        options.push({
          optionId: 'reject_always',
          kind: 'reject_always',
          name: 'Reject this kind of command for this session',
        });
      }
      await this.flush();
      const answer = await this.requestPermission({ toolCallId }, options, combined);
      let decision: ApprovalDecision = 'deny';
      if (answer.outcome === 'selected') {
        switch (answer.optionId) {
          case 'allow_once':
            decision = 'once';
            break;
          case 'allow_session':
            decision = 'session';
            break;
          case 'allow_always':
            decision = 'always';
            break;
          case 'reject_always':
            for (const key of request.patternKeys) this.rejectedKeys.add(key);
            break;
          default:
            break;
        }
      }
      if (subagentCall) {
        const call = turn?.announced.get(toolCallId);
        if (call) call.status = decision === 'deny' ? 'failed' : 'completed';
        void this.send({
          sessionUpdate: 'tool_call_update',
          toolCallId,
          status: decision === 'deny' ? 'failed' : 'completed',
        });
      }
      return decision;
    });
  }

  /**
   * Edit approval in the write seam (§10.2, §12.2). Resolves when the write may proceed; rejects
   * with "Edit rejected by the user" otherwise.
   */
  async approveEdit(input: { callId: string; path: string; oldText: string | null; newText: string }): Promise<void> {
    if (this.mode === 'yolo') return;
    if (this.mode === 'accept-edits' && (await isInside(input.path, this.agent.cwd))) return;
    const turn = this.currentTurn;
    const signal = turn?.controller.signal ?? new AbortController().signal;
    const approved = await this.withPermissionSlot(async () => {
      if (this.mode === 'yolo') return true;
      if (this.mode === 'accept-edits' && (await isInside(input.path, this.agent.cwd))) return true;
      const toolCallId = turn?.ids.get(input.callId) ?? input.callId;
      const options: PermissionOption[] = [{ optionId: 'allow_once', kind: 'allow_once', name: 'Allow' }];
      if (this.mode !== 'accept-edits') {
        options.push({ optionId: 'allow_session', kind: 'allow_always', name: 'Allow all edits this session' });
      }
      options.push({ optionId: 'reject_once', kind: 'reject_once', name: 'Reject' });
      await this.flush();
      const answer = await this.requestPermission(
        { toolCallId, content: [{ type: 'diff', path: input.path, oldText: input.oldText, newText: input.newText }] },
        options,
        signal,
      );
      if (answer.outcome !== 'selected') return false;
      if (answer.optionId === 'allow_session') {
        await this.setMode('accept-edits', { currentModeUpdate: true, configOptionUpdate: true });
        return true;
      }
      return answer.optionId === 'allow_once';
    });
    if (!approved) throw new Error('Edit rejected by the user');
  }

  /** `session/close`: cancel everything, then close the core Agent (§5.8). */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#lastCancelSeq = Number.POSITIVE_INFINITY;
    this.#abortTurn(true, 'user');
    this.#closed = true;
    await this.#tail;
    await new Promise<void>((resolve) => setImmediate(resolve));
    this.#unsubscribe();
    await this.agent
      .close()
      .catch((error: unknown) => this.#environment.logger.warn('closing the session failed', { error: String(error) }));
    this.rejectedKeys.clear();
  }

  /** Stops forwarding events without closing the core Agent (a reload replaces this state). */
  detach(): void {
    this.#closed = true;
    this.#unsubscribe();
  }
}

/** True when `path`, with the symbolic links of its existing part resolved, is `root` or below it. */
export async function isInside(path: string, root: string): Promise<boolean> {
  const { realpath } = await import('node:fs/promises');
  const { dirname, basename, join } = await import('node:path');
  const resolveExisting = async (target: string): Promise<string> => {
    try {
      return await realpath(target);
    } catch {
      const parent = dirname(target);
      if (parent === target) return target;
      return join(await resolveExisting(parent), basename(target));
    }
  };
  const real = await resolveExisting(resolvePath(path));
  const realRoot = await resolveExisting(resolvePath(root));
  return real === realRoot || real.startsWith(realRoot.endsWith(sep) ? realRoot : realRoot + sep);
}

/**
 * Two text chunks of one message (or one thought) as one, or null when they are not that: another update kind,
 * non-text content, another message, or any other field set.
 */
function mergedChunk(previous: SessionUpdate, next: SessionUpdate): SessionUpdate | null {
  if (next.sessionUpdate !== 'agent_message_chunk' && next.sessionUpdate !== 'agent_thought_chunk') return null;
  if (previous.sessionUpdate !== next.sessionUpdate) return null;
  const before = previous as SessionUpdate & { content: { type: string; text?: string }; messageId?: unknown };
  const after = next as typeof before;
  if (before.content.type !== 'text' || after.content.type !== 'text') return null;
  if (before.messageId !== after.messageId) return null;
  if (!sameKeys(before, after) || !textContent(before.content) || !textContent(after.content)) return null;
  return { ...before, content: { type: 'text', text: `${before.content.text}${after.content.text}` } } as SessionUpdate;
}

/**
 * Whether two updates have the same own keys (a merge would drop a field only one of them has). Counted with for-in
 * rather than two `Object.keys` arrays: a lagging client's reply merges once per delta.
 */
function sameKeys(a: object, b: object): boolean {
  let count = 0;
  for (const key in a) {
    if (!Object.hasOwn(a, key) || !Object.hasOwn(b, key)) return false;
    count += 1;
  }
  for (const key in b) {
    if (!Object.hasOwn(b, key)) return false;
    count -= 1;
  }
  return count === 0;
}

/** Whether a content block is exactly `{ type, text }`. */
function textContent(content: object): boolean {
  let count = 0;
  for (const key in content) {
    if (key !== 'type' && key !== 'text') return false;
    count += 1;
  }
  return count === 2 && Object.hasOwn(content, 'type') && Object.hasOwn(content, 'text');
}
