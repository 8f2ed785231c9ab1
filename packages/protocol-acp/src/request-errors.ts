import { RequestError } from '@agentclientprotocol/sdk/unstable';
import { importedCore } from './core-module.js';

/** Hint added to errors caused by a broken configuration (spec/acp.md §2.4). */
export const CHECK_HINT = 'Run `hermes acp --check` for details.';

/**
 * Maps an error raised by the core outside a turn to the JSON-RPC error of spec/acp.md §16.
 * Request errors pass through unchanged.
 */
export function toRequestError(error: unknown): RequestError {
  if (error instanceof RequestError) return error;
  if (importedCore()?.HermesError.isInstance(error)) {
    const message = firstLine(error.message);
    switch (error.code) {
      case 'session_not_found':
        return new RequestError(-32002, message, { code: error.code });
      case 'missing_credentials':
        return RequestError.authRequired({ code: error.code }, message);
      case 'invalid_input':
      case 'invalid_model_spec':
      case 'unknown_provider':
        return RequestError.invalidParams({ code: error.code }, message);
      case 'config_invalid':
        return new RequestError(-32603, `${message} ${CHECK_HINT}`, { code: error.code });
      default:
        return new RequestError(-32603, message, { code: error.code });
    }
  }
  const message = error instanceof Error ? error.message : String(error);
  return new RequestError(-32603, firstLine(message));
}

/** Error messages on the wire are one readable line (spec/acp.md §16). */
export function firstLine(text: string): string {
  return (text.split('\n')[0] ?? '').trim() || 'Internal error';
}

/** True for the errors an abort produces in the core, the provider client, tools or the SDK. */
export function isAbortError(error: unknown): boolean {
  if (error instanceof RequestError) return error.code === -32800;
  if (error instanceof Error) return error.name === 'AbortError' || error.name === 'TimeoutError';
  return false;
}
