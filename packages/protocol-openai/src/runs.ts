import { createHash } from 'node:crypto';
import type {
  Agent,
  AgentEvent,
  JsonObject,
  JsonValue,
  RunBus,
  RunControlReply,
  RunControlRequest,
  RunEventRecord,
  RunRecord,
  RunStore as RunRecordStore,
  TurnClaim,
  TurnLease,
  TurnResult,
} from '@hermes/core';
import { HermesError, RunEventOutbox, redactSecrets } from '@hermes/core';
import type { Context, Hono } from 'hono';
import { approvalPayload } from './approval-payload.js';
import { ApiError, invalidField } from './http-error.js';
import { hexId, nativeTime, turnIdOfRun } from './ids.js';
import { selectModel } from './model-selection.js';
import { isValidSessionId, normalizeContent, normalizeConversation, toTurnInput } from './normalize-input.js';
import { type Placement, placeTurn, previousResponse } from './placement.js';
import { type BacklogEvent, RunBacklog } from './run-backlog.js';
import { RunEventMapper } from './run-event-map.js';
import {
  type ApprovalQueue,
  agentForSession,
  interruptReason,
  readJsonBody,
  type ServerContext,
  sessionKeyHeader,
} from './server-context.js';
import { SseWriter, streamSse } from './sse-writer.js';
import { sessionBusy, type TurnSlot } from './turn-admission.js';
import { nativeUsage, outcomeErrorCode, outcomeErrorText } from './turn-outcome.js';
import type { TurnRuns } from './turn-runs.js';

/** Newest events kept per run (spec §19.3). */
export const RUN_BACKLOG_SIZE = 1_000;
/** How long a terminal run's backlog and approval state stay in memory (spec §19.9). */
export const RUN_RETENTION_MS = 3_600_000;
/** Unsent live events after which a subscriber is disconnected (spec §19.3). */
const SLOW_SUBSCRIBER_LIMIT = 256;
const TERMINAL_EVENTS = new Set(['run.completed', 'run.failed', 'run.cancelled', 'run.interrupted']);
const UNFINISHED = new Set(['queued', 'running', 'stopping']);
/** Error text of a run whose instance died (spec §19.5, orphaned runs). */
const ORPHAN_ERROR = 'The gateway restarted before this run settled.';
/** The core's issuer of a turn whose session's lease another process took over (issue 33.3, ADR 0049). */
const LEASE_LOST_ISSUER = 'session_turn_lease_lost';
/** Exit reason of a run whose instance lost its turn lease without settling it (issue 17.2, ADR 0018). */
const LEASE_LOST_EXIT = `interrupted_by_system(${LEASE_LOST_ISSUER})`;
/** Issuer of a run interrupted because more of its events waited for an unreachable store than the outbox holds. */
const OUTBOX_OVERFLOW_ISSUER = 'run_event_outbox_overflow';
const OUTBOX_OVERFLOW_ERROR =
  'The session store was unreachable for longer than the run event outbox (api_server.run_event_outbox) could hold; events after the last stored one were not kept.';
/** How often, and for how long, a run's end is written again while the store is unreachable. */
const END_RETRY_MS = 2_000;
const END_RETRY_FOR_MS = 600_000;
/** How long a settled run waits for its events to reach the store before its slot is released anyway. */
const OUTBOX_WAIT_AT_END_MS = 5_000;
/** Error text of a run stopped by its own instance because another took its session's turn lease over. */
const LEASE_LOST_ERROR = "Another instance took over this run's session while this run's instance was unresponsive.";
/** A remote reader re-checks the run's row and its owner's lease this often while no event arrives. */
const REMOTE_POLL_MS = 1_000;
/** The owner releases its lease a moment before it writes the run's end: a lost lease is confirmed after this. */
const LOST_CONFIRM_MS = 1_000;

/** One run event as sent. */
export type RunEventPayload = Record<string, unknown> & {
  event: string;
  run_id: string;
  timestamp: number;
  seq?: number;
};

/** A run executing (or recently settled) in this process. */
export interface LiveRun {
  id: string;
  sessionId: string;
  model: string;
  runtime: Record<string, unknown>;
  controller: AbortController;
  agent: Agent | null;
  status: 'queued' | 'running' | 'stopping' | 'completed' | 'cancelled' | 'failed' | 'interrupted';
  backlog: RunBacklog;
  nextSeq: number;
  lastEvent: string | null;
  subscribers: Set<() => void>;
  terminal: boolean;
  /** `finish` has begun: its end may wait for the store (ADR 0050), and the run ends once. */
  ending: boolean;
  /**
   * The session's claim in the host's turns in flight, given back as the run turns terminal: a client told the run
   * ended may start the next turn on its session at once, while the slot itself waits for the end to be shared.
   */
  claim: TurnClaim | null;
  approvals: ApprovalQueue;
  result: TurnResult | null;
  terminalPayload: RunEventPayload | null;
  /**
   * What `finish` wrote to the row's `result`, kept so a status read whose row was fetched just before the write
   * still answers a terminal run with its output (the row read is async; the live status flips after it).
   */
  settledResult: Record<string, unknown> | null;
  /**
   * Every core event of the turn not yet sent, kept only for a session-chat stream, which maps core events itself; it
   * fills from the host's live-session hub (ADR 0053).
   */
  coreLog: AgentEvent[] | null;
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object' && value !== null)
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`)
      .join(',')}}`;
  return JSON.stringify(value);
}

export { approvalSource } from './run-event-map.js';

/** The end of a run whose outbox overflowed (ADR 0050): its terminal event is the marker after the gap. */
function outboxOverflowEnd(): { status: 'interrupted'; stored: 'failed'; fields: Record<string, unknown> } {
  return {
    status: 'interrupted',
    stored: 'failed',
    fields: {
      error: OUTBOX_OVERFLOW_ERROR,
      completed: false,
      interrupted: true,
      turn_exit_reason: `interrupted_by_system(${OUTBOX_OVERFLOW_ISSUER})`,
    },
  };
}

/** Terminal status, event name and flags of a settled turn (spec §19.6). */
export function terminalOf(result: TurnResult): {
  status: 'completed' | 'failed' | 'cancelled' | 'interrupted';
  stored: 'completed' | 'failed' | 'cancelled';
  fields: Record<string, unknown>;
} {
  const pendingSteer = result.pendingSteer ? { pending_steer: result.pendingSteer } : {};
  if (result.outcome === 'completed')
    return {
      status: 'completed',
      stored: 'completed',
      fields: {
        output: result.finalText,
        usage: nativeUsage(result.usage.turn),
        completed: true,
        partial: false,
        interrupted: false,
        ...pendingSteer,
      },
    };
  if (result.outcome === 'cancelled') {
    const issuer = result.interruptedBy?.issuer ?? 'user';
    if (issuer === OUTBOX_OVERFLOW_ISSUER) return outboxOverflowEnd();
    // Another instance took the session's turn lease over while this one was frozen or cut off (issue 33.3): the
    // run reads `interrupted`, as when another instance settles it (ADR 0049).
    if (issuer === LEASE_LOST_ISSUER)
      return {
        status: 'interrupted',
        stored: 'failed',
        fields: {
          error: LEASE_LOST_ERROR,
          completed: false,
          interrupted: true,
          turn_exit_reason: LEASE_LOST_EXIT,
        },
      };
    if (issuer === 'shutdown')
      return {
        status: 'interrupted',
        stored: 'cancelled',
        fields: {
          error: 'Gateway shutdown interrupted the run.',
          completed: false,
          interrupted: true,
          turn_exit_reason: 'interrupted_by_system(shutdown)',
        },
      };
    return {
      status: 'cancelled',
      stored: 'cancelled',
      fields: {
        completed: false,
        interrupted: true,
        turn_exit_reason: issuer === 'user' ? 'interrupted_by_user' : `interrupted_by_system(${issuer})`,
        ...pendingSteer,
      },
    };
  }
  const limited = outcomeErrorCode(result) === 'iteration_limit';
  return {
    status: 'failed',
    stored: 'failed',
    fields: {
      error: outcomeErrorText(result),
      completed: false,
      partial: limited ? true : result.partial,
      interrupted: false,
      turn_exit_reason: result.exitReason,
      ...(result.finalText ? { output: result.finalText } : {}),
      ...pendingSteer,
    },
  };
}

