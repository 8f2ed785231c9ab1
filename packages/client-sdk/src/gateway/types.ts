import type {
  EventPayload,
  EventType,
  MethodName,
  MethodParams,
  MethodResultSchemas,
  OpenRequest,
  ServerRequestParamsSchemas,
} from '@hermes/protocol-tui/wire';
import type { z } from 'zod';

/** Every [v1] gateway method name (spec §4), from the wire schemas. */
export type GatewayMethod = MethodName;

/** Params of a gateway method, from the wire schemas. */
export type GatewayMethodParams<M extends GatewayMethod> = MethodParams<M>;

/**
 * Result of a gateway method: the wire's result schema where it has one, else a plain object (every
 * result is a JSON object, spec §2.1). New result schemas in the wire are picked up automatically.
 */
export type GatewayMethodResult<M extends GatewayMethod> = M extends keyof typeof MethodResultSchemas
  ? z.output<(typeof MethodResultSchemas)[M]>
  : Record<string, unknown>;

/** Per-call options of every request. */
export interface RequestOptions {
  /** Rejects the call with `ClientError('aborted')`; the server may still carry it out (JSON-RPC has no cancel). */
  signal?: AbortSignal;
  /** Milliseconds to wait for the answer; overrides the client default; 0 waits forever. */
  timeoutMs?: number;
}

/** The arguments of a typed method: params are optional when every param is. */
export type MethodArguments<M extends GatewayMethod> =
  Record<string, never> extends GatewayMethodParams<M>
    ? [params?: GatewayMethodParams<M>, options?: RequestOptions]
    : [params: GatewayMethodParams<M>, options?: RequestOptions];

/** A typed call of one gateway method. */
export type MethodCall<M extends GatewayMethod> = (
  ...arguments_: MethodArguments<M>
) => Promise<GatewayMethodResult<M>>;

/** Every [v1] event name (spec §5.1). */
export type GatewayEventType = EventType;

/** One event as delivered to the host: the wire's envelope with its payload typed by event name. */
export interface GatewayEvent<T extends GatewayEventType = GatewayEventType> {
  /** The event name. */
  type: T;
  /** The runtime id of the session, or `""` for connection-wide events. */
  session_id: string;
  /** The typed payload. */
  payload: EventPayload<T>;
  /** Present exactly when `session_id` is not empty (spec §9.3). */
  seq?: number;
  /**
   * On a frame of deltas the gateway joined for a congested connection: the seq of the first delta it holds. The seqs
   * from it to `seq` are all in this frame (ADR 0075).
   */
  first_seq?: number;
}

/** A discriminated union of every event: narrowing on `type` narrows `payload`. */
export type AnyGatewayEvent = { [T in GatewayEventType]: GatewayEvent<T> }[GatewayEventType];

/** The kinds of server request (spec §6.4). */
export type ServerRequestMethod = keyof typeof ServerRequestParamsSchemas;

/** Params of a server request, from the wire schemas. */
export type ServerRequestParams<M extends ServerRequestMethod> = z.output<(typeof ServerRequestParamsSchemas)[M]>;

/** An approval choice (spec §6.4). */
export type ApprovalChoice = 'once' | 'session' | 'always' | 'deny';

/** Answer to an `approval` request. A missing or unknown choice counts as `deny`. */
export interface ApprovalAnswer {
  choice: ApprovalChoice;
  /** Apply the same choice to every other pending approval of the session. */
  all?: boolean;
}

/** Answer to a `clarify` request: `answer` for one question, `answers` by `qid` for a batch; `""` skips. */
export interface ClarifyAnswer {
  answer?: string | string[];
  answers?: Record<string, string | string[] | null>;
}

/** Answer to a `sudo` or `secret` request; `""` declines. */
export interface ValueAnswer {
  value: string;
}

/** The answer each server request expects. */
export interface ServerRequestAnswers {
  approval: ApprovalAnswer;
  clarify: ClarifyAnswer;
  sudo: ValueAnswer;
  secret: ValueAnswer;
}

/** What a handler receives besides the params. */
export interface ServerRequestContext {
  /** The `srq-` id; stays the same when the request is re-delivered after a reconnect. */
  id: string;
  /** Fires when the server withdraws the request (`request.cancel`) or the client closes. */
  signal: AbortSignal;
  /** True when this delivery came from `open_requests` after a (re)attach rather than a live frame. */
  redelivered: boolean;
}

/** A host's handler for one kind of server request. */
export type ServerRequestHandler<M extends ServerRequestMethod> = (
  params: ServerRequestParams<M>,
  context: ServerRequestContext,
) => ServerRequestAnswers[M] | Promise<ServerRequestAnswers[M]>;

/** Handlers by kind; a kind left out is declined at once with `-32601` (spec §6.4 client obligations). */
export type ServerRequestHandlers = { [M in ServerRequestMethod]?: ServerRequestHandler<M> };

/** An open server request as listed by snapshots. */
export type { OpenRequest };

/** The connection state of a {@link GatewayClient}. */
export type ConnectionState = 'connecting' | 'connected' | 'reconnecting' | 'closed';
