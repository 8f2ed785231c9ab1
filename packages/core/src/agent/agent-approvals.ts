import { realpath } from 'node:fs/promises';
import { allowlistAllows, alwaysScopeOf } from '../approvals/allowlist.js';
import { judgeCommand } from '../approvals/detect.js';
import { HermesError } from '../errors.js';
import type { AgentEventPayloads } from '../events.js';
import { newId } from '../ids.js';
import type { CommandSandbox } from '../tools/sandbox.js';
import type { ApprovalOutcome, ClarifyOutcome, ToolContext } from '../tools/types.js';
import type { ApprovalChoice, ApprovalRequest, ClarifyAnswer, ClarifyRequest, HostCallbacks } from '../types.js';
import { AgentTranscript } from './agent-transcript.js';
import type { SessionInternals } from './internals.js';
import type { HermesSettings } from './settings.js';
import type { TurnRunner } from './turn.js';

/**
 * The settings a policy change is judged by: manual mode, no YOLO, no allowlist, so that only the
 * user can approve it (issue 32).
 */
function userOnly(settings: HermesSettings): HermesSettings {
  return {
    ...settings,
    approvals: { ...settings.approvals, mode: 'manual', yolo: false },
    command_allowlist: [],
  };
}

/** The `sandbox` field of a tool context, left out when commands run unconfined. */
function sandboxOf(sandbox: CommandSandbox | undefined): { sandbox?: CommandSandbox } {
  return sandbox === undefined ? {} : { sandbox };
}

/** The tool context of each call: approvals, clarify questions, sudo and missing secrets (spec/core.md §12). */
export abstract class AgentApprovals extends AgentTranscript {
  /**
   * Absolute paths (as written and resolved) that `write_file` or `patch` wrote in this session or
   * its subagents: running one of them by path is not trusted like an existing script (ADR 0033).
   */
  private readonly agentWrittenPaths = new Set<string>();
  /**
   * When this session's object was made (wall clock, as file ctimes are): a script changed since is new to the
   * session, and what cannot be judged in it asks (ADR 0033, decision 8).
   */
  private readonly scriptsChangedSince = Date.now();

  // ---- tools ---------------------------------------------------------------------------------

  /** Whether a file tool of this session (or of a subagent) wrote this absolute path. */
  protected writtenByAgent(path: string): boolean {
    return this.grantRoot.agentWrittenPaths.has(path);
  }

  /** The session's file access, recording each path a file tool writes (before the write, so a parallel command sees it). */
  private recordingFiles(): ToolContext['files'] {
    const files = this.checkpointedFiles;
    const written = this.grantRoot.agentWrittenPaths;
    return {
      readText: (input) => files.readText(input),
      writeText: async (input) => {
        written.add(input.path);
        try {
          await files.writeText(input);
        } finally {
          // A write through a symlink lands on its target, which a command may name instead.
          written.add(await realpath(input.path).catch(() => input.path));
        }
      },
    };
  }

  /**
   * The `secret` callback that answers for this session now (its running turn's, its own, or the
   * host's): what an MCP server connecting on the session's behalf asks (spec/core.md §24.7).
   */
  secretCallback(): HostCallbacks['secret'] {
    return this.callbacksFor(this.currentTurn).secret;
  }

  protected callbacksFor(turn: TurnRunner | null): HostCallbacks {
    const perTurn = turn ? this.turnCallbacks.get(turn) : undefined;
    return { ...this.host.callbacks, ...this.callbacks, ...(perTurn ?? {}) };
  }