/**
 * The start of a stream of a run held by another instance (ADR 0018, ADR 0096): its wake-ups are listened for, then
 * its first events are read, both before the route has read the run's row. The row and the first events then take one
 * round trip between them instead of two, each of which the reader instance may wait out at its CPU quota. The stream
 * takes over the wake-ups; a route that answers 404 instead closes it.
 */
export class SharedRunWatch {
  /** Events that came with their wake-ups (ADR 0018), not yet written. */
  readonly carried: RunEventRecord[] = [];
  /** A wake-up came without its events (too large for a notification, a reconnect): the next pass reads. */
  mustRead = true;
  /** A wake-up came since the stream's pass began: it must not wait for the next. */
  woken = false;
  /** Ends the stream's wait, when it waits. */
  wake: (() => void) | null = null;
  /** The first read, begun at once; the stream's first pass takes it. */
  firstRead: Promise<RunEventRecord[]> | null;
  private readonly stops: (() => void)[];

  constructor(bus: RunBus, runId: string, afterSeq: number) {
    const rouse = (_seq?: number, events?: RunEventRecord[]) => {
      if (events) this.carried.push(...events);
      else this.mustRead = true;
      this.woken = true;
      this.wake?.();
    };
    // Listening first, then reading: an event committed between the two is in the read or in a wake-up, never in
    // neither (it would then wait for the stream's next quiet second).
    this.stops = [bus.watch(runId, rouse), bus.onReconnect(rouse)];
    this.firstRead = bus.read(runId, afterSeq);
    // A route that answers 404 leaves the read unused; its failure is then nobody's.
    this.firstRead.catch(() => undefined);
  }

  /** Stops listening. */
  close(): void {
    for (const stop of this.stops.splice(0)) stop();
  }
}

/** Runs of this process: creation, events, backlog, approvals, steer and stop (spec §19). */
export class RunRegistry {
  readonly live = new Map<string, LiveRun>();
  /** Events of this instance's runs on their way to the shared bus (ADR 0050). */
  private readonly outbox: RunEventOutbox;

  constructor(private readonly server: ServerContext) {
    this.outbox = new RunEventOutbox(server.bus, {
      maxEvents: server.settings.runEventOutbox,
      onWarning: (message, details) => server.host.logger.warn(message, details),
    });
    // Approval answers, steers and stops for runs of this instance, sent by other instances (ADR 0018).
    server.bus.serve((request) => this.control(request, false));
  }

  /** Registers a run's in-memory state; the caller starts it with {@link RunRegistry.start}. */
  register(
    runId: string,
    sessionId: string,
    model: string,
    selection: { routeSource: string; requested: { model: string | null; provider: string | null } },
  ): LiveRun {
    const run: LiveRun = {
      id: runId,
      sessionId,
      model,
      runtime: { provider: null, model: null, route_source: selection.routeSource, requested: selection.requested },
      controller: new AbortController(),
      agent: null,
      status: 'queued',
      backlog: new RunBacklog(RUN_BACKLOG_SIZE),
      nextSeq: 0,
      lastEvent: null,
      subscribers: new Set(),
      terminal: false,
      ending: false,
      claim: null,
      approvals: this.server.approvals.open(runId),
      result: null,
      terminalPayload: null,
      settledResult: null,
      coreLog: null,
    };
    this.live.set(runId, run);
    return run;
  }

  /** Appends an event to a run's backlog and wakes its subscribers. */
  emit(run: LiveRun, event: string, payload: Record<string, unknown> = {}): void {
    const full: RunEventPayload = { event, run_id: run.id, timestamp: Date.now() / 1000, seq: run.nextSeq, ...payload };
    run.nextSeq += 1;
    run.lastEvent = event;
    run.backlog.push(full as BacklogEvent);
    for (const wake of run.subscribers) wake();
    if (!this.server.bus.shared) return;
    // Shared with the other instances through the outbox, which keeps what the store cannot take yet (ADR 0050).
    const terminal = TERMINAL_EVENTS.has(event);
    const kept = this.outbox.add(run.id, { seq: full.seq as number, payload: full as JsonObject }, terminal);
    if (!kept && !terminal && !run.terminal && !run.controller.signal.aborted) {
      // Past the bound the run's later events would be a silent gap for other instances' readers: the run ends
      // `interrupted`, and its terminal event, always kept, says why.
      this.server.host.logger.warn('run event outbox overflowed; interrupting the run', {
        runId: run.id,
        limit: this.server.settings.runEventOutbox,
      });
      run.controller.abort(interruptReason(OUTBOX_OVERFLOW_ISSUER, 'the run event outbox overflowed'));
    }
  }

  /** Starts a registered run's turn in the background. */
  start(
    run: LiveRun,
    slot: TurnSlot,
    prepare: () => Promise<{
      agent: Agent;
      input: ReturnType<typeof toTurnInput>;
      model: string | undefined;
      /** `X-Hermes-Session-Key` (spec §9.2). */
      memoryScope: string | undefined;
    }>,
  ): void {
    const { host } = this.server;
    const store = host.store.runs;
    run.claim = slot.claim;
    const execute = async () => {
      // The route's answer goes out before the turn begins: a run whose session was opened by the route (ADR 0088) has
      // nothing left to wait for, and its turn's first synchronous stretch would otherwise hold the 202 back.
      await new Promise((resolve) => setImmediate(resolve));
      await this.server.admission.paceStart();
      const { agent, input, model, memoryScope } = await prepare();
      run.agent = agent;
      const approve = this.server.approvals.callback(run.approvals, (request) => {
        this.emit(run, 'approval.request', approvalPayload(run.id, request));
      });
      if (run.controller.signal.aborted) {
        await this.finish(run, null);
        return;
      }
      const turn = agent.runTurn(input, {
        signal: run.controller.signal,
        ...(slot.claim ? { claim: slot.claim } : {}),
        ...(model ? { model } : {}),
        ...(memoryScope !== undefined ? { memoryScope } : {}),
        callbacks: { approve },
      });
      const mapper = new RunEventMapper(
        (name, payload) => this.emit(run, name, payload),
        run.id,
        this.server.settings.showReasoning,
        false,
      );
      for await (const event of turn as AsyncIterable<AgentEvent>) {
        if (event.type === 'turn.start') {
          if (run.status === 'queued') run.status = 'running';
          // The route the turn really runs on, after the request's model and any session lock were applied.
          if (event.model) Object.assign(run.runtime, { provider: event.model.provider, model: event.model.model });
          await store
            .update(run.id, { status: 'running', turnId: event.turnId, startedAt: Date.now() })
            .catch(() => undefined);
          continue;
        }
        mapper.push(event);
      }
      await this.finish(run, await turn.result);
    };
    slot.releaseWhen(
      execute().catch(async (error) => {
        host.logger.error('run failed', { error: redactSecrets(String(error)) });
        await this.finish(run, null, redactSecrets(String(error)));
      }),
    );
  }

