import { createServer } from 'node:http';
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { DEFAULT_HTTP_TIMEOUTS, hardenHttpServer, httpServerOptions, resolveHttpTimeouts } from './http-hardening.js';

function hostWith(section: Record<string, unknown>) {
  return { configSection: () => section };
}

describe('HTTP timeouts', () => {
  it('reads seconds from api_server, keeps the defaults for absent or bad values, and allows only the ping to be 0', () => {
    expect(resolveHttpTimeouts(hostWith({}))).toEqual(DEFAULT_HTTP_TIMEOUTS);
    const timeouts = resolveHttpTimeouts(
      hostWith({
        headers_timeout_s: 2,
        request_timeout_s: '3',
        keep_alive_timeout_s: 0.5,
        idle_timeout_s: 0,
        upgrade_timeout_s: 'soon',
        ws_ping_interval_s: 0,
      }),
    );
    expect(timeouts).toEqual({
      headersTimeoutMs: 2000,
      requestTimeoutMs: 3000,
      keepAliveTimeoutMs: 500,
      idleTimeoutMs: DEFAULT_HTTP_TIMEOUTS.idleTimeoutMs,
      upgradeTimeoutMs: DEFAULT_HTTP_TIMEOUTS.upgradeTimeoutMs,
      pingIntervalMs: 0,
    });
  });

  it('never lets the header timeout exceed the request timeout, and checks often enough for short timeouts', () => {
    const timeouts = resolveHttpTimeouts(hostWith({ headers_timeout_s: 90, request_timeout_s: 1 }));
    expect(timeouts.headersTimeoutMs).toBe(1000);
    expect(httpServerOptions(timeouts)).toMatchObject({
      headersTimeout: 1000,
      requestTimeout: 1000,
      connectionsCheckingInterval: 250,
    });
    expect(httpServerOptions(DEFAULT_HTTP_TIMEOUTS).connectionsCheckingInterval).toBe(5000);
  });
});

describe('a connection that never sends a byte', () => {
  it('is closed without an answer when the header timeout meets it before the idle timeout', async () => {
    const timeouts = { ...DEFAULT_HTTP_TIMEOUTS, headersTimeoutMs: 300, requestTimeoutMs: 300, idleTimeoutMs: 60_000 };
    const server = createServer(httpServerOptions(timeouts), (_request, response) => response.end('ok'));
    hardenHttpServer(server, timeouts);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as { port: number };
      const socket = connect(port, '127.0.0.1');
      let received = '';
      socket.on('data', (chunk) => {
        received += chunk.toString();
      });
      await new Promise((resolve) => socket.on('close', resolve));
      expect(received).toBe('');
    } finally {
      server.close();
    }
  }, 30_000);
});
