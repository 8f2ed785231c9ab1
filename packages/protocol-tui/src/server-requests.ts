import type { ClientRequestMethod } from '@hermes/core';
import { JSONRPC, JSONRPCClient, type JSONRPCResponse } from 'json-rpc-2.0';
import type { GatewayConnection } from './connection.js';
import { newServerRequestId } from './ids.js';
import { ErrorCode, type OpenRequest } from './wire/index.js';

/** How a server request ended. */
export type ServerRequestOutcome =
  | { kind: 'result'; result: Record<string, unknown> }
  | { kind: 'declined' }
  | { kind: 'withdrawn'; reason: WithdrawReason };

/** Reasons of `request.cancel` (§6.5). */
export type WithdrawReason = 'resolved' | 'timeout' | 'interrupted' | 'session_closed' | 'shutdown';

/**
 * The session side of a server request: who may answer it, where its `request.cancel` goes and
 * where it is listed. A live session implements it; the registry sits below sessions and never
 * sees the rest of one.
 */
export interface RequestSession {
  readonly runtimeId: string;
  /** The connections attached to the session; the eligible ones form the audience (§6.1). */
  readonly attached: ReadonlySet<GatewayConnection>;
  /** The session's open requests, oldest first (§6.2). */
  readonly openRequests: Map<string, OpenServerRequest>;
  /** Emits a session event (`request.cancel`). */
  emit(type: string, payload: Record<string, unknown>): void;
  /** Records activity for the orphan reaper (§3.5). */
  noteActivity(): void;
}

/** An open server request (§6.2). */
export interface OpenServerRequest {
  id: string;
  method: 'approval' | 'clarify' | 'sudo' | 'secret' | ClientRequestMethod;
  params: Record<string, unknown>;
  session: RequestSession;
  audience: Set<GatewayConnection>;
  declined: Set<GatewayConnection>;
  /** Batch clarify locks, by qid (§4.6). */
  locks: Map<string, string | null> | null;
  settle: (outcome: ServerRequestOutcome) => void;
  settled: boolean;
  cancelTimer: (() => void) | null;
}

/**
 * Marks the error response that settles a withdrawn request inside the process; it is never written to a connection.
 * It lies in JSON-RPC's range for implementation-defined server errors, which the gateway otherwise does not use.
 */
const WITHDRAWN_CODE = -32099;

/**
 * Every open server request of the process, by id; answers are matched across sessions (§6.3).
 *
 * The waiting is json-rpc-2.0's: one process-wide {@link JSONRPCClient} writes each request to its audience and holds
 * its pending promise by id. Every way a request ends becomes a JSON-RPC response handed to that client: a result
 * (an answer frame, `request.answer`, `approval.respond`, the last `clarify.lock`), an error when the whole audience
 * declined, or an error that only this registry produces for a withdrawal. One client serves the process rather than
 * one per connection because a request goes to several connections and any connection may answer it (§6.1, §6.3).
 * The registry keeps what the library does not know: the audience, who declined, the batch locks, the listings.
 */
export class ServerRequestRegistry {
  private readonly open = new Map<string, OpenServerRequest>();
  /** Writes a request frame to every connection of its audience, in one go. */
  private readonly client = new JSONRPCClient<readonly GatewayConnection[]>((frame, audience) => {
    for (const connection of audience) connection.send(frame);
  });

