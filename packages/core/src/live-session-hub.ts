import { randomUUID } from 'node:crypto';
import type { AgentEvent } from './events.js';
import type { InterruptOptions, SteerResult, TurnResult } from './turn-types.js';
import type { ApprovalChoice, ApprovalRequest, JsonObject, Logger, ModelRoute } from './types.js';
import { zeroUsage } from './usage.js';

/** One event of a live session as the hub delivers it: the core event and the instance whose turn emitted it. */
export interface LiveSessionEvent {
  readonly event: AgentEvent;
  /** The lease holder id of the instance that ran the turn (this host's `holderId` for a turn of this process). */
  readonly origin: string;
  /** True when the event came from another instance through the relay. */
  readonly remote: boolean;
}

/**
 * What the hub needs of the run bus to reach the other instances of a deployment (core's `RunBus`, ADR 0020's relay
 * channel). Structural, so the hub sits below the store layer.
 */
export interface LiveSessionRelay {
  readonly holder: string;
  readonly shared: boolean;
  relay(to: string, message: JsonObject): Promise<void>;
  onRelay(listener: (from: string, message: JsonObject) => void): () => void;
  /** Whether `holder` still holds the session's turn lease: a remote turn whose instance lost it is ended here. */
  leaseHeld?(sessionId: string, holder: string): Promise<boolean>;
  /** Resolves once this instance hears the others: the hub says hello then, so they tell it what they watch. */
  ready?(): Promise<void>;
  /** Calls `listener` after the connection was lost and regained: what the others said meanwhile was not heard. */
  onReconnect?(listener: () => void): () => void;
  /**
   * The other instances listening now (core's `RunBus.listening`), or null when unknown: a question to every instance
   * about a turn ends as soon as all of them said the turn is not theirs, instead of at its timeout.
   */
  listening?(): Promise<{ covers(holders: Iterable<string>): boolean } | null>;
}

/** Options of {@link LiveSessionHub.relayThrough}. */
export interface LiveSessionRelayOptions {
  /** How often this instance repeats which sessions it watches (default 15 s); a watch not repeated for three times that is dropped. */
  announceMs?: number;
  /** How long a question about a turn of another instance waits for that instance's answer (default 3 s). */
  turnRequestTimeoutMs?: number;
}

/** An approval of a live turn, with when it was asked (this host's clock, or the asking instance's). */
export interface LiveTurnApproval {
  readonly request: ApprovalRequest;
  readonly requestedAt: number;
}

/**
 * One turn as the hub knows it (ADR 0076): a turn of this process while it runs and for a while after it ended, or
 * such a turn of another instance as that instance told it. What the runs API shows of a turn no run started.
 */
export interface LiveTurn {
  readonly turnId: string;
  readonly sessionId: string;
  /** The lease holder id of the instance that runs it. */
  readonly origin: string;
  /** Unix milliseconds of its `turn.start`. */
  readonly startedAt: number;
  /** Unix milliseconds of its newest event. */
  readonly updatedAt: number;
  /** The user's text of the turn (`turn.start`'s input). */
  readonly input: string;
  readonly model: Pick<ModelRoute, 'provider' | 'model'> | null;
  /** The core type of its newest event. */
  readonly lastEvent: string | null;
  /** A stop was asked for and the turn has not ended yet. */
  readonly stopping: boolean;
  /** Its approvals still waiting, oldest first. */
  readonly approvals: LiveTurnApproval[];
  /** Its result once it ended, else null. */
  readonly result: TurnResult | null;
}

/** What to do to a running turn: interrupt it (a stop), or steer it. */
export type LiveTurnAction =
  | { kind: 'interrupt'; options: InterruptOptions }
  | { kind: 'steer'; text: string; redirect?: boolean };

/**
 * How an action on a turn went: `done` with the steer's result for a steer; `not_running` when the turn is not running
 * (it ended, or no instance knows it); `unreachable` when the instance running it did not answer in time.
 */
export type LiveTurnActionOutcome =
  | { status: 'done'; steer?: SteerResult }
  | { status: 'not_running' }
  | { status: 'unreachable' };

/**
 * What the hub needs of the host to act on a turn of this process: the host finds the session's live agent and acts
 * only when its turn in flight is this turn. False (or a rejected steer) when it is not.
 */
