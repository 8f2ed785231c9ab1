import { step, text } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { promptedChildGateway, sleep } from './support/client.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** 30,000 one-character deltas: about 3.5 MB of delta frames, three times the congestion bound (§1.4). */
const DELTAS = 30_000;
const answer = Array.from({ length: DELTAS }, (_, index) => String.fromCharCode(97 + (index % 26))).join('');

describe('every delta reaches a stdio client that reads (ADR 0059)', () => {
  it('a client that stops reading for a while and then reads as fast as it can gets every character of a 30,000-delta turn', async () => {
    const { gateway, client, sessionId } = await promptedChildGateway([step(text(answer, 1))], cleanups);
    // Not reading fills the pipe, then the gateway's output buffer past the congestion bound: its deltas are held.
    gateway.child.stdout.pause();
    await sleep(4_000);
    gateway.child.stdout.resume();
    const complete = await client.event('message.complete', sessionId, () => true, 60_000);
    expect(complete.payload.text).toBe(answer);
    const deltas = client.events('message.delta', sessionId);
    expect(deltas.map((event) => event.payload.text).join('')).toBe(answer);
    // Frames joined while held carry the newest seq of what they hold: seqs still rise.
    const seqs = deltas.map((event) => event.seq as number);
    expect(seqs).toEqual([...seqs].sort((left, right) => left - right));
    expect(gateway.lines.every((line) => JSON.parse(line).jsonrpc === '2.0')).toBe(true);
  }, 120_000);
});
