import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type AgentHost, createAgentHost } from '../../src/agent/host.js';
import type { AgentEvent } from '../../src/events.js';
import { silentLogger } from '../../src/logger.js';
import {
  collectTurn,
  createTestHost,
  type ModelScript,
  type ScriptedServer,
  startScriptedOpenAIServer,
  step,
  type TestHost,
  text,
  toolCall,
} from '../../src/testing/index.js';
import { useCleanups } from '../support/cleanups.js';
import { assertTurnInvariants, typesOf } from './helpers.js';

const { cleanups, temp } = useCleanups();

async function serverHost(script: ModelScript, cwd: string): Promise<{ host: AgentHost; server: ScriptedServer }> {
  const server = await startScriptedOpenAIServer({ script, apiKey: 'test-key' });
  cleanups.push(() => server.close());
  const host = await createAgentHost({
    homeDir: temp('hermes-home-'),
    env: {
      HERMES_MODEL: 'custom:scripted',
      HERMES_BASE_URL: server.baseURL,
      HERMES_API_KEY: 'test-key',
      OPENAI_API_KEY: 'sk-should-never-leak-1234',
    },
    connectMcp: false,
    logger: silentLogger,
  });
  cleanups.push(() => host.close());
  void cwd;
  return { host, server };
}

function tourScript(): ModelScript {
  return [
    step(
      text('Reading both files.'),
      toolCall('read_file', { path: 'a.txt' }, 'call_1'),
      toolCall('read_file', { path: 'b.txt' }, 'call_2'),
    ),
    step(toolCall('write_file', { path: 'c.txt', content: 'A and B\n' }, 'call_3')),
    step(text('Wrote c.txt from a.txt and b.txt.')),
  ];
}

function workspace(): string {
  const dir = temp('hermes-ws-');
  writeFileSync(join(dir, 'a.txt'), 'A\n');
  writeFileSync(join(dir, 'b.txt'), 'B\n');
  return dir;
}

function shape(events: AgentEvent[]): string[] {
  return typesOf(events).filter((type) => type !== 'message.delta');
}