export interface LiveTurnControls {
  interrupt(sessionId: string, turnId: string, options: InterruptOptions): boolean;
  steer(sessionId: string, turnId: string, text: string, redirect: boolean): SteerResult;
}

/** An approval waiting in this process, answerable from any surface. */
interface PendingApproval {
  request: ApprovalRequest;
  requestedAt: number;
  answer: (choice: ApprovalChoice) => void;
}

/** The hub's own record of a turn of this process (what {@link LiveTurn} is built from). */
interface TurnRecord {
  turnId: string;
  sessionId: string;
  startedAt: number;
  updatedAt: number;
  input: string;
  model: Pick<ModelRoute, 'provider' | 'model'> | null;
  lastEvent: string | null;
  stopping: boolean;
  result: TurnResult | null;
  endedAt: number;
}

/** Relay message kinds of the hub; the gateway's relay ignores them (they carry no tunnel). */
const WATCH = 'hub.watch';
const UNWATCH = 'hub.unwatch';
const HELLO = 'hub.hello';
const EVENTS = 'hub.events';
const ANSWER = 'hub.answer';
/** A question about one turn (its state, or an action on it) for the instance running it, and that instance's reply. */
const TURN = 'hub.turn';
const TURN_REPLY = 'hub.turn.reply';
/** How far past its asker's wait (by the asker's clock) an action on a turn is still applied: clocks differ a little. */
const LATE_ACTION_GRACE_MS = 2_000;
/**
 * How long a turn of this process that ended is still described (its terminal status), how many such are kept, and how
 * many characters of their final texts at most (a server running long replies must not hold minutes of them).
 */
const ENDED_TURN_INFO_MS = 600_000;
const ENDED_TURN_INFO_MAX = 1_000;
const ENDED_TURN_TEXT_MAX = 4_000_000;
/** Events of one turn in flight kept for a late watcher (its start and its newest). */
const REPLAY_LIMIT = 1_000;
/**
 * How long a turn that ended here stays on hand for a watch that was announced before the turn ended but arrived after
 * it: notifications reach an instance a moment after they are committed, and a short turn can end in that moment.
 */
const ENDED_TURN_KEEP_MS = 10_000;
/** At most this many ended turns are kept (the oldest go first). */
const ENDED_TURNS_MAX = 256;

/**
 * The live sessions of one host, whichever protocol started their turns (ADR 0053): every agent of the host publishes
 * its events here, keyed by stored session id, and every protocol subscribes to the sessions it shows, so a gateway
 * client attached to session S sees a turn that the HTTP API runs on S. The approvals those turns wait for are held
 * here too: any surface may answer one (the gateway from its server request, the runs API from its endpoint) and the
 * first answer wins. The busy state stays in {@link TurnsInFlight} (ADR 0037).
 *
 * Across instances (several servers on one PostgreSQL database) the hub rides on the run bus's relay channel: an
 * instance with subscribers of S says so (`hub.watch`), and the instance running a turn on S sends that turn's events
 * to the watchers in batches; an answer to a remote approval goes back to the instance whose turn waits for it.
 */
