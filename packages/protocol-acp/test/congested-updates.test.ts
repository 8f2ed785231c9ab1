import { step, text } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { inProcessAgent, type Message } from './in-process-agent.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** One prompt whose answer is `answer`, one character a delta, to a client reading every `readEveryMs`. */
async function promptWithReader(answer: string, readEveryMs: number): Promise<Message[]> {
  const run = await inProcessAgent(cleanups, { host: { script: [step(text(answer, 1))] }, readEveryMs });
  const answered = await run.request('session/prompt', {
    sessionId: run.sessionId,
    prompt: [{ type: 'text', text: 'go' }],
  });
  expect(answered).toMatchObject({ stopReason: 'end_turn' });
  return run.received.filter(
    (message) => message.method === 'session/update' && message.params.update.sessionUpdate === 'agent_message_chunk',
  );
}

describe('session updates to a client that lags (ADR 0025)', () => {
  it('a client that keeps up gets each delta as its own chunk', async () => {
    const answer = 'abcdefghij'.repeat(20);
    const chunks = await promptWithReader(answer, 0);
    expect(chunks.map((chunk) => chunk.params.update.content.text)).toEqual([...answer]);
  });

  it('a client that lags gets the same text, in order, in fewer and longer chunks, while the output is congested', async () => {
    // 30,000 deltas are about 4.5 MB of notifications: well over the 1 MiB the sink queues before it holds writers.
    const answer = Array.from({ length: 30_000 }, (_, index) => String.fromCharCode(97 + (index % 26))).join('');
    const chunks = await promptWithReader(answer, 5);
    expect(chunks.map((chunk) => chunk.params.update.content.text).join('')).toBe(answer);
    expect(chunks.length).toBeLessThan(answer.length);
    expect(chunks.some((chunk) => chunk.params.update.content.text.length > 1)).toBe(true);
    for (const chunk of chunks) {
      expect(Object.keys(chunk.params.update).sort()).toEqual(['content', 'messageId', 'sessionUpdate']);
      expect(chunk.params.update.content.type).toBe('text');
    }
  }, 30_000);
});
