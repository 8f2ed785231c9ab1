import { GatewayReadyPayloadSchema, ServerRequestParamsSchemas } from '@hermes/protocol-tui/wire';
import { describe, expect, it } from 'vitest';
import { defaultTicketUrl } from '../src/gateway/browser-connection.js';
import { handFrameChecks, SERVER_REQUEST_METHODS } from '../src/gateway/frame-checks.js';
import { RunsClient } from '../src/runs/runs-client.js';

describe('the browser entry without zod', () => {
  it('knows every server-request kind the wire defines, and only those', () => {
    expect([...SERVER_REQUEST_METHODS].sort()).toEqual(Object.keys(ServerRequestParamsSchemas).sort());
    for (const method of SERVER_REQUEST_METHODS) expect(handFrameChecks.isServerRequestMethod(method)).toBe(true);
    expect(handFrameChecks.isServerRequestMethod('toString')).toBe(false);
  });

  it('checks a gateway.ready payload as the schema does on the fields the client relies on', () => {
    const ready = { skin: {}, change_events: false, replay_epoch: '0123456789abcdef', heartbeat: true };
    for (const payload of [
      ready,
      { ...ready, replay_epoch: 'nothex' },
      { ...ready, heartbeat: 'yes' },
      null,
      { ...ready, replay_epoch: undefined },
    ]) {
      const handValid = handFrameChecks.readyPayloadIssue(payload) === undefined;
      expect(handValid, JSON.stringify(payload)).toBe(GatewayReadyPayloadSchema.safeParse(payload).success);
    }
  });

  it('mints tickets at the endpoint host over the matching HTTP scheme', () => {
    expect(defaultTicketUrl('ws://127.0.0.1:8642/api/ws')).toBe('http://127.0.0.1:8642/api/ws/ticket');
    expect(defaultTicketUrl('wss://hermes.example.com/api/ws')).toBe('https://hermes.example.com/api/ws/ticket');
  });

  it('calls the global fetch with globalThis as its receiver, as a browser requires', async () => {
    const original = globalThis.fetch;
    let receiver: unknown;
    globalThis.fetch = function (this: unknown) {
      receiver = this;
      return Promise.resolve(
        new Response(
          JSON.stringify({ error: { message: 'no', type: 'invalid_request_error', param: null, code: 'x' } }),
          {
            status: 404,
          },
        ),
      );
    } as typeof fetch;
    try {
      await expect(new RunsClient({ baseURL: 'http://127.0.0.1:1' }).get('run_missing')).rejects.toMatchObject({
        status: 404,
        code: 'x',
      });
      expect(receiver).toBe(globalThis);
    } finally {
      globalThis.fetch = original;
    }
  });
});