  private async finish(run: LiveRun, result: TurnResult | null, failure?: string): Promise<void> {
    if (run.terminal || run.ending) return;
    run.ending = true;
    run.result = result;
    let status: LiveRun['status'];
    let stored: 'completed' | 'failed' | 'cancelled';
    let fields: Record<string, unknown>;
    if (result) ({ status, stored, fields } = terminalOf(result));
    else if (failure === undefined) {
      status = 'cancelled';
      stored = 'cancelled';
      fields = { completed: false, interrupted: true, turn_exit_reason: 'interrupted_by_user' };
    } else {
      status = 'failed';
      stored = 'failed';
      fields = { error: failure, completed: false, partial: false, interrupted: false };
    }
    // Events were lost to an outbox overflow (the run was stopped first for another reason, or ended meanwhile): the
    // terminal event must say so, whatever the turn's own end (ADR 0050).
    if (this.outbox.overflowed(run.id)) ({ status, stored, fields } = outboxOverflowEnd());
    if (status === 'completed') fields.runtime = run.runtime;
    // `wire_seq` is the terminal event's seq, so a resume from another process knows whether it was seen.
    let settledResult: Record<string, unknown> = { ...fields, wire_status: status, wire_seq: run.nextSeq };
    const elsewhere = await this.writeEnd(run.id, {
      status: stored,
      result: settledResult as JsonValue,
      exitReason: result?.exitReason ?? null,
      error: status === 'failed' || status === 'interrupted' ? ({ message: String(fields.error) } as JsonValue) : null,
      endedAt: Date.now(),
    });
    if (elsewhere) {
      // Another instance settled the run while this one was frozen or cut off (its lease was taken over): its end
      // stands, since a terminal status never changes, and this instance's clients are told the same (ADR 0049).
      ({ status, fields, settledResult } = this.settledElsewhere(run, elsewhere));
    }
    // Terminal only once the row holds the output: a status read in between sees `running`, never `completed`
    // with a null output.
    run.settledResult = settledResult;
    run.status = status;
    run.claim?.release();
    run.terminal = true;
    // A settled run is kept an hour for its status and backlog (spec §19.9), not its session: the agent (its
    // transcript, its event ring) is let go with the turn's slot (ADR 0038).
    run.agent = null;
    run.approvals.settled = true;
    this.emit(run, `run.${status}`, fields);
    run.terminalPayload = run.backlog.last() ?? null;
    // Other instances' readers close on the terminal event: it is shared before the turn's slot is released, unless
    // the store is unreachable; the outbox then writes it once the store is back (ADR 0050).
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.outbox.drained(run.id),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, OUTBOX_WAIT_AT_END_MS);
      }),
    ]);
    clearTimeout(timer);
    setTimeout(() => {
      this.live.delete(run.id);
      this.server.approvals.queues.delete(run.id);
    }, RUN_RETENTION_MS).unref();
  }

  /** A run's end as another instance settled it, in this instance's terms (ADR 0049). */
  private settledElsewhere(
    run: LiveRun,
    record: RunRecord,
  ): { status: LiveRun['status']; fields: Record<string, unknown>; settledResult: Record<string, unknown> } {
    const wire = this.statusObject(record, undefined);
    const status = wire.status as LiveRun['status'];
    const fields = Object.fromEntries(
      ['error', 'completed', 'partial', 'interrupted', 'output', 'usage', 'turn_exit_reason']
        .filter((name) => wire[name] !== undefined && wire[name] !== null)
        .map((name) => [name, wire[name]]),
    );
    return { status, fields, settledResult: { ...fields, wire_status: status, wire_seq: run.nextSeq } };
  }

  /**
   * Writes a run's end to its row. While the store is unreachable (a database restart) the write is tried again every
   * few seconds for up to ten minutes, and the run stays `running` here meanwhile: its end is told to its clients only
   * once the row holds it, or once another instance is found to have settled it (`run_settled`: that end stands, a
   * terminal status never changes). So every instance gives a run one terminal status, and no client sees it change
   * (ADR 0050). The terminal event itself reaches the store through the outbox.
   */
  private async writeEnd(runId: string, patch: Parameters<RunRecordStore['update']>[1]): Promise<RunRecord | null> {
    const { host } = this.server;
    const giveUpAt = Date.now() + END_RETRY_FOR_MS;
    let waited = false;
    for (;;) {
      try {
        await host.store.runs.update(runId, patch);
        if (waited) host.logger.info('run end written after the store returned', { runId });
        return null;
      } catch (error) {
        const code = HermesError.isInstance(error) ? error.code : null;
        if (code === 'run_settled') {
          host.logger.warn('run already settled by another instance; its end stands', { runId });
          return await host.store.runs.get(runId).catch(() => null);
        }
        if (code !== 'store_unavailable') {
          host.logger.warn('run update failed', { runId, error: String(error) });
          return null;
        }
      }
      if (Date.now() >= giveUpAt) {
        host.logger.warn('run end not written: the store stayed unreachable', { runId });
        return null;
      }
      if (!waited) host.logger.warn('run end waiting for the store; retrying', { runId });
      waited = true;
      await new Promise((resolve) => setTimeout(resolve, END_RETRY_MS));
    }
  }

  /**
   * Streams a run from the shared events (ADR 0018): the events after `after`, then each one as its wake-up
   * arrives, until the terminal event. While none arrives the row and its owner's lease are re-checked each second;
   * a run whose owner lost its lease is settled `interrupted`, and a terminal run with no shared events gets its
   * terminal event rebuilt from the row, as a run without a backlog (spec §19.3). `row` is the run's row as the route
   * has just read it: it is the stream's first check, so a stream starts with one query, its first read (ADR 0067).
   */
  async streamShared(
    row: RunRecord,
    after: number | null,
    streamApi: { readonly aborted: boolean; onAbort(listener: () => void): void },
    writer: SseWriter,
    watch: SharedRunWatch = new SharedRunWatch(this.server.bus, row.id, after ?? -1),
  ): Promise<void> {
    const { bus, host } = this.server;
    const runId = row.id;
    let next = after === null ? 0 : after + 1;
    // Events that came with their wake-ups (ADR 0018) are written without a read while they follow on; a wake-up
    // without them (too large for a notification, a reconnect), a gap, or a quiet second makes the next pass read.
    const carried = watch.carried;
    streamApi.onAbort(() => watch.wake?.());
    this.remoteSubscribers += 1;
    let checkedAt = 0;
    // The row the route has just read stands for the first check: an unfinished one needs no second read yet, and its
    // owner's lease is first asked at the next check, a second on (a lost lease is only acted on at a check a second
    // after the first that saw it anyway, so a dead owner's run is settled one check later than if it were asked now).
    let given: RunRecord | null = row;
    let settledSeenAt: number | null = null;
    let outageLogged = false;
    /** How many carried events follow on from `next`, once those already written are dropped. */
    const carriedRun = () => {
      while (carried.length > 0 && (carried[0] as RunEventRecord).seq < next) carried.shift();
      let count = 0;
      while (count < carried.length && (carried[count] as RunEventRecord).seq === next + count) count += 1;
      return count;
    };
    try {
      while (!streamApi.aborted) {
        try {
          watch.woken = false;
          // The first pass takes the read the watch began beside the route's row read, whatever came meanwhile.
          const first = watch.firstRead;
          watch.firstRead = null;
          const following = first ? 0 : carriedRun();
          const reading = first !== null || (following === 0 && (watch.mustRead || carried.length > 0));
          watch.mustRead = false;
          const events = reading ? await (first ?? bus.read(runId, next - 1)) : carried.splice(0, following);
          const oldest = events[0]?.seq;
          if (reading && after !== null && next === after + 1 && oldest !== undefined && oldest > next) {
            // The events asked for were trimmed from the shared backlog (spec §19.3, truncated replay).
            await writer.frame(replayTruncated(runId, oldest, after));
          }
          for (const event of events) {
            await writer.frame(event.payload, { id: event.seq });
            next = event.seq + 1;
            if (TERMINAL_EVENTS.has(String(event.payload.event))) {
              await writer.comment('stream closed');
              return;
            }
          }
          // New events are committed only while the run is unfinished and its owner appends them (a settled run takes
          // none past its end, ADR 0049): the row and the lease are checked after a quiet second, not every second,
          // and then from a fresh read of the row.
          if (events.length > 0) {
            checkedAt = Date.now();
            given = null;
          }
          if (reading && events.length >= 500) watch.mustRead = true;
          if (watch.mustRead || carriedRun() > 0) continue;
          if (Date.now() - checkedAt >= REMOTE_POLL_MS) {
            checkedAt = Date.now();
            let current = given ?? (await host.store.runs.get(runId));
            if (current && UNFINISHED.has(current.status) && given === null)
              current = await this.settleIfOwnerLost(current);
            given = null;
            if (current && !UNFINISHED.has(current.status)) {
              settledSeenAt ??= Date.now();
              // The terminal event follows the row's end at once; without one (no shared events) rebuild it.
              const latest = await bus.latest(runId);
              // Events still missing before the row's terminal seq are on their way from the owner's outbox after an
              // outage (ADR 0050): they get longer than the usual two seconds to arrive.
              const terminalSeq = (current.result as { wire_seq?: unknown } | null)?.wire_seq;
              const missing = typeof terminalSeq === 'number' && (latest?.seq ?? -1) + 1 < terminalSeq;
              const patience = (missing ? 15 : 2) * REMOTE_POLL_MS;
              // No shared event at all: a run whose events were pruned, or one that never had any, gets its terminal
              // event rebuilt at once. One that ended a moment ago is waited for: its row is written before its
              // owner's outbox has shared the events (a reader that came then got the terminal event alone).
              const endedJustNow = current.endedAt !== null && Date.now() - current.endedAt < 60_000;
              const waitForEvents = latest !== null || (missing && endedJustNow);
              if (!waitForEvents || Date.now() - settledSeenAt > patience) {
                if (latest === null || latest.seq < next) await this.writeRebuiltTerminal(current, after, writer);
                await writer.comment('stream closed');
                return;
              }
              watch.mustRead = true;
              continue;
            }
          }
          const timedOut = await new Promise<boolean>((resolve) => {
            const timer = setTimeout(() => resolve(true), REMOTE_POLL_MS);
            const wake = () => {
              clearTimeout(timer);
              resolve(false);
            };
            watch.wake = wake;
            if (streamApi.aborted || watch.woken) wake();
          });
          watch.wake = null;
          // A quiet second: read anyway, in case a wake-up was missed.
          if (timedOut) watch.mustRead = true;
        } catch (error) {
          if (streamApi.aborted) return;
          // The store is unreachable (a database restart): the stream stays open, with keepalives, and reads again in
          // a second; the owner's outbox writes the events it could not share meanwhile, in order (ADR 0050).
          if (HermesError.isInstance(error) && error.code !== 'store_unavailable') throw error;
          if (!outageLogged) host.logger.warn('run events unreadable; retrying', { runId, error: String(error) });
          outageLogged = true;
          watch.mustRead = true;
          await new Promise((resolve) => setTimeout(resolve, REMOTE_POLL_MS));
        }
      }
    } finally {
      this.remoteSubscribers -= 1;
      watch.close();
      await writer.finish();
    }
  }

  /** Writes the terminal event of a settled run rebuilt from its row, unless `after` is at or past it (spec §19.3). */
  async writeRebuiltTerminal(row: RunRecord, after: number | null, writer: SseWriter): Promise<void> {
    const status = this.statusObject(row, undefined);
    const stored = (row.result ?? {}) as Record<string, unknown>;
    const { wire_status: _wire, wire_seq: terminalSeq, ...fields } = stored;
    const seq = typeof terminalSeq === 'number' ? terminalSeq : null;
    if (after !== null && seq !== null && after >= seq) return;
    await writer.frame(
      {
        event: `run.${String(status.status)}`,
        run_id: row.id,
        timestamp: Date.now() / 1000,
        ...(seq === null ? {} : { seq }),
        ...fields,
      },
      seq === null ? {} : { id: seq },
    );
  }

  private remoteSubscribers = 0;
  /** Runs of other instances first seen without their owner's lease, and when (see `settleIfOwnerLost`). */
  private readonly suspects = new Map<string, number>();

  /** Event-stream subscribers across every run, for the detailed health report. */
  subscriberCount(): number {
    let count = this.remoteSubscribers;
    for (const run of this.live.values()) count += run.subscribers.size;
    return count;
  }

  /** The wire status of a run (spec §19.5). */
  wireStatus(run: LiveRun): string {
    if (run.status === 'running' && run.approvals.pending.length > 0) return 'waiting_for_approval';
    return run.status;
  }

  /** The status object of a run (spec §19.2), from its row plus this process's state. */
  statusObject(row: RunRecord, run: LiveRun | undefined): Record<string, unknown> {
    const stored = (run?.settledResult ?? row.result ?? {}) as Record<string, unknown>;
    const input = (row.input ?? {}) as Record<string, unknown>;
    let status: string = run ? this.wireStatus(run) : row.status;
    if (!run && row.status === 'failed' && (row.error as { code?: string } | null)?.code === 'orphaned')
      status = 'interrupted';
    if (!run && typeof stored.wire_status === 'string') status = stored.wire_status;
    const settled = ['completed', 'failed', 'cancelled', 'interrupted'].includes(status);
    const object: Record<string, unknown> = {
      object: 'hermes.run',
      run_id: row.id,
      status,
      created_at: nativeTime(row.createdAt),
      updated_at: nativeTime(row.updatedAt),
      session_id: row.sessionId,
      model: run?.model ?? (input.model as string | undefined) ?? this.server.settings.modelName,
      last_event: run?.lastEvent ?? (settled ? `run.${status}` : null),
      completed: status === 'completed',
      partial: stored.partial === true,
      interrupted: stored.interrupted === true,
      output: settled ? ((stored.output as string | undefined) ?? null) : null,
      usage: settled ? ((stored.usage as unknown) ?? null) : null,
      runtime: run?.runtime ?? stored.runtime ?? null,
    };
    if (stored.error !== undefined) object.error = stored.error;
    if (stored.turn_exit_reason !== undefined) object.turn_exit_reason = stored.turn_exit_reason;
    // A run the store settled itself (its process ended: core's start-up recovery, or the stale-run sweep) has no
    // result; its row says why.
    if (!run && status === 'interrupted' && row.result === null) {
      object.interrupted = true;
      if (row.exitReason) object.turn_exit_reason = row.exitReason;
      const message = (row.error as { message?: unknown } | null)?.message;
      if (typeof message === 'string') object.error = message;
    }
    if (stored.pending_steer !== undefined) object.pending_steer = stored.pending_steer;
    const oldest = run?.approvals.pending[0];
    if (run && status === 'waiting_for_approval' && oldest) {
      const payload = approvalPayload(run.id, oldest.request);
      object.approval = {
        request_id: payload.request_id,
        command: payload.command,
        description: payload.description,
        pattern_key: payload.pattern_key,
        pattern_keys: payload.pattern_keys,
        choices: payload.choices,
        allow_session: payload.allow_session,
        allow_permanent: payload.allow_permanent,
        ...(payload.always_scope !== undefined ? { always_scope: payload.always_scope } : {}),
        requested_at: nativeTime(oldest.requestedAt),
        pending: run.approvals.pending.length,
      };
    }
    return object;
  }

  /**
   * The status object of a run this instance does not hold: the row, plus what the shared events say about the
   * last event and pending approvals (ADR 0018). A run whose owner lost its turn lease is settled first.
   */
  async remoteStatus(row: RunRecord): Promise<Record<string, unknown>> {
    const { bus } = this.server;
    if (!bus.shared) return this.statusObject(row, undefined);
    // The owner writes a run's end to the row before its terminal event: reading the event first, then the row,
    // never pairs an unfinished row with a terminal event.
    const latest = await bus.latest(row.id);
    const current = await this.settleIfOwnerLost((await this.server.host.store.runs.get(row.id)) ?? row);
    const object = this.statusObject(current, undefined);
    if (latest && UNFINISHED.has(current.status)) object.last_event = latest.payload.event;
    if (current.status !== 'running') return object;
    const asked = await bus.readNamed(current.id, ['approval.request', 'approval.responded']);
    const answered = new Set(
      asked.filter((entry) => entry.payload.event === 'approval.responded').map((entry) => entry.payload.request_id),
    );
    const pending = asked.filter(
      (entry) => entry.payload.event === 'approval.request' && !answered.has(entry.payload.request_id),
    );
    const oldest = pending[0]?.payload;
    if (!oldest) return object;
    object.status = 'waiting_for_approval';
    object.approval = {
      request_id: oldest.request_id,
      command: oldest.command,
      description: oldest.description,
      pattern_key: oldest.pattern_key,
      pattern_keys: oldest.pattern_keys,
      choices: oldest.choices,
      allow_session: oldest.allow_session,
      allow_permanent: oldest.allow_permanent,
      ...(oldest.always_scope !== undefined ? { always_scope: oldest.always_scope } : {}),
      requested_at: oldest.timestamp,
      pending: pending.length,
    };
    return object;
  }

  /**
   * Settles a run whose instance no longer holds its session's turn lease (killed, or cut off past the lease's
   * expiry) and never wrote its end: `interrupted` on the wire, stored `failed` with error code `orphaned`, exit
   * reason `interrupted_by_system(session_turn_lease_lost)`, and a `run.interrupted` event after the last shared one.
   * Returns the row as it now is.
   */
  async settleIfOwnerLost(row: RunRecord): Promise<RunRecord> {
    const { bus, host } = this.server;
    if (!bus.shared || !UNFINISHED.has(row.status) || this.live.has(row.id)) {
      this.suspects.delete(row.id);
      return row;
    }
    if (await bus.leaseHeld(row.sessionId, row.holder)) {
      this.suspects.delete(row.id);
      return row;
    }
    // The owner releases the lease a moment before it writes the run's end: only a loss still there at a later
    // check (the streams re-check every second, status readers poll) is taken for the owner's death.
    const since = this.suspects.get(row.id);
    if (since === undefined || Date.now() - since < LOST_CONFIRM_MS) {
      if (since === undefined) this.suspects.set(row.id, Date.now());
      return row;
    }
    this.suspects.delete(row.id);
    const again = await host.store.runs.get(row.id);
    if (!again || !UNFINISHED.has(again.status) || (await bus.leaseHeld(again.sessionId, again.holder)))
      return again ?? row;
    const latest = await bus.latest(row.id);
    const seq = (latest?.seq ?? -1) + 1;
    const fields = { error: ORPHAN_ERROR, completed: false, interrupted: true, turn_exit_reason: LEASE_LOST_EXIT };
    const settled = await bus.settleIfUnfinished(row.id, {
      status: 'failed',
      result: { ...fields, partial: false, wire_status: 'interrupted', wire_seq: seq },
      exitReason: LEASE_LOST_EXIT,
      error: { code: 'orphaned', message: ORPHAN_ERROR },
      endedAt: Date.now(),
    });
    if (settled) {
      host.logger.warn('run settled after its instance lost the turn lease', { runId: row.id, holder: row.holder });
      await bus.append(row.id, [
        { seq, payload: { event: 'run.interrupted', run_id: row.id, timestamp: Date.now() / 1000, seq, ...fields } },
      ]);
    }
    return (await host.store.runs.get(row.id)) ?? again;
  }

  /**
   * Answers an approval, steer or stop for a run (spec §19.7, §19.8). A run executing on another instance gets the
   * request forwarded over the bus and that instance's answer (ADR 0018). With `forward` false (a request another
   * instance forwarded) errors become replies instead of being thrown.
   */
  async control(request: RunControlRequest, forward = true): Promise<RunControlReply> {
    try {
      if (forward) {
        const remote = await this.forward(request);
        if (remote) return remote;
      }
      if (request.kind === 'approval') return await this.approveHere(request.runId, request.body);
      if (request.kind === 'steer') return await this.steerHere(request.runId, request.body);
      return await this.stopHere(request.runId);
    } catch (error) {
      if (forward || !ApiError.isInstance(error)) throw error;
      return { status: error.status, body: error.body() as JsonObject, headers: error.headers };
    }
  }

  /** Sends a control request to the instance running the run, when that is another instance; null otherwise. */
  private async forward(request: RunControlRequest): Promise<RunControlReply | null> {
    const { bus, host } = this.server;
    if (!bus.shared) return null;
    const local =
      request.kind === 'approval' ? this.server.approvals.queues.has(request.runId) : this.live.has(request.runId);
    if (local || request.runId.startsWith('chatcmpl-')) return null;
    const row = await host.store.runs.get(request.runId);
    if (!row || !UNFINISHED.has(row.status) || row.holder === bus.holder) return null;
    let reply: RunControlReply | null;
    try {
      reply = await bus.request(row.holder, request, this.server.controlTimeoutMs);
    } catch (error) {
      if (error instanceof RangeError) throw new ApiError(413, 'payload_too_large', error.message);
      throw error;
    }
    if (!reply) {
      // No answer: an owner that still holds the turn is alive but unreachable; otherwise the run is settled here.
      const unreachable = () =>
        new ApiError(503, 'run_owner_unreachable', 'The instance running this run did not answer; retry.', {
          headers: { 'Retry-After': '1' },
        });
      if (await bus.leaseHeld(row.sessionId, row.holder)) throw unreachable();
      // A frozen owner's loss is only taken for its death at a later check (settleIfOwnerLost): until the run is
      // settled, the request is answered 503 to be retried, never dropped with the 409 of a run executing nowhere
      // (issue 33.3). Once settled, the request gets the answer of a run that ended (a stop: its final status).
      const settled = await this.settleIfOwnerLost(row);
      if (UNFINISHED.has(settled.status)) throw unreachable();
      return null;
    }
    if (reply.status >= 400) {
      const error = (reply.body.error ?? {}) as Record<string, unknown>;
      throw new ApiError(
        reply.status as ApiError['status'],
        String(error.code ?? 'internal_error'),
        String(error.message ?? 'The instance running this run failed.'),
        {
          param: typeof error.param === 'string' ? error.param : null,
          ...(reply.headers ? { headers: reply.headers } : {}),
          ...(error.hermes ? { hermes: error.hermes as Record<string, unknown> } : {}),
        },
      );
    }
    return reply;
  }

  private async rowOf(runId: string): Promise<RunRecord> {
    const row = await this.server.host.store.runs.get(runId);
    if (!row) throw new ApiError(404, 'run_not_found', `Run not found: ${runId}`);
    return row;
  }

  /** `POST /v1/runs/{id}/approval` on the instance holding the run's approval queue (spec §19.7). */
  private async approveHere(runId: string, body: Record<string, unknown>): Promise<RunControlReply> {
    const queue = this.server.approvals.queues.get(runId);
    if (!queue) {
      if (!runId.startsWith('chatcmpl-')) await this.rowOf(runId);
      if (runId.startsWith('chatcmpl-')) throw new ApiError(404, 'run_not_found', `Run not found: ${runId}`);
      throw new ApiError(409, 'approval_not_active', 'This run has no approval session.');
    }
    const answer = approvalAnswer(body);
    if (queue.settled || !queue.asked)
      throw new ApiError(409, 'approval_not_active', 'This run has no approval session.');
    const targets = approvalTargets(queue.pending, body, answer);
    for (const target of targets) target.resolve(answer.choice);
    return approvalReply(runId, answer.choice, targets, targets.length);
  }

  /** `POST /v1/runs/{id}/steer` on the instance running the run (spec §19.8). */
  private async steerHere(runId: string, body: Record<string, unknown>): Promise<RunControlReply> {
    await this.rowOf(runId);
    const run = this.live.get(runId);
    const text = normalizeContent(body.input ?? body.message ?? body.text ?? '', 'input').text.trim();
    if (!run || this.wireStatus(run) !== 'running' || !run.agent)
      throw new ApiError(409, 'run_not_accepting_steer', 'The run is not accepting steer input.');
    if (!text) throw new ApiError(400, 'invalid_steer_input', 'Steer text is empty.', { param: 'input' });
    let outcome: ReturnType<Agent['steer']>;
    try {
      outcome = run.agent.steer(text);
    } catch (error) {
      throw new ApiError(500, 'steer_failed', `Steer failed: ${redactSecrets(String(error))}`);
    }
    if (outcome.status === 'rejected') throw new ApiError(409, 'steer_not_accepted', 'The agent refused the steer.');
    this.emit(run, 'run.steered', { accepted: true });
    return { status: 200, body: { object: 'hermes.run.steer', run_id: runId, accepted: true } };
  }

  /** `POST /v1/runs/{id}/stop` on the instance running the run (spec §19.8). */
  private async stopHere(runId: string): Promise<RunControlReply> {
    const { host } = this.server;
    const row = await this.rowOf(runId);
    const run = this.live.get(runId);
    const json = (body: Record<string, unknown>): RunControlReply => ({ status: 200, body: body as JsonObject });
    if (!run) {
      if (['completed', 'failed', 'cancelled'].includes(row.status)) return json(this.statusObject(row, undefined));
      throw new ApiError(409, 'run_not_active', 'The run is not executing in this process.');
    }
    if (run.terminal) return json(this.statusObject(await this.rowOf(runId), run));
    if (run.status === 'queued') {
      // A queued run is cancelled without starting its agent, and the answer is its final status (spec §19.5).
      run.controller.abort(interruptReason('user', 'stop'));
      await new Promise<void>((resolve) => {
        const wake = () => {
          if (!run.terminal) return;
          run.subscribers.delete(wake);
          resolve();
        };
        run.subscribers.add(wake);
        wake();
      });
      return json(this.statusObject(await this.rowOf(runId), run));
    }
    run.status = 'stopping';
    await host.store.runs.update(runId, { status: 'stopping' }).catch(() => undefined);
    run.controller.abort(interruptReason('user', 'stop'));
    return json({ object: 'hermes.run', run_id: runId, status: 'stopping' });
  }
}