export class LiveSessionHub {
  private readonly listeners = new Map<string, Set<(event: LiveSessionEvent) => void>>();
  private readonly approvals = new Map<string, PendingApproval>();
  /** Approvals raised on other instances and not yet resolved: request id → the instance whose turn waits. */
  private readonly remoteApprovals = new Map<string, string>();
  /** Other instances watching a session: session id → instance → when it last said so. */
  private readonly watchers = new Map<string, Map<string, number>>();
  /** Events waiting to be relayed, by instance; sent together once the current burst of events is over. */
  private readonly outbox = new Map<string, AgentEvent[]>();
  private flushScheduled = false;
  private relay: LiveSessionRelay | null = null;
  /**
   * With a relay: the events of each turn in flight in this process, so that an instance whose watch arrives after the
   * turn began (it was announced a moment before, or its client attached mid-turn) gets the turn from its start.
   */
  private readonly turnsInFlight = new Map<string, AgentEvent[]>();
  /**
   * With a relay: each session's last turn that ended here in the past {@link ENDED_TURN_KEEP_MS}, with its end, and
   * when it ended (this host's clock). A watch whose subscription began before that end gets the turn, which it would
   * have seen live had the watch arrived in time.
   */
  private readonly endedTurns = new Map<string, { events: AgentEvent[]; endedAt: number }>();
  /** Turns running on other instances as their events showed them, by session; `lost` counts failed lease checks. */
  private readonly remoteTurns = new Map<string, { origin: string; turnId: string; seq: number; lost: number }>();
  /** The last event delivered from another instance, by origin and session: a replay never delivers one twice. */
  private readonly lastRemote = new Map<string, { turnId: string | null; seq: number }>();
  /** The turns of this process by turn id: those running, and those that ended in the past {@link ENDED_TURN_INFO_MS}. */
  private readonly turns = new Map<string, TurnRecord>();
  /** The turn of this process in flight on each session. */
  private readonly sessionTurns = new Map<string, string>();
  /** Ended turns in end order, for their expiry. */
  private readonly endedTurnInfo: TurnRecord[] = [];
  /** Characters of the final texts and reasoning the ended turns hold. */
  private endedTurnText = 0;
  /** The record {@link trackTurn} found last. */
  private lastTurn: TurnRecord | null = null;
  private controls: LiveTurnControls | null = null;
  /** Questions about turns of other instances waiting for their reply, by request id. */
  private readonly turnRequests = new Map<string, (reply: JsonObject, from: string) => void>();
  private turnRequestTimeoutMs = 3_000;

  constructor(
    /** The lease holder id of this host: the origin of its own events. */
    readonly holderId: string,
    private readonly logger: Logger,
  ) {}

  /**
   * Calls `listener` with every event of the stored session's turns from now on (and its out-of-turn events, such as
   * a generated title), from any surface of this process and, once {@link relayThrough} is set up, of the other
   * instances. Returns the unsubscribe.
   */
  subscribe(sessionId: string, listener: (event: LiveSessionEvent) => void): () => void {
    let set = this.listeners.get(sessionId);
    if (!set) {
      set = new Set();
      this.listeners.set(sessionId, set);
      this.announce('*', WATCH, [sessionId], Date.now());
    }
    set.add(listener);
    return () => {
      const current = this.listeners.get(sessionId);
      if (!current?.delete(listener) || current.size > 0) return;
      this.listeners.delete(sessionId);
      this.announce('*', UNWATCH, [sessionId]);
    };
  }

  /** Whether anyone, here or on another instance, watches the session. */
  watched(sessionId: string): boolean {
    return this.listeners.has(sessionId) || (this.watchers.get(sessionId)?.size ?? 0) > 0;
  }

  /** Delivers an event of this process's agents: called by every agent's event log. */
  publish(event: AgentEvent): void {
    const sessionId = event.sessionId;
    if (event.turnId !== null) this.trackTurn(event);
    this.deliver({ event, origin: this.holderId, remote: false });
    if (this.relay !== null && event.turnId !== null) this.keepTurnEvent(event);
    const remote = this.watchers.get(sessionId);
    if (!remote || remote.size === 0 || this.relay === null) return;
    for (const instance of remote.keys()) {
      const queued = this.outbox.get(instance) ?? [];
      queued.push(event);
      this.outbox.set(instance, queued);
    }
    this.scheduleFlush();
  }

  /** Keeps what {@link turn} tells of a turn of this process: its start, newest event and end. */
  private trackTurn(event: AgentEvent): void {
    const turnId = event.turnId as string;
    if (event.type === 'turn.start') {
      const record: TurnRecord = {
        turnId,
        sessionId: event.sessionId,
        startedAt: event.ts,
        updatedAt: event.ts,
        input: event.input.text,
        model: event.model ? { provider: event.model.provider, model: event.model.model } : null,
        lastEvent: event.type,
        stopping: false,
        result: null,
        endedAt: 0,
      };
      this.turns.set(turnId, record);
      this.lastTurn = record;
      this.sessionTurns.set(event.sessionId, turnId);
      return;
    }
    // A turn's events come in runs (thousands of deltas): the last record found is tried before the map.
    const record = this.lastTurn?.turnId === turnId ? this.lastTurn : this.turns.get(turnId);
    if (!record) return;
    this.lastTurn = record;
    record.updatedAt = event.ts;
    record.lastEvent = event.type;
    if (event.type !== 'turn.end') return;
    record.result = event.result;
    record.stopping = false;
    record.endedAt = Date.now();
    if (this.sessionTurns.get(record.sessionId) === turnId) this.sessionTurns.delete(record.sessionId);
    this.lastTurn = null;
    this.endedTurnInfo.push(record);
    this.endedTurnText += textSize(event.result);
    this.dropEndedTurnInfo(record.endedAt);
  }