describe('end to end through the custom provider over HTTP', () => {
  it('runs a multi-step tool-using turn through @ai-sdk/openai-compatible against the scripted server', async () => {
    const cwd = workspace();
    const { host, server } = await serverHost(tourScript(), cwd);
    const agent = await host.newSession({ cwd });
    const { events, result } = await collectTurn(agent.runTurn({ text: 'combine the files' }));
    expect(result.outcome).toBe('completed');
    expect(result.finalText).toBe('Wrote c.txt from a.txt and b.txt.');
    expect(result.iterations).toBe(3);
    assertTurnInvariants(events);
    expect(server.requests.filter((request) => request.path === '/v1/chat/completions')).toHaveLength(3);
    for (const request of server.requests) {
      expect(request.headers.authorization).toBe('Bearer test-key');
      expect(JSON.stringify(request.headers)).not.toContain('sk-should-never-leak');
    }
    const usage = events.filter((event) => event.type === 'usage');
    expect(usage).toHaveLength(3);
  });

  it('model stream calls go out through node:http unless the host was given a fetch, which then carries them all (ADR 0026)', async () => {
    const cwd = workspace();
    // The stream calls a fetch carried (a title request, which does not stream, may go through fetch either way).
    const seen: string[] = [];
    const original = globalThis.fetch;
    const counting: typeof globalThis.fetch = (input, init) => {
      const url = String(input instanceof Request ? input.url : input);
      if (typeof init?.body === 'string' && init.body.includes('"stream":true')) seen.push(url);
      return original(input, init);
    };
    globalThis.fetch = counting;
    try {
      const { host } = await serverHost(tourScript(), cwd);
      const agent = await host.newSession({ cwd });
      const { result } = await collectTurn(agent.runTurn({ text: 'combine the files' }));
      expect(result.outcome).toBe('completed');
      expect(seen).toEqual([]);
    } finally {
      globalThis.fetch = original;
    }

    const server = await startScriptedOpenAIServer({ script: tourScript(), apiKey: 'test-key' });
    cleanups.push(() => server.close());
    const host = await createAgentHost({
      homeDir: temp('hermes-home-'),
      env: { HERMES_MODEL: 'custom:scripted', HERMES_BASE_URL: server.baseURL, HERMES_API_KEY: 'test-key' },
      connectMcp: false,
      logger: silentLogger,
      fetch: counting,
    });
    cleanups.push(() => host.close());
    const agent = await host.newSession({ cwd: workspace() });
    const { result } = await collectTurn(agent.runTurn({ text: 'combine the files' }));
    expect(result.finalText).toBe('Wrote c.txt from a.txt and b.txt.');
    expect(seen).toEqual(Array.from({ length: 3 }, () => `${server.baseURL}/chat/completions`));
  });

  it('a long answer arrives in batches of parts (ADR 0024): every delta in order, and none after an interrupt raised by one', async () => {
    const { host } = await serverHost(
      [step(text('abcdefghij'.repeat(100), 1)), step(text('0123456789'.repeat(50), 1))],
      '',
    );
    const agent = await host.newSession({ ephemeral: true });
    const whole = await collectTurn(agent.runTurn({ text: 'go' }));
    const deltas = whole.events.filter((event) => event.type === 'message.delta');
    // The model's 1,000 deltas, joined per body chunk (ADR 0078): never more events than deltas, the whole text.
    expect(deltas.length).toBeGreaterThan(0);
    expect(deltas.length).toBeLessThanOrEqual(1000);
    expect(deltas.map((event) => (event as { text: string }).text).join('')).toBe('abcdefghij'.repeat(100));
    expect(whole.result.finalText).toBe('abcdefghij'.repeat(100));
    // An event listener interrupts while a body chunk's parts are being delivered: the deltas stop right there.
    let seen = '';
    const unsubscribe = agent.subscribe((event) => {
      if (event.type !== 'message.delta') return;
      seen += event.text;
      agent.interrupt();
    });
    const cut = await collectTurn(agent.runTurn({ text: 'again' }));
    unsubscribe();
    expect(cut.result.outcome).toBe('cancelled');
    const cutDeltas = cut.events.filter((event) => event.type === 'message.delta');
    expect(cutDeltas).toHaveLength(1);
    expect(seen.length).toBeLessThan(500);
    expect(cut.result.finalText).toBe(seen);
    expect('0123456789'.repeat(50).startsWith(seen)).toBe(true);
  });

  it('deltas of one body chunk go out as one event per run of text or reasoning, in order (ADR 0078)', async () => {
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
      `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    const bodyChunks = [
      chunk({ reasoning_content: 'r1' }) + chunk({ reasoning_content: 'r2' }) + chunk({ content: 'a' }),
      chunk({ content: 'b' }) + chunk({ content: 'c' }),
      chunk({ content: 'd' }) +
        chunk({ content: '' }) +
        chunk({ content: 'e' }) +
        chunk({}, 'stop') +
        'data: [DONE]\n\n',
    ];
    const encoder = new TextEncoder();
    // A model whose answer comes in exactly these three body chunks: each is one batch of parts for the turn loop.
    const answer: typeof globalThis.fetch = async () =>
      new Response(
        new ReadableStream<Uint8Array>({
          start(controller) {
            for (const piece of bodyChunks) controller.enqueue(encoder.encode(piece));
            controller.close();
          },
        }),
        { status: 200, headers: { 'content-type': 'text/event-stream' } },
      );
    const host = await createAgentHost({
      homeDir: temp('hermes-home-'),
      env: { HERMES_MODEL: 'custom:chunks', HERMES_BASE_URL: 'http://127.0.0.1:9/v1', HERMES_API_KEY: 'test-key' },
      config: { session: { auto_title: false } },
      connectMcp: false,
      logger: silentLogger,
      fetch: answer,
    });
    cleanups.push(() => host.close());
    const agent = await host.newSession({ ephemeral: true });
    const { events, result } = await collectTurn(agent.runTurn({ text: 'go' }));
    expect(result.outcome).toBe('completed');
    const streamed = events
      .filter((event) => event.type === 'message.delta' || event.type === 'reasoning.delta')
      .map((event) => [event.type, (event as { text: string }).text]);
    expect(streamed).toEqual([
      ['reasoning.delta', 'r1r2'],
      ['message.delta', 'a'],
      ['message.delta', 'bc'],
      ['message.delta', 'de'],
    ]);
    expect(result.finalText).toBe('abcde');
    expect(result.lastReasoning).toBe('r1r2');
  });

  it('48. the same script through the fake model and the scripted server gives the same transcript and event types', async () => {
    const cwdA = workspace();
    const fake: TestHost = await createTestHost({ script: tourScript() });
    cleanups.push(() => fake.dispose());
    const fakeAgent = await fake.newSession({ cwd: cwdA });
    const viaFake = await collectTurn(fakeAgent.runTurn({ text: 'combine the files' }));

    const cwdB = workspace();
    const { host } = await serverHost(tourScript(), cwdB);
    const httpAgent = await host.newSession({ cwd: cwdB });
    const viaHttp = await collectTurn(httpAgent.runTurn({ text: 'combine the files' }));

    expect(shape(viaHttp.events)).toEqual(shape(viaFake.events));
    const strip = (rows: Awaited<ReturnType<AgentHost['store']['loadConversation']>>) =>
      rows.map((row) => ({
        role: row.role,
        content: row.content,
        toolCalls: row.toolCalls?.map((call) => ({ name: call.name, arguments: JSON.parse(call.arguments) })) ?? null,
        toolCallId: row.toolCallId,
      }));
    expect(strip(await host.store.loadConversation(httpAgent.sessionId))).toEqual(
      strip(await fake.store.loadConversation(fakeAgent.sessionId)),
    );
  });
});
