import type { GatewayConnection } from '../connection.js';
import type { GatewayState } from '../gateway-state.js';
import type { LiveSession } from '../live-session.js';
import { ErrorCode, RpcError } from '../wire/index.js';

/**
 * What a method handler receives. The gateway's state, never its dispatcher: handlers sit below the
 * method table and the routing that calls them.
 */
export interface MethodContext {
  gateway: GatewayState;
  /** The caller. */
  connection: GatewayConnection;
  params: Record<string, unknown>;
  /** Runs `fn` right after the response is written (§2.5: responses precede the events they cause). */
  after: (fn: () => void) => void;
}

/** A method handler: a result object, or a thrown `RpcError`. */
export type MethodHandler = (context: MethodContext) => Promise<Record<string, unknown>> | Record<string, unknown>;

/** The live session named by `params.session_id`, or `4001` (§2.4). */
export function requireSession(context: MethodContext): LiveSession {
  const id = context.params.session_id;
  const session = typeof id === 'string' ? context.gateway.sessions.get(id) : undefined;
  if (!session || session.finalized) throw new RpcError(ErrorCode.sessionNotFound, 'session not found');
  session.lastActive = Date.now();
  return session;
}

/** A string parameter, or undefined for absent or mistyped values (§2.3 step 10). */
export function stringParam(params: Record<string, unknown>, key: string): string | undefined {
  const value = params[key];
  return typeof value === 'string' ? value : undefined;
}

/** A boolean parameter, or undefined. */
export function booleanParam(params: Record<string, unknown>, key: string): boolean | undefined {
  const value = params[key];
  return typeof value === 'boolean' ? value : undefined;
}

/** An integer parameter (JSON booleans are never integers), or undefined. */
export function integerParam(params: Record<string, unknown>, key: string): number | undefined {
  const value = params[key];
  return typeof value === 'number' && Number.isInteger(value) ? value : undefined;
}

/** Shorthand for throwing an `RpcError`. */
export function fail(code: number, message: string, data?: unknown): never {
  throw new RpcError(code, message, data);
}
