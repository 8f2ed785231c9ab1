import type { ServerRequestMethod } from './types.js';

/**
 * How the client checks the frames it is sent. Node checks them with the wire's zod schemas; the browser entry checks
 * their shape by hand, because zod alone is larger than the browser client's size budget (ADR 0044). Either way a
 * frame that fails is reported to `onProtocolError` and still delivered when usable.
 */
export interface FrameChecks {
  /** What is wrong with an event envelope that failed the hand check. */
  envelopeIssue(params: unknown): unknown;
  /** What is wrong with a `gateway.ready` payload, or undefined when it is valid. */
  readyPayloadIssue(payload: unknown): unknown;
  /** What is wrong with a server request's params, or undefined when they are valid. */
  serverRequestIssue(method: ServerRequestMethod, params: unknown): unknown;
  /** Whether `method` names a server-request kind the protocol defines. */
  isServerRequestMethod(method: string): method is ServerRequestMethod;
}

/** The server-request kinds of the protocol (spec §6); a test keeps this list equal to the wire's schemas. */
export const SERVER_REQUEST_METHODS = [
  'approval',
  'clarify',
  'sudo',
  'secret',
] as const satisfies readonly ServerRequestMethod[];

/** Shape checks by hand, without zod: the fields the client itself relies on. */
export const handFrameChecks: FrameChecks = {
  envelopeIssue: () => 'an event envelope needs a string type and session_id, an object payload and an integer seq',
  readyPayloadIssue(payload) {
    const ready = payload as { replay_epoch?: unknown; heartbeat?: unknown } | null;
    if (typeof ready !== 'object' || ready === null) return 'the payload is not an object';
    if (typeof ready.replay_epoch !== 'string' || !/^[0-9a-f]{16}$/.test(ready.replay_epoch))
      return 'replay_epoch is not 16 hex digits';
    if (typeof ready.heartbeat !== 'boolean') return 'heartbeat is not a boolean';
    return undefined;
  },
  serverRequestIssue(_method, params) {
    const request = params as { session_id?: unknown } | null;
    if (typeof request !== 'object' || request === null) return 'the params are not an object';
    if (typeof request.session_id !== 'string') return 'session_id is not a string';
    return undefined;
  },
  isServerRequestMethod: (method): method is ServerRequestMethod =>
    (SERVER_REQUEST_METHODS as readonly string[]).includes(method),
};