  private dropEndedTurnInfo(now: number): void {
    let drop = 0;
    while (
      drop < this.endedTurnInfo.length &&
      (this.endedTurnInfo.length - drop > ENDED_TURN_INFO_MAX ||
        this.endedTurnText > ENDED_TURN_TEXT_MAX ||
        (this.endedTurnInfo[drop] as TurnRecord).endedAt < now - ENDED_TURN_INFO_MS)
    ) {
      const record = this.endedTurnInfo[drop] as TurnRecord;
      if (this.turns.get(record.turnId) === record) this.turns.delete(record.turnId);
      this.endedTurnText -= record.result ? textSize(record.result) : 0;
      drop += 1;
    }
    if (drop > 0) this.endedTurnInfo.splice(0, drop);
  }

  private keepTurnEvent(event: AgentEvent): void {
    const sessionId = event.sessionId;
    if (event.type === 'turn.start') this.turnsInFlight.set(sessionId, []);
    const kept = this.turnsInFlight.get(sessionId);
    if (!kept) return;
    if (event.type === 'turn.end') {
      this.turnsInFlight.delete(sessionId);
      kept.push(event);
      this.keepEndedTurn(sessionId, kept);
      return;
    }
    kept.push(event);
    // A long turn keeps its start and its newest events; a late watcher sees a gap it shows as a turn seen mid-way.
    if (kept.length > REPLAY_LIMIT) kept.splice(1, kept.length - REPLAY_LIMIT);
  }

  private keepEndedTurn(sessionId: string, events: AgentEvent[]): void {
    const now = Date.now();
    this.endedTurns.delete(sessionId);
    this.endedTurns.set(sessionId, { events, endedAt: now });
    this.dropEndedTurns(now);
  }

  /** Lets go of the ended turns past their time or beyond the bound (also on the announce timer, when none end). */
  private dropEndedTurns(now: number): void {
    // Insertion order is end order: the oldest are first.
    for (const [oldest, turn] of this.endedTurns) {
      if (this.endedTurns.size <= ENDED_TURNS_MAX && turn.endedAt >= now - ENDED_TURN_KEEP_MS) break;
      this.endedTurns.delete(oldest);
    }
  }

  private deliver(delivered: LiveSessionEvent): void {
    const set = this.listeners.get(delivered.event.sessionId);
    if (!set) return;
    for (const listener of [...set]) {
      try {
        listener(delivered);
      } catch (error) {
        // One subscriber's failure must not keep the event from the others, nor break the turn that emitted it.
        this.logger.warn('live session listener threw', { error: String(error) });
      }
    }
  }

  // ---- approvals -------------------------------------------------------------------------------

  /**
   * Asks for an approval through the surface that started the turn (`ask`) while holding it open here, so any other
   * surface may answer it with {@link answerApproval}. Whichever answers first wins; the surface's own wait is then
   * aborted (its signal's reason is an `Error('resolved')`), so it withdraws its question.
   */
  ask<T>(
    request: ApprovalRequest,
    signal: AbortSignal,
    ask: (signal: AbortSignal) => Promise<T>,
  ): Promise<T | ApprovalChoice> {
    const own = new AbortController();
    const combined = AbortSignal.any([signal, own.signal]);
    return new Promise<T | ApprovalChoice>((resolve, reject) => {
      let settled = false;
      const finish = () => {
        settled = true;
        if (this.approvals.get(request.requestId) === pending) this.approvals.delete(request.requestId);
      };
      const pending: PendingApproval = {
        request,
        requestedAt: Date.now(),
        answer: (choice) => {
          if (settled) return;
          finish();
          own.abort(new Error('resolved'));
          resolve(choice);
        },
      };
      this.approvals.set(request.requestId, pending);
      ask(combined).then(
        (value) => {
          if (settled) return;
          finish();
          resolve(value);
        },
        (error: unknown) => {
          if (settled) return;
          finish();
          reject(error);
        },
      );
    });
  }