/**
 * Takes the session's turn lease for a new run when other instances share the store (ADR 0018), or returns null.
 * Another holder's unexpired lease is a **409** `session_busy`. A retry whose idempotency key names an existing run
 * takes nothing (it is answered with that run).
 */
async function reserveSession(
  server: ServerContext,
  sessionId: string,
  runId: string,
  idempotencyKey: string | undefined,
): Promise<TurnLease | null> {
  const { host, bus } = server;
  if (!bus.shared) return null;
  if (idempotencyKey !== undefined && (await host.store.runs.findByIdempotencyKey(idempotencyKey))) return null;
  try {
    return await host.store.acquireTurnLease(sessionId, {
      holder: host.holderId,
      turnId: runId,
      ttlMs: host.config.session.lease_ttl * 1000,
      waitMs: 0,
    });
  } catch (error) {
    if (HermesError.isInstance(error) && error.code === 'lease_timeout')
      throw new ApiError(409, 'session_busy', `Session ${sessionId} already has a turn in flight.`);
    throw error;
  }
}

function lastSeqOf(context: Context): number | null {
  const raw = context.req.header('Last-Event-ID') ?? context.req.query('last_seq');
  if (raw === undefined) return null;
  if (!/^\d+$/.test(raw.trim()))
    throw new ApiError(400, 'invalid_last_event_id', 'Last-Event-ID must be a non-negative integer.', {
      param: context.req.header('Last-Event-ID') !== undefined ? 'Last-Event-ID' : 'last_seq',
    });
  return Number(raw.trim());
}

