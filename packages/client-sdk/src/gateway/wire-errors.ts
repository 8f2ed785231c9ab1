import { ClientError } from '../errors.js';
import type { OpenedConnection } from './opened-connection.js';

/** An HTTP status in the error a WebSocket library reports when the server answers the upgrade with one. */
const UPGRADE_STATUS = /Unexpected server response: (\d{3})/;

/**
 * Why a wire ended before the gateway was ready, named as precisely as the wire allows: a rejected token (close 4401)
 * or a forbidden client (4403) is `unauthorized`; a connection that never opened (`ECONNREFUSED`, a command that did
 * not start) is `connection_refused` with the system's error as `cause`; anything else is `connection_closed` with
 * the close code.
 */
export function wireEndedError(opened: OpenedConnection, cause?: unknown): ClientError {
  const code = opened.closeCode();
  const reason = opened.closeReason?.() ?? '';
  const because = reason === '' ? '' : `: ${reason}`;
  if (code === 4401)
    return new ClientError('unauthorized', `the gateway rejected the token (close code 4401${because})`, { cause });
  if (code === 4403)
    return new ClientError('unauthorized', `the gateway refused this client (close code 4403${because})`, { cause });
  const failure = opened.failure?.();
  if (failure) {
    const status = UPGRADE_STATUS.exec(failure.message)?.[1];
    if (status === '401' || status === '403')
      return new ClientError('unauthorized', `the gateway refused the connection (HTTP ${status})`, { cause: failure });
    const what = opened.kind === 'stdio' ? 'could not start the gateway command' : 'could not connect to the gateway';
    return new ClientError('connection_refused', `${what}: ${failure.message}`, { cause: failure });
  }
  return new ClientError(
    'connection_closed',
    `the connection ended before gateway.ready${code === undefined ? '' : ` (close code ${code})`}`,
    { cause },
  );
}