  /** The approval with this request id while it waits in this process, else undefined. */
  approval(requestId: string): ApprovalRequest | undefined {
    return this.approvals.get(requestId)?.request;
  }

  /** The approvals of a session waiting in this process, oldest first. */
  pendingApprovals(sessionId: string): ApprovalRequest[] {
    return [...this.approvals.values()]
      .filter((pending) => pending.request.sessionId === sessionId)
      .map((pending) => pending.request);
  }

  /**
   * Answers an approval waiting here or, through the relay, on the instance whose turn raised it. A choice the request
   * does not offer is applied as `deny`. False when no such approval is known.
   */
  answerApproval(requestId: string, choice: ApprovalChoice, origin?: string): boolean {
    const pending = this.approvals.get(requestId);
    if (pending) {
      pending.answer(pending.request.choices.includes(choice) ? choice : 'deny');
      return true;
    }
    // `origin`: the instance a caller learned the approval from (a turn's state, {@link turn}), when no event told it.
    const to = this.remoteApprovals.get(requestId) ?? (origin !== this.holderId ? origin : undefined);
    if (to === undefined || this.relay === null) return false;
    this.remoteApprovals.delete(requestId);
    void this.send(to, { t: ANSWER, request_id: requestId, choice });
    return true;
  }

  // ---- turns -------------------------------------------------------------------------------------

  /**
   * Lets the hub act on the turns of this process (a stop, a steer from another surface or instance). The host sets it
   * once with the means to reach its agents.
   */
  controlTurnsWith(controls: LiveTurnControls): void {
    this.controls = controls;
  }

  /**
   * The events of a turn of this process in flight so far (its start and its newest 1,000), when the hub keeps them
   * (with a relay, for late watchers); else null: a late reader then starts from the events that follow.
   */
  turnEvents(turnId: string): readonly AgentEvent[] | null {
    const record = this.turns.get(turnId);
    const kept = record ? this.turnsInFlight.get(record.sessionId) : undefined;
    return kept && kept[0]?.turnId === turnId ? kept : null;
  }

  /** The id of the turn of this process in flight on the session, if any. */
  turnOn(sessionId: string): string | undefined {
    return this.sessionTurns.get(sessionId);
  }

  /**
   * What is known of a turn: one of this process while it runs and for ten minutes after it ended; else, through the
   * relay, the answer of the instance running it (asked directly when this hub saw the turn's events, else every
   * instance). Null when no instance answers (an unknown turn, or one that ended long ago).
   */
  async turn(turnId: string): Promise<LiveTurn | null> {
    const local = this.localTurn(turnId);
    if (local) return local;
    const reply = await this.askAboutTurn(turnId, null);
    if (!reply || typeof reply.turn !== 'object' || reply.turn === null) return null;
    return reply.turn as unknown as LiveTurn;
  }

  /**
   * Interrupts or steers a running turn of this process, or through the relay one of another instance (its owner acts
   * and answers). See {@link LiveTurnActionOutcome}.
   */
  async actOnTurn(turnId: string, action: LiveTurnAction): Promise<LiveTurnActionOutcome> {
    const local = this.turns.get(turnId);
    if (local) return this.actHere(local, action);
    if (this.relay === null) return { status: 'not_running' };
    const reply = await this.askAboutTurn(turnId, action);
    if (reply === null)
      return this.originOf(turnId) === undefined ? { status: 'not_running' } : { status: 'unreachable' };
    const outcome = reply.outcome as LiveTurnActionOutcome | undefined;
    return outcome && typeof outcome.status === 'string' ? outcome : { status: 'not_running' };
  }

  /** The instance running a turn of another instance whose events reached this hub. */
  private originOf(turnId: string): string | undefined {
    for (const turn of this.remoteTurns.values()) if (turn.turnId === turnId) return turn.origin;
    return undefined;
  }

  private localTurn(turnId: string): LiveTurn | null {
    const record = this.turns.get(turnId);
    if (!record) return null;
    // One turn at a time runs on a session: every approval of the session is this turn's while it runs, those of its
    // subagents (asked under the root session, with the child's turn id) included.
    const approvals = [...this.approvals.values()]
      .filter((pending) =>
        record.result === null ? pending.request.sessionId === record.sessionId : pending.request.turnId === turnId,
      )
      .map((pending) => ({ request: pending.request, requestedAt: pending.requestedAt }));
    return {
      turnId,
      sessionId: record.sessionId,
      origin: this.holderId,
      startedAt: record.startedAt,
      updatedAt: record.updatedAt,
      input: record.input,
      model: record.model,
      lastEvent: record.lastEvent,
      stopping: record.stopping,
      approvals,
      result: record.result,
    };
  }