/** The approval choices `POST /v1/runs/{id}/approval` accepts, aliases included (spec §19.7). */
/** The choice and request id a `POST /v1/runs/{id}/approval` body gives (spec §19.7); 400 when either is invalid. */
export function approvalAnswer(body: Record<string, unknown>): {
  choice: 'once' | 'session' | 'always' | 'deny';
  requestId: string | undefined;
} {
  const choice = APPROVAL_ALIASES[String(body.choice ?? '').toLowerCase()];
  const requestId = body.request_id;
  if (requestId !== undefined && (typeof requestId !== 'string' || requestId === '' || requestId.length > 256))
    throw new ApiError(400, 'invalid_approval_request', 'Invalid request_id.', { param: 'request_id' });
  if (!choice) throw new ApiError(400, 'invalid_approval_choice', 'Unknown approval choice.', { param: 'choice' });
  return { choice, requestId };
}

/**
 * The pending approvals an answer names (spec §19.7): every one with `all` (or `resolve_all`), the one with its
 * `request_id`, else the oldest. 409 when none matches; 400 when one of them does not offer the choice.
 */
export function approvalTargets<Entry extends { request: { requestId: string; choices: readonly string[] } }>(
  pending: readonly Entry[],
  body: Record<string, unknown>,
  answer: { choice: string; requestId: string | undefined },
): Entry[] {
  const all = body.all === true || body.resolve_all === true;
  const targets = all
    ? [...pending]
    : answer.requestId !== undefined
      ? pending.filter((entry) => entry.request.requestId === answer.requestId)
      : pending.slice(0, 1);
  if (targets.length === 0) throw new ApiError(409, 'approval_not_pending', 'No matching approval is pending.');
  for (const target of targets)
    if (!target.request.choices.includes(answer.choice))
      throw new ApiError(400, 'invalid_approval_choice', `Choice ${answer.choice} is not offered.`, {
        param: 'choice',
      });
  return targets;
}