  /** Builds the context a tool call executes with. */
  toolContext(turn: TurnRunner, callId: string, signal: AbortSignal): ToolContext {
    const host = this.host;
    // Live output is redacted as it streams: a secret cut by a chunk boundary is held back until whole.
    const redactor = host.secretRedactor();
    const liveOutput = redactor.empty ? null : redactor.stream();
    let lastProgress = 0;
    let pendingOutput = '';
    let flushTimer: (() => void) | null = null;
    const flush = () => {
      flushTimer = null;
      if (pendingOutput === '') return;
      const output = pendingOutput;
      pendingOutput = '';
      lastProgress = host.clock.now();
      this.emitTurnEvent(turn, 'tool.progress', { callId, output });
    };
    return {
      sessionId: this.sessionId,
      turnId: turn.turnId,
      callId,
      memoryScope: turn.memoryScope,
      cwd: this.cwd,
      signal,
      env: host.subprocessEnv(),
      ...sandboxOf(host.commandSandbox(this.cwd)),
      settings: host.toolSettings(),
      files: this.recordingFiles(),
      writtenByAgent: (path) => this.writtenByAgent(path),
      scriptsChangedSince: this.grantRoot.scriptsChangedSince,
      commands: this.commandRunner,
      processes: host.processes,
      progress: (update) => {
        // At most 10 progress events per second per call; output chunks are coalesced.
        if (update.message !== undefined) {
          this.emitTurnEvent(turn, 'tool.progress', { callId, message: redactor.redact(update.message) });
          return;
        }
        if (update.output === undefined) return;
        pendingOutput += liveOutput === null ? update.output : liveOutput.push(update.output);
        const wait = 100 - (host.clock.now() - lastProgress);
        if (wait <= 0) flush();
        else if (!flushTimer) flushTimer = host.clock.setTimer(flush, wait);
      },
      requestApproval: (input) =>
        this.requestApproval(turn, callId, input.command, input.cwd, signal, input.policyChange),
      clarify: (input) => this.askClarify(turn, callId, input, signal),
      sudoPassword: (command) => this.askSudo(turn, callId, command, signal),
      clientRequest: async (method, params) => {
        const ask = this.callbacksFor(turn).clientRequest;
        if (!ask)
          throw new HermesError('not_supported', `this session has no client that can answer ${method} requests`);
        return ask({ method, params, sessionId: this.sessionId, turnId: turn.turnId, callId }, signal);
      },
      services: {
        todos: {
          get: () => [...this.todoList],
          set: (todos) => {
            this.todoList = [...todos];
            this.emitTurnEvent(turn, 'todo.updated', { todos: [...todos] });
          },
        },
        fetch: host.fetch,
        ...(this.kind === 'subagent'
          ? {}
          : {
              delegate: async (tasks: { goal: string; context?: string }[], delegateSignal: AbortSignal) => {
                const { runDelegation } = await import('./delegation.js');
                return runDelegation(this.asSession(), turn, callId, tasks, delegateSignal);
              },
            }),
      },
    };
  }

  /** Grants recorded on the approval root (the root session for subagents). */
  /** This session as the helpers see it: only AgentCore is ever instantiated, and it implements SessionInternals. */
  protected asSession(): SessionInternals {
    return this as unknown as SessionInternals;
  }

  protected get grantRoot(): AgentApprovals {
    // The host creates every session as an AgentCore, so the root's own state is reachable here.
    return (this.approvalRoot ?? this) as AgentApprovals;
  }

