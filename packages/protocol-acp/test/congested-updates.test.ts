import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '@hermes/core';
import { createTestHost, step, type TestHost, text } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { createAcpAgent, serveAcp } from '../src/index.js';

// biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary message fields without narrowing each one.
type Message = Record<string, any>;

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/**
 * `serveAcp` in this process over NDJSON streams, with a client that reads the agent's output one chunk every
 * `readEveryMs` (0: as fast as it comes); runs one prompt whose answer is `answer`, one character a delta.
 */
async function promptWithReader(answer: string, readEveryMs: number): Promise<Message[]> {
  const project = await mkdtemp(join(tmpdir(), 'hermes-acp-congested-'));
  cleanups.push(() => rm(project, { recursive: true, force: true }));
  let host: TestHost | undefined;
  const agent = createAcpAgent({
    createHost: async () => {
      host = await createTestHost({ script: [step(text(answer, 1))] });
      return host;
    },
    version: '0.0.0-test',
    logger: silentLogger,
  });
  const toAgent = new TransformStream<Uint8Array, Uint8Array>();
  const fromAgent = new TransformStream<Uint8Array, Uint8Array>();
  const served = serveAcp(agent, { input: toAgent.readable, output: fromAgent.writable });
  const writer = toAgent.writable.getWriter();
  const received: Message[] = [];
  const waiters = new Set<() => void>();
  void (async () => {
    const decoder = new TextDecoder();
    let buffer = '';
    for await (const chunk of fromAgent.readable) {
      buffer += decoder.decode(chunk, { stream: true });
      for (let newline = buffer.indexOf('\n'); newline >= 0; newline = buffer.indexOf('\n')) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 1);
        received.push(JSON.parse(line) as Message);
      }
      for (const waiter of [...waiters]) waiter();
      if (readEveryMs > 0) await new Promise((resolve) => setTimeout(resolve, readEveryMs));
    }
  })();
  cleanups.push(async () => {
    await writer.close().catch(() => undefined);
    await served.catch(() => undefined);
    await host?.dispose();
  });
  const answerTo = (id: number): Promise<Message> =>
    new Promise((resolve) => {
      const check = () => {
        const found = received.find((message) => message.id === id && !('method' in message));
        if (!found) return;
        waiters.delete(check);
        resolve(found);
      };
      waiters.add(check);
      check();
    });
  const request = async (id: number, method: string, params: unknown) => {
    await writer.write(new TextEncoder().encode(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`));
    return answerTo(id);
  };
  await request(1, 'initialize', { protocolVersion: 1, clientCapabilities: {} });
  const session = await request(2, 'session/new', { cwd: project, mcpServers: [] });
  const sessionId = session.result.sessionId as string;
  const answered = await request(3, 'session/prompt', { sessionId, prompt: [{ type: 'text', text: 'go' }] });
  expect(answered.result).toMatchObject({ stopReason: 'end_turn' });
  return received.filter(
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
