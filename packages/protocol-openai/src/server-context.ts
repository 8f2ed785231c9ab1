import type { Agent, AgentHost, ApprovalRequest, RunBus, StoredMessage } from '@hermes/core';
import { HermesError } from '@hermes/core';
import type { Context } from 'hono';
import { ApiError } from './http-error.js';
import { isValidSessionKey } from './normalize-input.js';
import type { ApiServerSettings } from './settings.js';
import type { TurnAdmission } from './turn-admission.js';

/** Shared state of one application instance. */
export interface ServerContext {
  host: AgentHost;
  settings: ApiServerSettings;
  admission: TurnAdmission;
  approvals: ApprovalRegistry;
  /** Unix milliseconds of the app's creation, advertised as `created` of models. */
  startedAt: number;
  metrics: { requests: number; turns: number; errors: number };
  keepaliveMs: number;
  /** Live run-event subscribers, for `/health/detailed`. */
  runEventSubscribers: () => number;
  /** Run events, control requests and owner liveness shared with the other instances (ADR 0018). */
  bus: RunBus;
  /** How long a control request forwarded to another instance waits for its answer. */
  controlTimeoutMs: number;
}

/** A pending approval held for a client answer. */
export interface PendingApproval {
  request: ApprovalRequest;
  requestedAt: number;
  resolve(choice: 'once' | 'session' | 'always' | 'deny'): void;
}

/** Approval queues keyed by run id (or chat completion id), never by session (spec §19.7). */
export class ApprovalQueue {
  readonly pending: PendingApproval[] = [];
  asked = false;
  settled = false;
  settledAt = 0;
}

/** Every approval queue of this process. */
export class ApprovalRegistry {
  readonly queues = new Map<string, ApprovalQueue>();

  /** Creates the queue of a run or a completion id. */
  open(id: string): ApprovalQueue {
    const queue = new ApprovalQueue();
    this.queues.set(id, queue);
    return queue;
  }

  /**
   * An approve callback that parks each request in `queue` until a client answers; `onRequest` reports it to the
   * surface. The core's timeout and the turn's abort settle it otherwise.
   */
  callback(queue: ApprovalQueue, onRequest: (request: ApprovalRequest) => void) {
    return (request: ApprovalRequest, signal: AbortSignal) =>
      new Promise<'once' | 'session' | 'always' | 'deny'>((resolve, reject) => {
        queue.asked = true;
        const entry: PendingApproval = {
          request,
          requestedAt: Date.now(),
          resolve: (choice) => {
            remove();
            resolve(choice);
          },
        };
        const remove = () => {
          const index = queue.pending.indexOf(entry);
          if (index >= 0) queue.pending.splice(index, 1);
        };
        signal.addEventListener(
          'abort',
          () => {
            remove();
            reject(signal.reason);
          },
          { once: true },
        );
        queue.pending.push(entry);
        onRequest(request);
      });
  }
}

/** Reads the body as JSON whatever its content type; an empty body is `{}` (spec §0.5). */
export async function readJsonBody(context: Context): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await context.req.text();
  } catch (error) {
    if (ApiError.isInstance(error)) throw error;
    throw new ApiError(400, 'invalid_json', 'The request body could not be read.');
  }
  if (text.trim() === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ApiError(400, 'invalid_json', 'The request body is not valid JSON.');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new ApiError(400, 'invalid_json', 'The request body must be a JSON object.');
  return parsed as Record<string, unknown>;
}

/** Validates `X-Hermes-Session-Key` and returns it (spec §9.2). */
export function sessionKeyHeader(context: Context): string | undefined {
  const value = context.req.header('X-Hermes-Session-Key');
  if (value === undefined) return undefined;
  if (!isValidSessionKey(value))
    throw new ApiError(400, 'invalid_session_key', 'Invalid X-Hermes-Session-Key.', { param: 'X-Hermes-Session-Key' });
  return value;
}

/** The live agent of a stored session, creating the session row (source `api_server`) when it is missing. */
export async function agentForSession(host: AgentHost, sessionId: string, create = true): Promise<Agent> {
  const live = host.getAgent(sessionId);
  if (live) return live;
  const row = await host.store.getSession(sessionId);
  if (!row) {
    if (!create) throw new ApiError(404, 'session_not_found', `Session not found: ${sessionId}`);
    try {
      await host.store.createSession({ id: sessionId, source: 'api_server' });
    } catch (error) {
      // Another request (here or on another instance) created the same new session a moment ago: this one uses it,
      // and its turn waits on that turn's lease (spec §13.3) instead of failing with a 500.
      if (!(HermesError.isInstance(error) && error.code === 'session_exists')) throw error;
    }
  }
  return host.resumeSession(sessionId);
}

/** A stored row as it is re-appended to another session. */
export function copyRow(row: StoredMessage, turnId: string | null) {
  return {
    turnId: row.turnId ?? turnId,
    role: row.role,
    content: row.content,
    contentParts: row.contentParts,
    toolCalls: row.toolCalls,
    toolCallId: row.toolCallId,
    toolName: row.toolName,
    reasoning: row.reasoning,
    finishReason: row.finishReason,
    displayKind: row.displayKind,
    displayMetadata: row.displayMetadata,
  };
}

/** The abort reason the core reads its interrupt issuer from. */
export function interruptReason(issuer: string, reason: string): { issuer: string; reason: string } {
  return { issuer, reason };
}