  /** The decision order of spec/core.md §12.3, steps 2 to 7. */
  async requestApproval(
    turn: TurnRunner,
    callId: string,
    command: string,
    cwd: string,
    signal: AbortSignal,
    policyChange?: { toolName: string; path: string },
  ): Promise<ApprovalOutcome> {
    // A change to the agent's own policy (config.yaml, skills) is judged by the user alone: no mode,
    // YOLO, allowlist, grant or smart check may approve it, so a model cannot switch its approvals off.
    const settings = policyChange === undefined ? this.host.settings() : userOnly(this.host.settings());
    // The terminal tool's synchronous check may have run before the grammar loaded, so a command is judged again.
    const detection =
      policyChange === undefined
        ? await judgeCommand(command, {
            cwd,
            homeDir: this.host.toolSettings().homeDir,
            searchPath: this.host.subprocessEnv().PATH ?? '',
            writtenByAgent: (path) => this.writtenByAgent(path),
            changedSince: this.grantRoot.scriptsChangedSince,
          })
        : {
            blocked: false,
            blockReason: null,
            patternKeys: ['policy_change'],
            descriptions: [`changes the agent's own settings or skills (${policyChange.path})`],
          };
    const requestId = newId('apr_', 16);
    const resolved = (
      choice: ApprovalChoice | null,
      source: AgentEventPayloads['approval.resolved']['source'],
      approved: boolean,
      reason?: string,
    ): ApprovalOutcome => {
      this.emitTurnEvent(turn, 'approval.resolved', { requestId, callId, choice, source });
      const outcome: ApprovalOutcome = { approved, choice, source, cancelled: source === 'cancelled' };
      if (reason !== undefined) outcome.reason = reason;
      return outcome;
    };
    if (detection.blocked) return resolved('deny', 'policy', false, detection.blockReason ?? 'blocked by policy');
    if (detection.patternKeys.length === 0) return { approved: true, choice: null, source: 'none', cancelled: false };
    const root = this.grantRoot;
    if (policyChange === undefined && (root.yolo || this.yolo)) return resolved('once', 'yolo', true);
    if (settings.approvals.yolo) return resolved('once', 'yolo', true);
    if (settings.approvals.mode === 'off') return resolved('once', 'policy', true);
    // `always` covers exactly the approved command; a whole class only when the user wrote it so (ADR 0034).
    if (allowlistAllows(settings.command_allowlist, command, detection.patternKeys))
      return resolved('once', 'allowlist', true);
    // A session grant covers its pattern classes (spec/core.md §12.4), except `unjudgeable`: what
    // cannot be judged is granted for the exact command only, or one grant would open every evasion.
    const classGranted = detection.patternKeys.every((key) => key !== 'unjudgeable' && root.sessionGrants.has(key));
    // A grant of a command that runs scripts holds only while their text is what was approved.
    const commandGrant =
      'scriptDigest' in detection && detection.scriptDigest !== undefined
        ? `${alwaysScopeOf(command)}\0${detection.scriptDigest}`
        : alwaysScopeOf(command);
    if (policyChange === undefined && (classGranted || root.sessionCommandGrants.has(commandGrant)))
      return resolved('session', 'session_grant', true);
    if (settings.approvals.mode === 'smart') {
      const { smartVerdict } = await import('./smart-approval.js');
      const verdict = await smartVerdict(this.asSession(), command, detection.descriptions, signal);
      // The command text is the model's, so it can talk the auxiliary model round: a command that
      // cannot be judged is never approved that way, only denied or asked (ADR 0033).
      if (verdict === 'approve' && !detection.patternKeys.includes('unjudgeable'))
        return resolved('once', 'smart', true);
      if (verdict === 'deny')
        return resolved('deny', 'smart', false, 'judged too dangerous by the smart approval check');
    }
    const callbacks = root === this ? this.callbacksFor(turn) : root.callbacksFor(root.currentTurn);
    if (!callbacks.approve) {
      if (!this.noCallbackNoticeSent) {
        this.noCallbackNoticeSent = true;
        this.emitTurnEvent(turn, 'notice', {
          level: 'warning',
          key: 'no_approval_callback',
          text: 'A command needed approval but no approve callback is installed, so it was denied. Provide callbacks.approve (or enable YOLO mode) to run dangerous commands.',
        });
      }
      return resolved('deny', 'no_callback', false, 'no approval callback is installed');
    }
    const timeoutMs = settings.approvals.timeout * 1000;
    const choices: ApprovalChoice[] =
      policyChange !== undefined
        ? ['once', 'deny']
        : this.host.configWritable()
          ? ['once', 'session', 'always', 'deny']
          : ['once', 'session', 'deny'];
    const request: ApprovalRequest = {
      requestId,
      sessionId: root.sessionId,
      turnId: turn.turnId,
      callId,
      toolName: policyChange?.toolName ?? 'terminal',
      command,
      cwd,
      patternKeys: detection.patternKeys,
      descriptions: detection.descriptions,
      choices,
      expiresAt: this.host.clock.now() + timeoutMs,
    };
    if (choices.includes('always')) request.alwaysScope = alwaysScopeOf(command);
    if (this.subagentInfo) request.subagent = { ...this.subagentInfo };
    const answer = await this.waitForAnswer(
      turn,
      signal,
      timeoutMs,
      // Held open in the host's hub too: another surface showing the session may answer it (ADR 0053).
      (waitSignal) => this.host.live.ask(request, waitSignal, (askSignal) => callbacks.approve!(request, askSignal)),
      {
        onStart: () => {
          this.pendingApproval = request;
          this.emitTurnEvent(turn, 'approval.request', { request });
          if (root !== this) root.pendingApproval = request;
        },
        onEnd: () => {
          this.pendingApproval = null;
          if (root !== this) root.pendingApproval = null;
        },
      },
    );
    if (answer.kind === 'cancelled') return resolved(null, 'cancelled', false, 'the turn was interrupted');
    if (answer.kind === 'timeout')
      return resolved('deny', 'timeout', false, `no decision within ${settings.approvals.timeout} s`);
    if (answer.kind === 'error') return resolved('deny', 'error', false, 'the approval callback failed');
    const decision = answer.value;
    const choice: ApprovalChoice = typeof decision === 'string' ? decision : decision.choice;
    if (choice === 'deny') {
      const policy = typeof decision === 'string' ? undefined : decision.policy;
      return policy === undefined
        ? resolved('deny', 'user', false, 'denied by the user')
        : resolved('deny', 'policy', false, `refused by policy: ${policy}`);
    }
    if (policyChange !== undefined) return resolved('once', 'user', true);
    if (choice === 'session') {
      for (const key of detection.patternKeys) if (key !== 'unjudgeable') root.sessionGrants.add(key);
    }
    if (choice === 'session' || choice === 'always') root.sessionCommandGrants.add(commandGrant);
    if (choice === 'always') {
      try {
        await this.host.persistAllowlist({ command: alwaysScopeOf(command) });
      } catch (error) {
        this.host.logger.warn('could not persist the command allowlist', { error: String(error) });
      }
    }
    return resolved(choice, 'user', true);
  }

