import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { runCleanups, spawnHermes } from './support/hermes-process.js';

afterEach(runCleanups);

describe('hermes gateway --ws', () => {
  it('answers an upgrade to a path it does not serve with 404 and closes the socket', async () => {
    const { stderr } = spawnHermes(
      ['gateway', '--ws', '--port', '0'],
      { prefix: 'hermes-gateway-ws-', env: { HERMES_MODEL: 'custom:scripted' } },
      () => {},
    );
    let port = 0;
    for (let attempt = 0; attempt < 600 && port === 0; attempt += 1) {
      port = Number(/gateway listening ws:\/\/127\.0\.0\.1:(\d+)\//.exec(stderr())?.[1] ?? 0);
      if (port === 0) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(port).toBeGreaterThan(0);
    const socket = connect({ port, host: '127.0.0.1' });
    let received = '';
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString();
    });
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    await new Promise((resolve) => socket.once('connect', resolve));
    // The client keeps its side open: only the server can end the connection.
    socket.write(
      `GET /elsewhere HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
    );
    await closed;
    expect(received).toMatch(/^HTTP\/1\.1 404 Not Found\r\n/);
    expect(JSON.parse(received.slice(received.indexOf('\r\n\r\n') + 4))).toMatchObject({
      error: { code: 'not_found' },
    });
  }, 60_000);
});