  private actHere(record: TurnRecord, action: LiveTurnAction): LiveTurnActionOutcome {
    if (record.result !== null || this.controls === null) return { status: 'not_running' };
    if (action.kind === 'interrupt') {
      if (!this.controls.interrupt(record.sessionId, record.turnId, action.options)) return { status: 'not_running' };
      if (action.options.hard !== false) record.stopping = true;
      return { status: 'done' };
    }
    const steer = this.controls.steer(record.sessionId, record.turnId, action.text, action.redirect === true);
    return { status: 'done', steer };
  }

  /**
   * Asks the instance running a turn about it (`action` null: its state), directly when its events told which instance
   * that is, else every instance (only the one running it answers). Null without an answer in time.
   */
  private askAboutTurn(turnId: string, action: LiveTurnAction | null): Promise<JsonObject | null> {
    const relay = this.relay;
    if (relay === null) return Promise.resolve(null);
    const origin = this.originOf(turnId);
    const id = randomUUID();
    return new Promise((resolve) => {
      const notHere = new Set<string>();
      let listed: { covers(holders: Iterable<string>): boolean } | null = null;
      const settle = (reply: JsonObject | null) => {
        if (!this.turnRequests.delete(id)) return;
        clearTimeout(timer);
        resolve(reply);
      };
      const timer = setTimeout(() => settle(null), this.turnRequestTimeoutMs);
      timer.unref?.();
      this.turnRequests.set(id, (reply, from) => {
        if (reply.turn !== null || origin !== undefined) {
          settle(reply);
          return;
        }
        // Asked of every instance: each without the turn says so; once all listening have, nobody runs it.
        notHere.add(from);
        if (listed?.covers(notHere)) settle(null);
      });
      const message: JsonObject = { t: TURN, id, turn_id: turnId };
      if (origin === undefined) {
        message.to_all = true;
        void relay
          .listening?.()
          .then((instances) => {
            listed = instances;
            if (listed?.covers(notHere)) settle(null);
          })
          .catch(() => undefined);
      }
      if (action !== null) {
        message.action = action as unknown as JsonObject;
        // Past this the asker has told its client the owner did not answer: a late action is not applied then.
        message.expires_at = Date.now() + this.turnRequestTimeoutMs;
      }
      void this.send(origin ?? '*', message);
    });
  }

  /** Answers another instance's question about a turn: only the instance running it answers one sent to every instance. */
  private answerTurnRequest(from: string, message: JsonObject): void {
    const id = message.id;
    const turnId = message.turn_id;
    if (typeof id !== 'string' || typeof turnId !== 'string') return;
    const record = this.turns.get(turnId);
    if (!record) {
      // Not here: said so, so that the asker need not wait for its timeout.
      void this.send(from, { t: TURN_REPLY, id, turn: null });
      return;
    }
    const action = message.action as LiveTurnAction | undefined;
    const expiresAt = typeof message.expires_at === 'number' ? message.expires_at : Number.POSITIVE_INFINITY;
    if (action && Date.now() > expiresAt + LATE_ACTION_GRACE_MS) {
      this.logger.warn('a stop or steer of a turn arrived after its asker gave up; not applied', { turnId, from });
      return;
    }
    const reply: JsonObject = { t: TURN_REPLY, id };
    if (action && (action.kind === 'interrupt' || action.kind === 'steer'))
      reply.outcome = this.actHere(record, action) as unknown as JsonObject;
    reply.turn = this.localTurn(turnId) as unknown as JsonObject;
    void this.send(from, reply);
  }

  // ---- across instances --------------------------------------------------------------------------

