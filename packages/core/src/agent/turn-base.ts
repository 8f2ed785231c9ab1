import type { AgentEventPayloads, AgentEventType, AgentPhase } from '../events.js';
import { newId } from '../ids.js';
import type { ResolvedRoute } from '../providers/types.js';
import type { NewMessage, TurnFence, TurnLease } from '../store/types.js';
import type { RunTurnOptions, TurnInput, TurnResult } from '../turn-types.js';
import type { FinishReason, StoredToolCall, Usage } from '../types.js';
import { zeroUsage } from '../usage.js';
import type { TextChunks } from '../util/text-chunks.js';
import type { ActiveTurn, SessionInternals } from './internals.js';
import { type InterruptReason, interruptFromSignal, isInterruptReason } from './interrupt.js';
import type { TranscriptRow } from './transcript.js';

/** A tool call as the model asked for it. */
export interface ToolCallRequest {
  id: string;
  name: string;
  /** Raw JSON text of the arguments. */
  input: string;
}

/**
 * The state of one turn and what every stage of it shares: its events, phase, interrupt and the
 * rows it writes. The stages build on it: {@link TurnTools} (tool batches), {@link TurnModel}
 * (model steps) and {@link TurnRunner} (the loop, admission and the epilogue).
 */
export abstract class TurnBase implements ActiveTurn {
  readonly turnId: string;
  readonly controller = new AbortController();
  phase: AgentPhase = 'preparing';
  iteration = 0;
  /** The text of the model call in progress (ADR 0059: kept as chunks, joined when read). */
  streamingChunks: TextChunks | null = null;

  /** The text streamed so far by the model call in progress. */
  get streamingText(): string {
    return this.streamingChunks?.toString() ?? '';
  }
  steerBuffer: string[] = [];
  /** Set while a model request runs, so redirect can abort only that request. */
  modelCallController: AbortController | null = null;
  protected readonly startedAt: number;
  protected iterationsUsed = 0;
  protected apiCalls = 0;
  protected turnUsage: Usage = zeroUsage();
  protected turnCost = 0;
  protected rowIds: number[] = [];
  protected userRowId: number | null = null;
  protected lease: TurnLease | null = null;
  protected stopLeaseRefresh: (() => void) | null = null;
  protected stopBudgetTimers: (() => void)[] = [];
  protected route: ResolvedRoute | null = null;
  protected fallbackUsed = false;
  protected lastFinish: FinishReason | null = null;
  protected lastReasoning: string | null = null;
  protected finalText = '';
  protected storedAnything = false;
  protected finished = false;
  protected readonly maxIterations: number;
  /** The turn's long-term memory scope (`RunTurnOptions.memoryScope`), null when none was given. */
  readonly memoryScope: string | null;
  protected readonly settings;
  protected readonly turnRowsStart: number;
  /** Names of the client's own tools offered in this run (ADR 0052). */
  protected readonly clientToolNames: ReadonlySet<string>;
  /** The client tool calls this run stopped for, once it has. */
  protected clientCalls: StoredToolCall[] = [];
  /** `RunTurnOptions.toolChoice` applies to the first model step only; set once a step has answered. */
  protected toolChoiceSpent = false;

  constructor(
    protected readonly agent: SessionInternals,
    protected readonly input: TurnInput,
    protected readonly options: RunTurnOptions,
    protected readonly resolveResult: (result: TurnResult) => void,
  ) {
    this.turnId = options.turnId ?? newId('turn_', 16);
    this.memoryScope = options.memoryScope ?? null;
    this.startedAt = agent.host.clock.now();
    this.settings = agent.host.settings();
    this.maxIterations = options.maxIterations ?? agent.maxIterations ?? this.settings.agent.max_iterations;
    this.turnRowsStart = agent.transcript.length;
    this.clientToolNames = new Set((options.clientTools ?? []).map((tool) => tool.name));
    if (options.signal) {
      const signal = options.signal;
      if (signal.aborted) this.controller.abort(interruptFromSignal(signal));
      else signal.addEventListener('abort', () => this.interrupt(interruptFromSignal(signal)), { once: true });
    }
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get fence(): TurnFence | null {
    return this.lease?.fence ?? null;
  }

  get interruptReason(): InterruptReason | null {
    const reason = this.controller.signal.reason as unknown;
    return this.controller.signal.aborted && isInterruptReason(reason) ? reason : null;
  }

  /** Aborts the turn. Returns false when it already ended or was already interrupted. */
  interrupt(reason: InterruptReason): boolean {
    if (this.finished || this.controller.signal.aborted) return false;
    this.controller.abort(reason);
    return true;
  }

  protected emit<T extends AgentEventType>(type: T, payload: AgentEventPayloads[T]): void {
    this.agent.emitTurnEvent(this, type, payload);
  }

  protected setPhase(phase: AgentPhase, text: string): void {
    if (this.phase === phase) return;
    this.phase = phase;
    this.emit('status', { phase, text });
  }

  /** Rows this turn staged that wait for its next commit (their ids are known after it). */
  private stagedRows: TranscriptRow[] = [];
  /** Events that report a row's id, emitted once the commit that stores the row is done. */
  protected readonly afterCommit: (() => void)[] = [];

  /** Appends rows to the transcript (and the store for persisted sessions) now; returns their ids. */
  protected async appendRows(rows: NewMessage[]): Promise<(number | null)[]> {
    const staged = this.stageRows(rows);
    await this.commitStaged();
    return staged.map((row) => row.rowId);
  }

  /** Appends rows to the transcript now and to the store with the turn's next commit (ADR 0056). */
  protected stageRows(rows: NewMessage[]): TranscriptRow[] {
    const staged = this.agent.stageRows(rows);
    this.stagedRows.push(...staged);
    return staged;
  }

  /** Writes what waits in one transaction, then emits the events that waited for it; see `commitWrites`. */
  protected async commitStaged(lease?: Parameters<SessionInternals['commitWrites']>[0]): Promise<void> {
    try {
      await this.agent.commitWrites(lease);
    } finally {
      this.settleStaged();
    }
  }

  /** Notes the ids of the rows just committed (none for a refused commit) and emits what waited for them. */
  protected settleStaged(): void {
    for (const row of this.stagedRows) if (row.rowId !== null) this.rowIds.push(row.rowId);
    this.stagedRows = [];
    for (const emit of this.afterCommit.splice(0)) emit();
  }

  /** Redirect: abort only the running model request (spec/core.md §7.9). Returns false when no request runs. */
  redirect(text: string): boolean {
    if (this.phase !== 'model' || !this.modelCallController) return false;
    this.modelCallController.abort({ kind: 'redirect', text });
    return true;
  }

  /** Rows of the transcript written by this turn. */
  turnRows(): TranscriptRow[] {
    return this.agent.transcript.slice(this.turnRowsStart);
  }
}

/** The public part of a route (no key). */
export function publicRoute(route: ResolvedRoute): {
  spec: string;
  provider: string;
  model: string;
  baseUrl: string | null;
} {
  return { spec: route.spec, provider: route.provider, model: route.model, baseUrl: route.baseUrl };
}
