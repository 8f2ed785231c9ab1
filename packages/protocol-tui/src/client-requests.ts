import type { ClientRequest, ClientRequestMethod } from '@hermes/core';
import type { RequestSession, ServerRequestRegistry } from './server-requests.js';

/** The server requests a tool raises through `HostCallbacks.clientRequest` (§6.4, issue 16.6). */
export const CLIENT_REQUEST_METHODS: readonly ClientRequestMethod[] = [
  'terminal.read',
  'window.read',
  'preview.act',
  'tour',
  'vault.code',
  'vault.unlock_prompt',
  'connection',
];

/**
 * Sends a tool's request to the session's eligible connections (§6.1) and resolves with the first
 * result. A request no connection can answer — none eligible, or every one answered an error such
 * as `-32601` — rejects at once, so the tool fails fast with that reason instead of waiting out
 * the timeout. A withdrawal (interrupt, close, timeout, shutdown) rejects with its reason.
 */
export async function raiseClientRequest(
  registry: ServerRequestRegistry,
  session: RequestSession,
  request: ClientRequest,
  signal: AbortSignal,
  timeoutMs: number,
): Promise<Record<string, unknown>> {
  const outcome = await registry.raise(session, request.method, request.params, { signal, timeoutMs });
  if (outcome.kind === 'declined') throw new Error(`no attached client can answer ${request.method} requests`);
  if (outcome.kind === 'withdrawn') throw new Error(`the ${request.method} request was withdrawn (${outcome.reason})`);
  return outcome.result;
}
