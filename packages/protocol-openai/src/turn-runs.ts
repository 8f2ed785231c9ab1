import type { JsonObject, LiveTurn, RunControlReply, RunControlRequest, TurnResult } from '@hermes/core';
import { approvalPayload } from './approval-payload.js';
import { ApiError } from './http-error.js';
import { nativeTime, turnIdOfRun } from './ids.js';
import { normalizeContent } from './normalize-input.js';
import { type BacklogEvent, RunBacklog } from './run-backlog.js';
import { RunEventMapper } from './run-event-map.js';
import {
  approvalAnswer,
  approvalReply,
  approvalTargets,
  type BacklogStream,
  RUN_BACKLOG_SIZE,
  terminalOf,
} from './runs.js';
import type { ServerContext } from './server-context.js';

/** How long the events view of such a turn stays after the turn ended (the hub describes it as long). */
const VIEW_RETENTION_MS = 600_000;

/** The events of one such turn as a run stream, kept in this process while anyone reads them. */
interface TurnView extends BacklogStream {
  lastEvent: string | null;
  unsubscribe: () => void;
}

/**
 * The runs API's view of a turn no run started (ADR 0076): `GET /v1/runs/{id}`, its events, its approvals, a steer and
 * a stop, all served from the core's live-session hub, which knows the turn here or asks the instance running it.
 * No row of the `runs` table backs it, so no store write is made per turn.
 */
export class TurnRuns {
  private readonly views = new Map<string, TurnView>();

  constructor(private readonly server: ServerContext) {}

  /** The turn a run id names, or a 404 `run_not_found`. */
  private async turnOf(runId: string): Promise<LiveTurn> {
    const turnId = turnIdOfRun(runId);
    const turn = turnId === null ? null : await this.server.host.live.turn(turnId);
    if (!turn) throw new ApiError(404, 'run_not_found', `Run not found: ${runId}`);
    return turn;
  }

  /** `GET /v1/runs/{id}` of a turn (spec §19.2). */
  async status(runId: string): Promise<Record<string, unknown>> {
    return this.statusObject(runId, await this.turnOf(runId));
  }

  private statusObject(runId: string, turn: LiveTurn): Record<string, unknown> {
    let status: string;
    let fields: Record<string, unknown> = {};
    if (turn.result) ({ status, fields } = terminalOf(turn.result));
    else if (turn.stopping) status = 'stopping';
    else if (turn.approvals.length > 0) status = 'waiting_for_approval';
    else status = 'running';
    const settled = turn.result !== null;
    const object: Record<string, unknown> = {
      object: 'hermes.run',
      run_id: runId,
      status,
      created_at: nativeTime(turn.startedAt),
      updated_at: nativeTime(turn.updatedAt),
      session_id: turn.sessionId,
      model: turn.model?.model ?? this.server.settings.modelName,
      last_event: this.views.get(runId)?.lastEvent ?? (settled ? `run.${status}` : null),
      completed: status === 'completed',
      partial: fields.partial === true,
      interrupted: fields.interrupted === true,
      output: settled ? ((fields.output as string | undefined) ?? null) : null,
      usage: settled ? ((fields.usage as unknown) ?? null) : null,
      runtime: turn.model ? { provider: turn.model.provider, model: turn.model.model } : null,
    };
    for (const name of ['error', 'turn_exit_reason', 'pending_steer'])
      if (fields[name] !== undefined) object[name] = fields[name];
    const oldest = turn.approvals[0];
    if (status === 'waiting_for_approval' && oldest) {
      const {
        run_id: _runId,
        tool_call_id: _callId,
        timeout_s: _timeout,
        ...payload
      } = approvalPayload(runId, oldest.request);
      object.approval = { ...payload, requested_at: nativeTime(oldest.requestedAt), pending: turn.approvals.length };
    }
    return object;
  }

  /**
   * The events view of a turn, opened on first use: from the turn's start when the hub kept its events (a turn of this
   * process with a relay; a turn of another instance, which sends them to a new watcher), else from now on, led by its
   * pending approvals. Null for an unknown turn.
   */
  async view(runId: string): Promise<BacklogStream | null> {
    const existing = this.views.get(runId);
    if (existing) return existing;
    const turnId = turnIdOfRun(runId);
    const { live } = this.server.host;
    const turn = turnId === null ? null : await live.turn(turnId);
    if (turnId === null || !turn) return null;
    const raced = this.views.get(runId);
    if (raced) return raced;
    const view: TurnView = {
      id: runId,
      backlog: new RunBacklog(RUN_BACKLOG_SIZE),
      nextSeq: 0,
      subscribers: new Set(),
      terminal: false,
      lastEvent: null,
      unsubscribe: () => undefined,
    };
    this.views.set(runId, view);
    if (turn.result) {
      this.end(view, turn.result);
      return view;
    }
    const mapper = new RunEventMapper(
      (name, payload) => this.emit(view, name, payload),
      runId,
      this.server.settings.showReasoning,
      true,
    );
    const onEvent = (event: Parameters<Parameters<typeof live.subscribe>[1]>[0]['event']) => {
      if (event.turnId !== turnId || view.terminal) return;
      if (event.type === 'turn.end') this.end(view, event.result);
      else mapper.push(event);
    };
    const kept = turn.origin === live.holderId ? live.turnEvents(turnId) : null;
    if (kept) for (const event of [...kept]) onEvent(event);
    else
      for (const pending of turn.approvals)
        mapper.push({ type: 'approval.request', request: pending.request } as Parameters<typeof onEvent>[0]);
    view.unsubscribe = live.subscribe(turn.sessionId, ({ event }) => onEvent(event));
    // The turn may have ended between the question and the subscription.
    void live.turn(turnId).then((now) => {
      if (now?.result && !view.terminal) this.end(view, now.result);
    });
    return view;
  }