  /**
   * Shares this hub's sessions with the other instances on `bus` (a shared run bus; an in-process one does nothing).
   * Returns the stop function. apps/server calls it once with the bus it gives the runs API and the gateway.
   */
  relayThrough(bus: LiveSessionRelay, options: LiveSessionRelayOptions = {}): () => void {
    if (!bus.shared) return () => {};
    this.relay = bus;
    const announceMs = options.announceMs ?? 15_000;
    this.turnRequestTimeoutMs = options.turnRequestTimeoutMs ?? 3_000;
    const unsubscribe = bus.onRelay((from, message) => this.received(from, message));
    // The others answer a hello with what they watch. Said once this instance hears them (a watch sent before it
    // listened is lost: a short turn run here on that session would reach no one), and again after each reconnect.
    const hello = () => {
      if (this.relay !== bus) return;
      void this.send('*', { t: HELLO });
      this.announce('*', WATCH, [...this.listeners.keys()]);
    };
    if (bus.ready) void bus.ready().then(hello, hello);
    else hello();
    const unreconnect = bus.onReconnect?.(hello) ?? (() => {});
    const timer = setInterval(() => {
      this.announce('*', WATCH, [...this.listeners.keys()]);
      this.dropEndedTurns(Date.now());
      this.dropEndedTurnInfo(Date.now());
      void this.checkRemoteTurns(bus);
      const stale = Date.now() - 3 * announceMs;
      for (const [sessionId, instances] of this.watchers) {
        for (const [instance, seenAt] of instances) if (seenAt < stale) instances.delete(instance);
        if (instances.size === 0) this.watchers.delete(sessionId);
      }
    }, announceMs);
    timer.unref();
    return () => {
      clearInterval(timer);
      unreconnect();
      unsubscribe();
      this.announce('*', UNWATCH, [...this.listeners.keys()]);
      this.relay = null;
    };
  }

  /**
   * Resolves once the watches announced so far are sent (committed on the bus; the other instances hear them a moment
   * later). A protocol that attaches a client to a session awaits it before answering, so that a turn the client then
   * starts on another instance finds the watch there.
   */
  announced(): Promise<void> {
    return this.lastAnnounce;
  }

  private lastAnnounce: Promise<void> = Promise.resolve();

  /** `since`: when the sessions' subscriptions began (this host's clock), for a watch announced as it begins. */
  private announce(to: string, kind: string, sessions: string[], since?: number): void {
    if (this.relay === null || sessions.length === 0) return;
    this.lastAnnounce = this.send(to, since === undefined ? { t: kind, sessions } : { t: kind, sessions, since });
  }

  private send(to: string, message: JsonObject): Promise<void> {
    if (this.relay === null) return Promise.resolve();
    return this.relay.relay(to, message).catch((error: unknown) => {
      this.logger.warn('live session relay message not sent', { to, error: String(error) });
    });
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    // The deltas of one network chunk are emitted together: they travel in one relay message.
    setImmediate(() => {
      this.flushScheduled = false;
      for (const [instance, events] of this.outbox) {
        this.outbox.delete(instance);
        void this.send(instance, { t: EVENTS, events: events as unknown as JsonObject[] });
      }
    });
  }

  /**
   * Ends, for this instance's subscribers, a remote turn whose instance no longer holds the session's turn lease at two
   * checks in a row (it died or was cut off before its `turn.end` could come): a failed turn with exit reason
   * `interrupted_by_system(session_turn_lease_lost)`, as the runs API settles such a run (ADR 0018).
   */
  private async checkRemoteTurns(bus: LiveSessionRelay): Promise<void> {
    if (!bus.leaseHeld) return;
    for (const [sessionId, turn] of [...this.remoteTurns]) {
      let held: boolean;
      try {
        held = await bus.leaseHeld(sessionId, turn.origin);
      } catch {
        continue;
      }
      if (this.remoteTurns.get(sessionId) !== turn) continue;
      turn.lost = held ? 0 : turn.lost + 1;
      if (turn.lost < 2) continue;
      this.remoteTurns.delete(sessionId);
      this.logger.warn('a turn of another instance ended without its end: that instance lost the turn lease', {
        sessionId,
        instance: turn.origin,
      });
      this.deliver({ event: lostTurnEnd(sessionId, turn), origin: turn.origin, remote: true });
    }
  }