/** The 200 answer of `POST /v1/runs/{id}/approval` (spec §19.7): the choice, the first target's request id, how many. */
export function approvalReply(
  runId: string,
  choice: string,
  targets: readonly { request: { requestId: string } }[],
  resolved: number,
): RunControlReply {
  return {
    status: 200,
    body: {
      object: 'hermes.run.approval_response',
      run_id: runId,
      choice,
      request_id: targets[0]?.request.requestId ?? null,
      resolved,
    },
  };
}

export const APPROVAL_ALIASES: Record<string, 'once' | 'session' | 'always' | 'deny'> = {
  once: 'once',
  approve: 'once',
  approved: 'once',
  allow: 'once',
  session: 'session',
  always: 'always',
  deny: 'deny',
};

/**
 * The `/v1/runs*` routes (spec §19). A run id that names a turn no run started (`run_turn_…`, ADR 0076) is served by
 * `turnRuns`, from the core's live-session hub.
 */
export function registerRunsRoutes(app: Hono, server: ServerContext, registry: RunRegistry, turnRuns: TurnRuns): void {
  const { host, settings, admission } = server;

  app.post('/v1/runs', async (context) => {
    const idempotencyKey = context.req.header('Idempotency-Key');
    if (idempotencyKey !== undefined && !/^[\x21-\x7e]{1,255}$/.test(idempotencyKey))
      throw new ApiError(400, 'invalid_idempotency_key', 'Invalid Idempotency-Key.', { param: 'Idempotency-Key' });
    const sessionKey = sessionKeyHeader(context);
    const body = await readJsonBody(context);
    if (body.input === undefined || body.input === null || body.input === '')
      throw new ApiError(400, 'missing_required_field', "Missing 'input' field", { param: 'input' });
    if (typeof body.input !== 'string' && !Array.isArray(body.input))
      throw invalidField('input', "'input' must be a string or array");
    const items = (typeof body.input === 'string' ? [{ role: 'user', content: body.input }] : body.input).map(
      (item: unknown) =>
        typeof item === 'string' ? { role: 'user', content: item } : (item as { role: unknown; content: unknown }),
    );
    const instructions = typeof body.instructions === 'string' ? [body.instructions] : [];
    const conversation = normalizeConversation(
      items,
      (index) => `input[${index}]`,
      'No user message found in input',
      instructions,
    );
    const requestedSession = body.session_id;
    if (requestedSession !== undefined) {
      if (typeof requestedSession !== 'string' || !isValidSessionId(requestedSession))
        throw invalidField('session_id', 'Invalid session_id.');
      if (body.previous_response_id !== undefined || body.conversation_history !== undefined)
        throw invalidField('session_id', 'session_id cannot be combined with a chain or explicit history.');
    }
    const selection = selectModel(host, settings, body, true);
    const fingerprint = createHash('sha256').update(canonicalJson(body)).digest('hex');
    const runId = hexId('run_', 24);
    // Placement (spec §19.1): a chain, then explicit history, then `session_id`, then a new session named after the run.
    let placement: Placement | null = null;
    if (typeof body.previous_response_id === 'string')
      placement = await placeTurn(host, await previousResponse(host, body.previous_response_id), undefined, runId);
    else if (Array.isArray(body.conversation_history))
      placement = await placeTurn(host, null, body.conversation_history, runId);
    const sessionId = placement?.sessionId ?? (typeof requestedSession === 'string' ? requestedSession : runId);

    if (idempotencyKey === undefined) admission.checkCapacity();
    if (admission.busyWith(sessionId)) throw sessionBusy(sessionId);
    // A session named after the run (no placement, no `session_id`) is new: its id was drawn a moment ago, so there is
    // nothing to look up (ADR 0082). It is opened here, born with its first turn's lease and, without an
    // Idempotency-Key (whose check locks the key's row), with the run's row, in one statement: that lease is the run's
    // busy check and its turn's own, so no reservation is taken, no transcript or usage of the empty session is read,
    // and the turn takes no lease of its own (ADR 0088).
    const namedAfterRun = placement === null && typeof requestedSession !== 'string';
    const runInput = { fingerprint, model: selection.display, body: body as JsonValue };
    const bornRun = namedAfterRun && idempotencyKey === undefined;
    const bornAgent = namedAfterRun
      ? await agentForSession(
          host,
          sessionId,
          true,
          bornRun ? { id: runId, input: runInput, holder: host.holderId } : undefined,
        )
      : null;
    // Lets go of the new session's agent when the run is not started: its unused lease goes back with it.
    const dropBorn = () => {
      if (bornAgent) host.releaseAgent(sessionId);
    };
    const existingSession = namedAfterRun ? null : await host.store.getSession(sessionId);
    if (!existingSession && !namedAfterRun)
      await host.store.createSession({ id: sessionId, source: 'api_server' }).catch((error: unknown) => {
        // Another instance created it a moment ago: the session is there either way.
        if (!(HermesError.isInstance(error) && error.code === 'session_exists')) throw error;
      });
    // With several instances the session's turn lease is the busy check: taken here for a stored session (the turn
    // takes it over when it starts, as the same holder), so of two runs started on two instances at once exactly one is
    // admitted. A new session has it already.
    const reservation = bornAgent ? null : await reserveSession(server, sessionId, runId, idempotencyKey);
    // Null when the run's row was born with its session.
    let record: (RunRecord & { existing: boolean }) | null = null;
    try {
      if (!bornRun)
        record = await host.store.runs.create({
          id: runId,
          sessionId,
          input: runInput,
          idempotencyKey: idempotencyKey ?? null,
          holder: host.holderId,
        });
    } catch (error) {
      dropBorn();
      throw error;
    }
    if (record?.existing) {
      await reservation?.release().catch(() => undefined);
      dropBorn();
      if (!existingSession && sessionId === runId) await host.store.deleteSession(sessionId).catch(() => undefined);
      const previous = (record.input ?? {}) as { fingerprint?: string };
      if (previous.fingerprint !== fingerprint)
        throw new ApiError(409, 'idempotency_key_conflict', 'Idempotency-Key was used with a different body.', {
          param: 'Idempotency-Key',
        });
      const live = registry.live.get(record.id);
      const status = registry.statusObject(record, live).status;
      context.header('Location', `/v1/runs/${record.id}`);
      context.header('X-Hermes-Session-Id', record.sessionId);
      context.header('Idempotency-Replayed', 'true');
      if (sessionKey !== undefined) context.header('X-Hermes-Session-Key', sessionKey);
      return context.json(
        { object: 'hermes.run', run_id: record.id, session_id: record.sessionId, status, replayed: true },
        202,
      );
    }
    let slot: TurnSlot;
    try {
      // A no-op once the turn took the lease over; frees it when the run ended before its turn started.
      slot = admission.admit(sessionId, runId, 'runs', () => void reservation?.release().catch(() => undefined));
    } catch (error) {
      await reservation?.release().catch(() => undefined);
      dropBorn();
      await host.store.runs
        .update(runId, { status: 'failed', error: { code: 'not_admitted' }, endedAt: Date.now() })
        .catch(() => undefined);
      throw error;
    }
    server.metrics.turns += 1;
    const run = registry.register(runId, sessionId, selection.display, selection);
    registry.start(run, slot, async () => {
      // The new session's agent is the one opened above, kept live by the slot (the host lets it go on release).
      const agent = bornAgent ?? (await agentForSession(host, sessionId));
      const history = [
        ...(placement?.seed ?? []),
        ...conversation.history.map((message) => ({ role: message.role, content: message.text })),
      ];
      if (history.length > 0) await host.store.appendMessages(sessionId, history);
      const route = agent.model;
      if (route) Object.assign(run.runtime, { provider: route.provider, model: route.model });
      return {
        agent,
        input: toTurnInput(conversation.input, conversation.systemText),
        model: selection.spec,
        memoryScope: sessionKey,
      };
    });
    context.header('Location', `/v1/runs/${runId}`);
    context.header('X-Hermes-Session-Id', sessionId);
    if (sessionKey !== undefined) context.header('X-Hermes-Session-Key', sessionKey);
    return context.json(
      { object: 'hermes.run', run_id: runId, session_id: sessionId, status: 'started', replayed: false },
      202,
    );
  });

  const rowOf = async (runId: string) => {
    const row = await host.store.runs.get(runId);
    if (!row) throw new ApiError(404, 'run_not_found', `Run not found: ${runId}`);
    return row;
  };

  app.get('/v1/runs/:run_id', async (context) => {
    const runId = context.req.param('run_id');
    if (turnIdOfRun(runId) !== null) return context.json(await turnRuns.status(runId));
    const row = await rowOf(runId);
    const live = registry.live.get(runId);
    return context.json(live ? registry.statusObject(row, live) : await registry.remoteStatus(row));
  });

  app.get('/v1/runs/:run_id/events', async (context) => {
    const runId = context.req.param('run_id');
    const after = lastSeqOf(context);
    if (turnIdOfRun(runId) !== null) {
      const view = await turnRuns.view(runId);
      if (!view) throw new ApiError(404, 'run_not_found', `Run not found: ${runId}`);
      return streamSse(context, async (streamApi) => {
        const writer = new SseWriter(streamApi, server.keepaliveMs, { pace: 'wait' });
        await writer.comment('open');
        await streamBacklog(view, after, streamApi, writer);
      });
    }
    // A run of another instance (or one from before a restart): its first events are asked for beside its row, so the
    // stream starts one round trip sooner (ADR 0096).
    let watch =
      !registry.live.has(runId) && server.bus.shared ? new SharedRunWatch(server.bus, runId, after ?? -1) : null;
    let row: RunRecord;
    try {
      row = await rowOf(runId);
    } catch (error) {
      watch?.close();
      throw error;
    }
    const run = registry.live.get(runId);
    if (run) {
      watch?.close();
      watch = null;
    }
    return streamSse(context, async (streamApi) => {
      // The reader waits for its socket (64 KiB at most are held for it) and falls behind the bounded backlog instead,
      // dropped past SLOW_SUBSCRIBER_LIMIT to resume with Last-Event-ID (spec §19.3, ADR 0038).
      const writer = new SseWriter(streamApi, server.keepaliveMs, { pace: 'wait' });
      try {
        await writer.comment('open');
      } catch (error) {
        watch?.close();
        throw error;
      }
      if (!run && server.bus.shared) {
        // The run executes on another instance (or ran before a restart): stream its shared events (ADR 0018).
        await registry.streamShared(row, after, streamApi, writer, watch ?? undefined);
        return;
      }
      if (!run) {
        // No backlog in this process: rebuild the terminal event from the row (spec §19.3).
        let current = row;
        while (!['completed', 'failed', 'cancelled'].includes(current.status) && !streamApi.aborted) {
          await new Promise((resolve) => setTimeout(resolve, 5000));
          current = (await host.store.runs.get(runId)) ?? current;
        }
        const status = registry.statusObject(current, undefined);
        const stored = (current.result ?? {}) as Record<string, unknown>;
        const { wire_status: _wire, wire_seq: terminalSeq, ...fields } = stored;
        const seq = typeof terminalSeq === 'number' ? terminalSeq : null;
        // A client that already saw the terminal event (Last-Event-ID at or past it) gets nothing replayed.
        if (after === null || seq === null || after < seq)
          await writer.frame(
            {
              event: `run.${String(status.status)}`,
              run_id: runId,
              timestamp: Date.now() / 1000,
              ...(seq === null ? {} : { seq }),
              ...fields,
            },
            seq === null ? {} : { id: seq },
          );
        await writer.comment('stream closed');
        await writer.finish();
        return;
      }
      await streamBacklog(run, after, streamApi, writer);
    });
  });

  const control = async (context: Context, kind: RunControlRequest['kind']) => {
    const runId = context.req.param('run_id') as string;
    const body = kind === 'stop' ? {} : await readJsonBody(context);
    const request: RunControlRequest = { kind, runId, body: body as JsonObject };
    const reply = turnIdOfRun(runId) !== null ? await turnRuns.control(request) : await registry.control(request);
    for (const [name, value] of Object.entries(reply.headers ?? {})) context.header(name, value);
    return context.json(reply.body, reply.status as 200);
  };
  app.post('/v1/runs/:run_id/approval', (context) => control(context, 'approval'));
  app.post('/v1/runs/:run_id/steer', (context) => control(context, 'steer'));
  app.post('/v1/runs/:run_id/stop', (context) => control(context, 'stop'));
}