  private emit(view: TurnView, event: string, payload: Record<string, unknown>): void {
    const full = { event, run_id: view.id, timestamp: Date.now() / 1000, seq: view.nextSeq, ...payload };
    view.nextSeq += 1;
    view.lastEvent = event;
    view.backlog.push(full as BacklogEvent);
    for (const wake of view.subscribers) wake();
  }

  private end(view: TurnView, result: TurnResult): void {
    if (view.terminal) return;
    const { status, fields } = terminalOf(result);
    if (status === 'completed' && result.route)
      fields.runtime = { provider: result.route.provider, model: result.route.model };
    view.terminal = true;
    view.unsubscribe();
    this.emit(view, `run.${status}`, fields);
    setTimeout(() => {
      if (this.views.get(view.id) === view) this.views.delete(view.id);
    }, VIEW_RETENTION_MS).unref();
  }

  /** An approval answer, steer or stop naming a turn (spec §19.7, §19.8), answered through the hub. */
  async control(request: RunControlRequest): Promise<RunControlReply> {
    if (request.kind === 'approval') return this.approve(request.runId, request.body);
    if (request.kind === 'steer') return this.steer(request.runId, request.body);
    return this.stop(request.runId);
  }

  private async approve(runId: string, body: JsonObject): Promise<RunControlReply> {
    const turn = await this.turnOf(runId);
    const answer = approvalAnswer(body);
    if (turn.result) throw new ApiError(409, 'approval_not_active', 'This run has no approval session.');
    const targets = approvalTargets(turn.approvals, body, answer);
    let resolved = 0;
    for (const target of targets)
      if (this.server.host.live.answerApproval(target.request.requestId, answer.choice, turn.origin)) resolved += 1;
    if (resolved === 0) throw new ApiError(409, 'approval_not_pending', 'No matching approval is pending.');
    return approvalReply(runId, answer.choice, targets, resolved);
  }

  private async steer(runId: string, body: JsonObject): Promise<RunControlReply> {
    const turn = await this.turnOf(runId);
    const text = normalizeContent(body.input ?? body.message ?? body.text ?? '', 'input').text.trim();
    if (this.statusObject(runId, turn).status !== 'running')
      throw new ApiError(409, 'run_not_accepting_steer', 'The run is not accepting steer input.');
    if (!text) throw new ApiError(400, 'invalid_steer_input', 'Steer text is empty.', { param: 'input' });
    const outcome = await this.server.host.live.actOnTurn(turn.turnId, { kind: 'steer', text });
    if (outcome.status === 'unreachable') throw ownerUnreachable();
    if (outcome.status === 'not_running')
      throw new ApiError(409, 'run_not_accepting_steer', 'The run is not accepting steer input.');
    if (outcome.steer?.status === 'rejected')
      throw new ApiError(409, 'steer_not_accepted', 'The agent refused the steer.');
    const view = this.views.get(runId);
    if (view && !view.terminal) this.emit(view, 'run.steered', { accepted: true });
    return { status: 200, body: { object: 'hermes.run.steer', run_id: runId, accepted: true } };
  }

  private async stop(runId: string): Promise<RunControlReply> {
    const turn = await this.turnOf(runId);
    const json = (body: Record<string, unknown>): RunControlReply => ({ status: 200, body: body as JsonObject });
    if (turn.result) return json(this.statusObject(runId, turn));
    const outcome = await this.server.host.live.actOnTurn(turn.turnId, {
      kind: 'interrupt',
      options: { issuer: 'user', reason: 'stop', hard: true },
    });
    if (outcome.status === 'unreachable') throw ownerUnreachable();
    if (outcome.status === 'done') return json({ object: 'hermes.run', run_id: runId, status: 'stopping' });
    // It ended meanwhile: its final status.
    const now = await this.server.host.live.turn(turn.turnId);
    if (now?.result) return json(this.statusObject(runId, now));
    throw new ApiError(409, 'run_not_active', 'The run is not executing in this process.');
  }
}

function ownerUnreachable(): ApiError {
  return new ApiError(503, 'run_owner_unreachable', 'The instance running this run did not answer; retry.', {
    headers: { 'Retry-After': '1' },
  });
}