  /** Waits for a callback with a timeout, the turn's signal and the caller's signal. */
  protected async waitForAnswer<T>(
    turn: TurnRunner,
    signal: AbortSignal,
    timeoutMs: number,
    ask: (waitSignal: AbortSignal) => Promise<T>,
    hooks: { onStart: () => void; onEnd: () => void },
  ): Promise<{ kind: 'answer'; value: T } | { kind: 'timeout' } | { kind: 'cancelled' } | { kind: 'error' }> {
    const waitController = new AbortController();
    const waitSignal = AbortSignal.any([signal, turn.signal, waitController.signal]);
    const previousPhase = turn.phase;
    hooks.onStart();
    let cancelTimer: (() => void) | null = null;
    try {
      return await new Promise((resolve) => {
        const onAbort = () => resolve({ kind: 'cancelled' });
        if (waitSignal.aborted) return onAbort();
        cancelTimer = this.host.clock.setTimer(() => {
          waitController.abort(new Error('timeout'));
          resolve({ kind: 'timeout' });
        }, timeoutMs);
        waitSignal.addEventListener('abort', () => {
          if (!waitController.signal.aborted) onAbort();
        });
        ask(waitSignal).then(
          (value) => resolve({ kind: 'answer', value }),
          () =>
            resolve(waitSignal.aborted && !waitController.signal.aborted ? { kind: 'cancelled' } : { kind: 'error' }),
        );
      });
    } finally {
      (cancelTimer as (() => void) | null)?.();
      if (!waitController.signal.aborted) waitController.abort(new Error('settled'));
      hooks.onEnd();
      turn.phase = previousPhase;
    }
  }