  /**
   * Raises a request on a session (§6.1). Resolves with the result, the declined outcome (no
   * eligible connection, or the whole audience declined), or a withdrawal.
   */
  raise(
    session: RequestSession,
    method: OpenServerRequest['method'],
    fields: Record<string, unknown>,
    options: { signal?: AbortSignal; timeoutMs?: number; batchQuestionIds?: string[] } = {},
  ): Promise<ServerRequestOutcome> {
    const attached = [...session.attached];
    const eligible = attached.filter((connection) => connection.open && connection.serverRequests);
    if (attached.length > 0 && eligible.length === 0) return Promise.resolve({ kind: 'declined' });
    const id = newServerRequestId();
    const params = { session_id: session.runtimeId, ...fields };
    const request: OpenServerRequest = {
      id,
      method,
      params,
      session,
      audience: new Set(eligible),
      declined: new Set(),
      locks: options.batchQuestionIds ? new Map() : null,
      settled: false,
      cancelTimer: null,
      settle: (outcome) => {
        if (request.settled) return;
        request.settled = true;
        request.cancelTimer?.();
        this.open.delete(id);
        session.openRequests.delete(id);
        const reason: WithdrawReason = outcome.kind === 'withdrawn' ? outcome.reason : 'resolved';
        session.emit('request.cancel', { id, method, reason });
        this.client.receive(responseOf(id, outcome));
      },
    };
    this.open.set(id, request);
    session.openRequests.set(id, request);
    session.noteActivity();
    // Registers the pending promise under `id`, then writes the frame to the eligible connections (none when parked).
    const answered = this.client.requestAdvanced({ jsonrpc: JSONRPC, id, method, params }, eligible);
    if (options.timeoutMs !== undefined) {
      const timer = setTimeout(() => request.settle({ kind: 'withdrawn', reason: 'timeout' }), options.timeoutMs);
      request.cancelTimer = () => clearTimeout(timer);
    }
    if (options.signal) {
      const onAbort = () => {
        const reason = options.signal?.reason;
        const timedOut = reason instanceof Error && reason.message === 'timeout';
        request.settle({ kind: 'withdrawn', reason: timedOut ? 'timeout' : 'interrupted' });
      };
      if (options.signal.aborted) onAbort();
      else options.signal.addEventListener('abort', onAbort, { once: true });
    }
    return Promise.resolve(answered).then(outcomeOf);
  }

  /** The open request with this id. */
  get(id: string): OpenServerRequest | undefined {
    return this.open.get(id);
  }

  /** Handles an answer frame (§6.3). Returns true when it settled a request. */
  answer(id: unknown, from: GatewayConnection | null, frame: { result?: unknown; error?: unknown }): boolean {
    if (typeof id !== 'string') return false;
    const request = this.open.get(id);
    if (!request) return false;
    request.session.noteActivity();
    if ('result' in frame && frame.result !== undefined) {
      const result =
        typeof frame.result === 'object' && frame.result !== null && !Array.isArray(frame.result)
          ? (frame.result as Record<string, unknown>)
          : {};
      // Batch clarify: the locks made so far travel with the result; the answer's own values win (§6.4).
      const merged = request.locks ? { ...result, __locks: Object.fromEntries(request.locks) } : result;
      request.settle({ kind: 'result', result: merged });
      return true;
    }
    if (from) {
      request.audience.add(from);
      request.declined.add(from);
    }
    if ([...request.audience].every((member) => request.declined.has(member))) {
      request.settle({ kind: 'declined' });
      return true;
    }
    return false;
  }

  /** Withdraws every open request of a session (or of the process when `session` is null). */
  withdrawAll(session: RequestSession | null, reason: WithdrawReason): void {
    for (const request of [...this.open.values()]) {
      if (session === null || request.session === session) request.settle({ kind: 'withdrawn', reason });
    }
  }
}

/** The `open_requests` listing of a session, oldest first (§6.2); listing adds the caller to the audience. */
export function listOpenRequests(session: RequestSession, caller: GatewayConnection | null): OpenRequest[] {
  const out: OpenRequest[] = [];
  for (const request of session.openRequests.values()) {
    if (caller) request.audience.add(caller);
    const params = { ...request.params };
    if (request.locks) params.answers = Object.fromEntries(request.locks);
    out.push({ id: request.id, method: request.method, params });
  }
  return out;
}

/** The response that settles a request's pending promise in the registry's client. */
function responseOf(id: string, outcome: ServerRequestOutcome): JSONRPCResponse {
  switch (outcome.kind) {
    case 'result':
      return { jsonrpc: JSONRPC, id, result: outcome.result };
    case 'declined':
      return { jsonrpc: JSONRPC, id, error: { code: ErrorCode.methodNotFound, message: 'declined' } };
    case 'withdrawn':
      return { jsonrpc: JSONRPC, id, error: { code: WITHDRAWN_CODE, message: 'withdrawn', data: outcome.reason } };
  }
}

/** The outcome a settling response stands for: a result, a withdrawal (ours), or else the audience's decline. */
function outcomeOf(response: JSONRPCResponse): ServerRequestOutcome {
  if (response.error === undefined) return { kind: 'result', result: response.result as Record<string, unknown> };
  if (response.error.code === WITHDRAWN_CODE)
    return { kind: 'withdrawn', reason: response.error.data as WithdrawReason };
  return { kind: 'declined' };
}
