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
    expect(deltas).toHaveLength(1000);
    expect(deltas.map((event) => (event as { text: string }).text).join('')).toBe('abcdefghij'.repeat(100));
    // An event listener interrupts while a body chunk's parts are being delivered: the deltas stop right there.
    let seen = 0;
    const unsubscribe = agent.subscribe((event) => {
      if (event.type !== 'message.delta') return;
      seen += 1;
      if (seen === 5) agent.interrupt();
    });
    const cut = await collectTurn(agent.runTurn({ text: 'again' }));
    unsubscribe();
    expect(cut.result.outcome).toBe('cancelled');
    expect(cut.events.filter((event) => event.type === 'message.delta')).toHaveLength(5);
    expect(cut.result.finalText).toBe('01234');
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
