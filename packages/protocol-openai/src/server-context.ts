import type { Agent, AgentHost, ApprovalRequest, BornRun, LiveSessionHub, RunBus, StoredMessage } from '@hermes/core';
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

/** A pending approval of a run or a chat completion, as the HTTP API lists and answers it. */
export interface PendingApproval {
  request: ApprovalRequest;
  requestedAt: number;
  /** Answers it through the host's live-session hub, where every surface's answer goes (ADR 0053). */
  resolve(choice: 'once' | 'session' | 'always' | 'deny'): void;
}

/**
 * The approvals one run (or chat completion id) asked for, never keyed by session (spec §19.7). The approvals
 * themselves wait in the host's live-session hub, which any surface may answer (a gateway client attached to the
 * session, this API's approval endpoint): the queue only remembers which are this run's and when they were asked.
 */
export class ApprovalQueue {
  asked = false;
  settled = false;
  settledAt = 0;
  private readonly asks: PendingApproval[] = [];

  constructor(private readonly hub: LiveSessionHub) {}

  /** The approvals of this queue still waiting, oldest first. */
  get pending(): PendingApproval[] {
    return this.asks.filter((entry) => this.hub.approval(entry.request.requestId) !== undefined);
  }

  /** Remembers an approval the run asked for. */
  track(request: ApprovalRequest): () => void {
    const entry: PendingApproval = {
      request,
      requestedAt: Date.now(),
      resolve: (choice) => void this.hub.answerApproval(request.requestId, choice),
    };
    this.asks.push(entry);
    return () => {
      const index = this.asks.indexOf(entry);
      if (index >= 0) this.asks.splice(index, 1);
    };
  }
}

/** Every approval queue of this process. */
export class ApprovalRegistry {
  readonly queues = new Map<string, ApprovalQueue>();

  constructor(private readonly hub: LiveSessionHub) {}

  /** Creates the queue of a run or a completion id. */
  open(id: string): ApprovalQueue {
    const queue = new ApprovalQueue(this.hub);
    this.queues.set(id, queue);
    return queue;
  }

  /**
   * An approve callback for a surface whose client answers later (the runs API's endpoint, a chat stream's
   * `approval.request` frame): it reports each request with `onRequest` and leaves the answer to the hub, where the core
   * holds the request until a surface answers it, its timeout or the turn's abort. The callback's own promise only ends
   * with that abort.
   */
  callback(queue: ApprovalQueue, onRequest: (request: ApprovalRequest) => void) {
    return (request: ApprovalRequest, signal: AbortSignal) =>
      new Promise<never>((_resolve, reject) => {
        queue.asked = true;
        const forget = queue.track(request);
        signal.addEventListener(
          'abort',
          () => {
            forget();
            reject(signal.reason);
          },
          { once: true },
        );
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
export async function agentForSession(
  host: AgentHost,
  sessionId: string,
  create = true,
  run?: BornRun,
): Promise<Agent> {
  // By id only, and a session created here is not read back (issue 34.3); another request (here or on another
  // instance) creating the same new session a moment ago is no error: this one uses it, and its turn waits on that
  // turn's lease (spec §13.3) instead of failing with a 500. A run's row is written with its new session (ADR 0088).
  const agent = await host.openSession(
    sessionId,
    create ? { create: { source: 'api_server', ...(run ? { run } : {}) } } : {},
  );
  if (!agent) throw new ApiError(404, 'session_not_found', `Session not found: ${sessionId}`);
  return agent;
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