  /**
   * What a new watcher of a session missed: the turn running here so far, ahead of what follows; or, when no turn runs
   * and the watch began before the last turn here ended (the watch arrived late), that whole turn.
   */
  private catchUp(from: string, sessionId: string, since: unknown): void {
    const kept = this.turnsInFlight.get(sessionId);
    if (kept && kept.length > 0) {
      void this.send(from, { t: EVENTS, events: kept as unknown as JsonObject[] });
      return;
    }
    const ended = this.endedTurns.get(sessionId);
    if (kept || !ended || typeof since !== 'number' || ended.endedAt < since) return;
    if (ended.endedAt < Date.now() - ENDED_TURN_KEEP_MS) return;
    void this.send(from, { t: EVENTS, events: ended.events as unknown as JsonObject[] });
  }

  private received(from: string, message: JsonObject): void {
    const kind = message.t;
    if (kind === TURN) {
      this.answerTurnRequest(from, message);
      return;
    }
    if (kind === TURN_REPLY) {
      const settle = typeof message.id === 'string' ? this.turnRequests.get(message.id) : undefined;
      if (message.turn === undefined) message.turn = null;
      settle?.(message, from);
      return;
    }
    if (kind === HELLO) {
      // Watched since before the hello: a turn the newcomer ended before it heard this (kept a few seconds) is sent.
      this.announce(from, WATCH, [...this.listeners.keys()], 0);
      return;
    }
    if (kind === WATCH || kind === UNWATCH) {
      const sessions = Array.isArray(message.sessions) ? message.sessions : [];
      for (const sessionId of sessions) {
        if (typeof sessionId !== 'string') continue;
        const instances = this.watchers.get(sessionId) ?? new Map<string, number>();
        if (kind === WATCH) {
          if (!instances.has(from)) this.catchUp(from, sessionId, message.since);
          instances.set(from, Date.now());
        } else instances.delete(from);
        if (instances.size > 0) this.watchers.set(sessionId, instances);
        else this.watchers.delete(sessionId);
      }
      return;
    }
    if (kind === EVENTS && Array.isArray(message.events)) {
      for (const item of message.events) {
        const event = item as unknown as AgentEvent;
        if (typeof event !== 'object' || event === null || typeof event.sessionId !== 'string') continue;
        const key = `${from}\u0000${event.sessionId}`;
        const last = this.lastRemote.get(key);
        if (last && last.turnId === event.turnId && event.seq <= last.seq) continue;
        this.lastRemote.set(key, { turnId: event.turnId, seq: event.seq });
        if (event.type === 'approval.request') this.remoteApprovals.set(event.request.requestId, from);
        else if (event.type === 'approval.resolved') this.remoteApprovals.delete(event.requestId);
        if (event.type === 'turn.end') this.remoteTurns.delete(event.sessionId);
        else if (event.turnId !== null)
          this.remoteTurns.set(event.sessionId, { origin: from, turnId: event.turnId, seq: event.seq, lost: 0 });
        this.deliver({ event, origin: from, remote: true });
      }
      return;
    }
    if (kind === ANSWER && typeof message.request_id === 'string' && typeof message.choice === 'string') {
      const pending = this.approvals.get(message.request_id);
      const choice = message.choice as ApprovalChoice;
      if (pending) pending.answer(pending.request.choices.includes(choice) ? choice : 'deny');
    }
  }
}

/** The characters an ended turn's result holds in its texts (what dominates its size). */
function textSize(result: TurnResult): number {
  return (result.finalText?.length ?? 0) + (result.lastReasoning?.length ?? 0);
}

/** The `turn.end` of a remote turn whose instance lost its turn lease before it could send one. */
function lostTurnEnd(sessionId: string, turn: { turnId: string; seq: number }): AgentEvent {
  const exitReason = 'interrupted_by_system(session_turn_lease_lost)';
  const result: TurnResult = {
    turnId: turn.turnId,
    sessionId,
    outcome: 'failed',
    exitReason,
    finishReason: null,
    finalText: '',
    lastReasoning: null,
    partial: false,
    error: {
      code: 'turn_lease_lost',
      message: 'The instance running this turn stopped before it ended.',
      retryable: true,
    },
    iterations: 0,
    maxIterations: 0,
    apiCalls: 0,
    usage: { turn: zeroUsage(), session: zeroUsage() },
    cost: { turnUsd: null, sessionUsd: null, status: 'unknown' },
    route: null,
    userRowId: null,
    rowIds: [],
    durationMs: 0,
  };
  return { type: 'turn.end', sessionId, turnId: turn.turnId, seq: turn.seq + 1, ts: Date.now(), result } as AgentEvent;
}
