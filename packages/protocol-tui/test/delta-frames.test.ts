import { step, text } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import * as ws from 'ws';
import { textMessages } from '../src/websocket-endpoint.js';
import { createWebSocketFixture, promptedChildGateway } from './support/client.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** ws's own framing of one outbound message (its `Sender`, which @types/ws does not declare). */
const { Sender } = ws as unknown as {
  Sender: {
    frame(
      data: Buffer,
      options: { fin: boolean; opcode: number; mask: boolean; readOnly: boolean; rsv1: boolean },
    ): Buffer[];
  };
};

/** 3,000 one-character deltas with characters JSON escapes or writes as more than one byte. */
const PIECES = ['a', '"', '\\', '\n', 'é', '\u2028', '<', '\t', 'z', '中'];
const answer = Array.from({ length: 3_000 }, (_, index) => PIECES[index % PIECES.length]).join('');

/** What `JSON.stringify` writes for the frame a raw delta line parses to, keys in the order the spec lists them. */
function canonical(raw: string): string {
  const frame = JSON.parse(raw) as {
    params: { type: string; session_id: string; payload: { text: string }; seq: number };
  };
  const { type, session_id, payload, seq } = frame.params;
  return JSON.stringify({
    jsonrpc: '2.0',
    method: 'event',
    params: { type, session_id, payload: { text: payload.text }, seq },
  });
}

function isDeltaText(raw: string): boolean {
  return raw.includes('"method":"event"') && raw.includes('"type":"message.delta"');
}

describe('delta frames written without encoding a frame object per delta (ADR 0071)', () => {
  it('frames WebSocket text messages byte for byte as ws does, at every length boundary and for multi-byte text', () => {
    const texts = [
      '',
      'x',
      'é中',
      'a'.repeat(125),
      'a'.repeat(126),
      'é'.repeat(40_000),
      'b'.repeat(65_535),
      'c'.repeat(65_536),
      'd'.repeat(70_001),
    ];
    const expected = Buffer.concat(
      texts.flatMap((item) =>
        Sender.frame(Buffer.from(item), { fin: true, opcode: 1, mask: false, readOnly: false, rsv1: false }),
      ),
    );
    expect(textMessages(texts).equals(expected)).toBe(true);
  });

  it('stdio: every delta line is the JSON of its frame, the text whole and the seqs rising', async () => {
    const { gateway, client, sessionId } = await promptedChildGateway([step(text(answer, 1))], cleanups);
    const complete = await client.event('message.complete', sessionId, () => true, 60_000);
    expect(complete.payload.text).toBe(answer);
    const lines = gateway.lines.filter(isDeltaText);
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(line).toBe(canonical(line));
    const deltas = client.events('message.delta', sessionId);
    expect(deltas.map((event) => event.payload.text).join('')).toBe(answer);
    const seqs = deltas.map((event) => event.seq as number);
    expect(seqs).toEqual([...seqs].sort((left, right) => left - right));
  }, 120_000);

  it('WebSocket: every delta arrives as a message of its own, the JSON of its frame, in order', async () => {
    const fixture = await createWebSocketFixture({ script: [step(text(answer, 1))] });
    cleanups.push(() => fixture.dispose());
    const client = await fixture.open();
    const raw: string[] = [];
    client.socket.on('message', (data) => raw.push(String(data)));
    const created = await client.result('session.create', {});
    await client.result('prompt.submit', { session_id: created.session_id, text: 'go' });
    const complete = await client.event('message.complete', created.session_id, () => true, 60_000);
    expect(complete.payload.text).toBe(answer);
    const deltas = raw.filter(isDeltaText);
    expect(
      deltas
        .map((message) => (JSON.parse(message) as { params: { payload: { text: string } } }).params.payload.text)
        .join(''),
    ).toBe(answer);
    for (const message of deltas) expect(message).toBe(canonical(message));
    const seqs = deltas.map((message) => (JSON.parse(message) as { params: { seq: number } }).params.seq);
    expect(seqs).toEqual([...seqs].sort((left, right) => left - right));
    // A control frame after the deltas still comes through the same socket in its place.
    const pong = client.waitFor((frame) => frame.id === 'ping-after', 10_000);
    client.send({ jsonrpc: '2.0', id: 'ping-after', method: 'gateway.ping', params: {} });
    expect(await pong).toEqual({ jsonrpc: '2.0', id: 'ping-after', result: { pong: true } });
  }, 120_000);
});
