import { EventEnvelopeSchema } from '@hermes/protocol-tui/wire';
import { afterEach, describe, expect, it } from 'vitest';
import { isEventEnvelope } from '../src/gateway/gateway-client.js';
import { type ClientError, GatewayClient } from '../src/index.js';

let client: GatewayClient | null = null;
afterEach(async () => {
  await client?.close();
  client = null;
});

const base = { type: 'message.delta', session_id: 's1', payload: { text: 'x' } };

describe('the event envelope check', () => {
  it('accepts exactly what EventEnvelopeSchema accepts', () => {
    const cases: unknown[] = [
      base,
      { ...base, seq: 3 },
      { ...base, session_id: '' },
      { ...base, payload: {} },
      { ...base, payload: Object.create(null) },
      { ...base, extra: true },
      { ...base, seq: 1.5 },
      { ...base, seq: null },
      { ...base, seq: '3' },
      { ...base, type: 7 },
      { session_id: 's1', payload: {} },
      { ...base, session_id: undefined },
      { ...base, payload: [] },
      { ...base, payload: null },
      { ...base, payload: 'text' },
      { ...base, payload: new Date(0) },
      [],
      null,
      'event',
      42,
    ];
    for (const params of cases)
      expect(isEventEnvelope(params), JSON.stringify(params)).toBe(EventEnvelopeSchema.safeParse(params).success);
  });

  it('reports an invalid envelope from a real gateway process as a protocol error and keeps reading', async () => {
    // A stand-in gateway in a child process: `gateway.ready`, `{}` to every request, and after the second request
    // three malformed events, then a valid one.
    const frame = (params: unknown) => JSON.stringify({ jsonrpc: '2.0', method: 'event', params });
    const ready = frame({
      type: 'gateway.ready',
      session_id: '',
      payload: { skin: {}, change_events: false, replay_epoch: '0123456789abcdef', heartbeat: false },
    });
    const events = [
      { ...base, payload: [] },
      { ...base, seq: 1.5 },
      { session_id: '', payload: {} },
      { type: 'custom.after', session_id: '', payload: { n: 1 } },
    ].map(frame);
    const script = `
      const NL = String.fromCharCode(10);
      const events = ${JSON.stringify(events)};
      process.stdout.write(${JSON.stringify(ready)} + NL);
      let buffer = '';
      let requests = 0;
      process.stdin.setEncoding('utf8').on('data', (chunk) => {
        buffer += chunk;
        for (let end = buffer.indexOf(NL); end >= 0; end = buffer.indexOf(NL)) {
          const message = JSON.parse(buffer.slice(0, end));
          buffer = buffer.slice(end + 1);
          if (message.id === undefined) continue;
          process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: message.id, result: {} }) + NL);
          requests += 1;
          if (requests === 2) for (const event of events) process.stdout.write(event + NL);
        }
      });`;
    const errors: ClientError[] = [];
    const after: unknown[] = [];
    client = await GatewayClient.connect({
      connection: { command: process.execPath, args: ['-e', script] },
      reconnect: false,
      onProtocolError: (error) => errors.push(error),
    });
    client.on('*', (event) => {
      if (event.type !== 'gateway.ready') after.push(event);
    });
    await client.call('session.list', {});
    for (let wait = 0; wait < 500 && after.length === 0; wait += 1)
      await new Promise((resolve) => setTimeout(resolve, 10));
    expect(after).toEqual([{ type: 'custom.after', session_id: '', payload: { n: 1 } }]);
    expect(errors.map((error) => [error.code, error.message])).toEqual(
      Array.from({ length: 3 }, () => ['protocol_error', 'an event with an invalid envelope']),
    );
    expect(errors.every((error) => error.cause !== undefined)).toBe(true);
  });
});