  protected async askClarify(
    turn: TurnRunner,
    callId: string,
    input: {
      question: string;
      choices?: string[];
      multiSelect?: boolean;
      questions?: import('../types.js').ClarifyQuestion[];
    },
    signal: AbortSignal,
  ): Promise<ClarifyOutcome> {
    const callbacks = this.callbacksFor(turn);
    const settings = this.host.settings();
    const timeoutMs = settings.agent.clarify_timeout * 1000;
    const request: ClarifyRequest = {
      requestId: newId('clr_', 16),
      sessionId: this.sessionId,
      turnId: turn.turnId,
      callId,
      question: input.question,
      choices: input.choices ?? [],
      multiSelect: input.multiSelect ?? false,
      expiresAt: this.host.clock.now() + timeoutMs,
    };
    if (input.questions) request.questions = input.questions;
    const settle = (
      answer: ClarifyAnswer | Record<string, ClarifyAnswer>,
      source: AgentEventPayloads['clarify.resolved']['source'],
    ) => this.emitTurnEvent(turn, 'clarify.resolved', { requestId: request.requestId, answer, source });
    if (!callbacks.clarify) {
      settle(null, 'error');
      return { answer: null, timedOut: false, cancelled: false };
    }
    const clarify = callbacks.clarify;
    const answer = await this.waitForAnswer(turn, signal, timeoutMs, (waitSignal) => clarify(request, waitSignal), {
      onStart: () => {
        this.pendingClarify = request;
        this.emitTurnEvent(turn, 'clarify.request', { request });
      },
      onEnd: () => {
        this.pendingClarify = null;
      },
    });
    if (answer.kind === 'cancelled') {
      settle(null, 'cancelled');
      return { answer: null, timedOut: false, cancelled: true };
    }
    if (answer.kind === 'timeout') {
      settle(null, 'timeout');
      return { answer: null, timedOut: true, cancelled: false };
    }
    if (answer.kind === 'error') {
      settle(null, 'error');
      return { answer: null, timedOut: false, cancelled: false };
    }
    const value = answer.value;
    if (value !== null && typeof value === 'object' && !Array.isArray(value) && 'answers' in value) {
      settle(value.answers, 'user');
      return { answer: null, answers: value.answers, timedOut: false, cancelled: false };
    }
    settle(value as ClarifyAnswer, 'user');
    return { answer: value as ClarifyAnswer, timedOut: false, cancelled: false };
  }

  /**
   * A provider whose key variable is missing asks the `secret` callback (spec/core.md §24.7); an
   * answer is written to HERMES_HOME/.env and the turn continues. Without the callback it declines.
   */
  async askForMissingSecret(turn: TurnRunner, error: unknown): Promise<boolean> {
    if (!HermesError.isInstance(error) || error.code !== 'missing_credentials') return false;
    const envVar = error.details?.envVar;
    if (typeof envVar !== 'string' || envVar === 'HERMES_BASE_URL') return false;
    const secret = this.callbacksFor(turn).secret;
    if (!secret) return false;
    const request = {
      requestId: newId('sec_', 16),
      sessionId: this.sessionId,
      envVar,
      prompt: `${error.message} Enter ${envVar}:`,
    };
    const timeoutMs = this.host.settings().approvals.timeout * 1000;
    const answer = await this.waitForAnswer(turn, turn.signal, timeoutMs, (waitSignal) => secret(request, waitSignal), {
      onStart() {},
      onEnd() {},
    });
    if (answer.kind !== 'answer' || answer.value.value.trim() === '') return false;
    await this.host.storeSecret(envVar, answer.value.value.trim());
    return true;
  }

  protected async askSudo(
    turn: TurnRunner,
    callId: string,
    command: string,
    signal: AbortSignal,
  ): Promise<string | null> {
    const callbacks = this.callbacksFor(turn);
    const sudo = callbacks.sudo;
    if (!sudo) return null;
    const request = { requestId: newId('sudo_', 16), sessionId: this.sessionId, turnId: turn.turnId, callId, command };
    const timeoutMs = this.host.settings().approvals.timeout * 1000;
    const answer = await this.waitForAnswer(turn, signal, timeoutMs, (waitSignal) => sudo(request, waitSignal), {
      onStart() {},
      onEnd() {},
    });
    if (answer.kind !== 'answer' || answer.value.value === '') return null;
    return answer.value.value;
  }
}