/** What {@link streamBacklog} reads: a run's in-memory backlog, or that of a turn shown as a run (ADR 0076). */
export type BacklogStream = Pick<LiveRun, 'id' | 'backlog' | 'nextSeq' | 'subscribers' | 'terminal'>;

/**
 * Streams a run held in this process from its backlog (spec §19.3): the retained events from `after` on, then each new
 * one, until the terminal event.
 */
export async function streamBacklog(
  run: BacklogStream,
  after: number | null,
  streamApi: { readonly aborted: boolean; onAbort(listener: () => void): void },
  writer: SseWriter,
): Promise<void> {
  const runId = run.id;
  let next = after === null ? (run.backlog.firstSeq() ?? 0) : after + 1;
  const oldest = run.backlog.firstSeq() ?? run.nextSeq;
  if (after !== null && next < oldest) {
    await writer.frame(replayTruncated(runId, oldest, after));
    next = oldest;
  }
  let wake: (() => void) | null = null;
  // A subscriber too far behind on live events is dropped; it resumes with Last-Event-ID (spec §19.3). Behind
  // means still behind once the event loop has turned: the deltas parsed from one network chunk are emitted in
  // microtasks, several hundred at once, while node holds this subscriber's last write corked until the next
  // tick, so a client that reads as fast as the socket allows is caught up by then. The check is armed from
  // the run's side, on the event that puts the subscriber over the limit, since a subscriber whose client
  // stopped reading sits in a write that waits for the socket to drain.
  const liveFrom = run.nextSeq;
  let lagCheck: NodeJS.Immediate | null = null;
  let dropped = false;
  const behind = () => next >= liveFrom && run.nextSeq - next > SLOW_SUBSCRIBER_LIMIT;
  const subscriber = () => {
    wake?.();
    if (lagCheck !== null || dropped || !behind()) return;
    lagCheck = setImmediate(() => {
      lagCheck = null;
      if (behind()) dropped = true;
    });
  };
  run.subscribers.add(subscriber);
  streamApi.onAbort(() => wake?.());
  try {
    while (!streamApi.aborted && !dropped) {
      const first = run.backlog.firstSeq() ?? run.nextSeq;
      if (next < first) return;
      const pending = run.backlog.since(next);
      for (const event of pending) {
        await writer.frame(event, { id: event.seq as number });
        if (dropped) return;
        next = (event.seq as number) + 1;
        if (TERMINAL_EVENTS.has(event.event)) {
          await writer.comment('stream closed');
          await writer.finish();
          return;
        }
      }
      // A resume at or past the terminal event has nothing left to receive: close instead of waiting forever.
      if (run.terminal && next >= run.nextSeq) {
        await writer.comment('stream closed');
        await writer.finish();
        return;
      }
      await new Promise<void>((resolve) => {
        wake = resolve;
        if (run.nextSeq > next || streamApi.aborted) resolve();
      });
      wake = null;
    }
  } finally {
    if (lagCheck) clearImmediate(lagCheck);
    run.subscribers.delete(subscriber);
    await writer.finish();
  }
}

/** The frame that opens a replay whose first requested events are no longer retained (spec §19.3). */
function replayTruncated(runId: string, oldest: number, after: number): Record<string, unknown> {
  return {
    event: 'replay.truncated',
    run_id: runId,
    timestamp: Date.now() / 1000,
    oldest_retained_seq: oldest,
    requested_seq: after,
  };
}
