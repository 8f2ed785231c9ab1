import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { createAgentHost } from '../../src/agent/host.js';
import { DEFAULT_TOOLSETS } from '../../src/config/index.js';
import type { AgentEvent } from '../../src/events.js';
import { silentLogger } from '../../src/logger.js';
import {
  collectTurn,
  createTestHost,
  fail,
  startScriptedOpenAIServer,
  step,
  type TestHost,
  text,
  toolCall,
} from '../../src/testing/index.js';
import type { ToolDefinition } from '../../src/tools/types.js';
import { useCleanups } from '../support/cleanups.js';
import { until } from './helpers.js';

const { cleanups, temp } = useCleanups();

async function testHost(options: Parameters<typeof createTestHost>[0]): Promise<TestHost> {
  const host = await createTestHost(options);
  cleanups.push(() => host.dispose());
  return host;
}

const noTitles = { session: { auto_title: false } };

describe('sessions, prompts and models', () => {
  it('2. after the first completed turn exactly one session row exists with source, cwd, model and prompt, then user and assistant rows', async () => {
    const cwd = temp('hermes-ws-');
    const host = await testHost({ storage: 'file', config: noTitles, script: [step(text('hello'))] });
    const agent = await host.newSession({ source: 'cli', cwd });
    await collectTurn(agent.runTurn({ text: 'hi' }));
    const page = await host.store.listSessions({ includeHidden: true, kinds: ['root', 'branch', 'subagent'] });
    expect(page.items).toHaveLength(1);
    const row = await host.store.getSession(agent.sessionId);
    expect(row).toMatchObject({ source: 'cli', cwd, model: 'scripted:test' });
    expect(row?.systemPrompt?.length).toBeGreaterThan(50);
    const messages = await host.store.loadConversation(agent.sessionId);
    expect(messages.map((message) => message.role)).toEqual(['user', 'assistant']);
    expect(messages[1]!.rowId).toBeGreaterThan(messages[0]!.rowId);
  });

  it('54. the system prompt is byte-identical across turns, for a second host that resumes, and after SOUL.md changes', async () => {
    const homeDir = temp('hermes-home-');
    const host = await testHost({
      homeDir,
      storage: 'file',
      config: noTitles,
      script: [step(text('one')), step(text('two'))],
    });
    const agent = await host.newSession({ cwd: homeDir });
    await collectTurn(agent.runTurn({ text: 'a' }));
    await collectTurn(agent.runTurn({ text: 'b' }));
    const system = (call: { messages: unknown[] }) => (call.messages[0] as { role: string; content: string }).content;
    const first = system(host.model.calls[0]!);
    expect(system(host.model.calls[1]!)).toBe(first);
    expect((await host.store.getSession(agent.sessionId))?.systemPrompt).toBe(first);
    await agent.close();
    writeFileSync(join(homeDir, 'SOUL.md'), 'You are a pirate.');
    const other = await testHost({ homeDir, storage: 'file', config: noTitles, script: [step(text('three'))] });
    const resumed = await other.resumeSession(agent.sessionId);
    await collectTurn(resumed.runTurn({ text: 'c' }));
    expect(system(other.model.calls[0]!)).toBe(first);
    expect(first).not.toContain('pirate');
  });

  it('44. switchModel between turns writes a model_switch row, rebuilds the prompt once, and emits model.switched; during a turn it applies next turn', async () => {
    const host = await testHost({
      autoAdvance: true,
      config: noTitles,
      scripts: { other: [step(text('from other')), step(text('again other'))] },
      script: [step(text('first')), step(text('slow'), { delayMs: 30 })],
    });
    const agent = await host.newSession();
    await collectTurn(agent.runTurn({ text: 'a' }));
    const events: AgentEvent[] = [];
    agent.subscribe((event) => events.push(event));
    const switched = await agent.switchModel('scripted:other');
    expect(switched).toMatchObject({ ok: true, appliesFrom: 'now', to: { spec: 'scripted:other' } });
    expect(events.some((event) => event.type === 'model.switched')).toBe(true);
    const rows = await host.store.loadConversation(agent.sessionId);
    expect(rows.at(-1)).toMatchObject({ role: 'user', displayKind: 'model_switch' });
    expect(rows.at(-1)!.content).toBe(
      'The model for this conversation was switched from scripted:test to scripted:other.',
    );
    const before = (await host.store.getSession(agent.sessionId))!.systemPrompt!;
    await collectTurn(agent.runTurn({ text: 'b' }));
    const other = host.provider.model('other');
    const prompt = (other.calls[0]!.messages[0] as { content: string }).content;
    expect(prompt).not.toBe(before);
    expect(prompt).toContain('other');
    await collectTurn(agent.runTurn({ text: 'c' }));
    expect((other.calls[1]!.messages[0] as { content: string }).content).toBe(prompt);

    const busy = await host.newSession();
    const run = busy.runTurn({ text: 'slow one' });
    const during = await busy.switchModel('scripted:other');
    expect(during.appliesFrom).toBe('next_turn');
    await run.result;
  });

  it('43. provider custom sends Authorization: Bearer HERMES_API_KEY to HERMES_BASE_URL and no other key', async () => {
    const server = await startScriptedOpenAIServer({ script: [step(text('ok'))], apiKey: 'hermes-key' });
    cleanups.push(() => server.close());
    const host = await createAgentHost({
      homeDir: temp('hermes-home-'),
      env: {
        HERMES_MODEL: 'my-model',
        HERMES_BASE_URL: server.baseURL,
        HERMES_API_KEY: 'hermes-key',
        OPENAI_API_KEY: 'sk-openai-secret-9999',
        ANTHROPIC_API_KEY: 'sk-ant-secret-9999',
      },
      connectMcp: false,
      logger: silentLogger,
      config: noTitles,
    });
    cleanups.push(() => host.close());
    const agent = await host.newSession();
    const { result } = await collectTurn(agent.runTurn({ text: 'x' }));
    expect(result.outcome).toBe('completed');
    expect(result.route).toMatchObject({ provider: 'custom', model: 'my-model' });
    expect(server.requests[0]!.headers.authorization).toBe('Bearer hermes-key');
    expect(JSON.stringify(server.requests)).not.toMatch(/sk-openai-secret|sk-ant-secret/);
  });
});

describe('usage and cost', () => {
  it('42. session counters and usage_by_model equal the sum of the scripted usages; a local provider costs 0 as included', async () => {
    const host = await testHost({
      config: noTitles,
      script: [
        { ...step(toolCall('todo', {})), usage: { inputTokens: 100, outputTokens: 10, cacheReadTokens: 40 } },
        { ...step(text('done')), usage: { inputTokens: 200, outputTokens: 20, reasoningTokens: 5 } },
      ],
    });
    const agent = await host.newSession();
    const { result } = await collectTurn(agent.runTurn({ text: 'x' }));
    expect(result.usage.turn).toMatchObject({ inputTokens: 300, outputTokens: 30, cacheReadTokens: 40, apiCalls: 2 });
    const row = await host.store.getSession(agent.sessionId);
    expect(row).toMatchObject({
      inputTokens: 300,
      outputTokens: 30,
      cacheReadTokens: 40,
      apiCallCount: 2,
      estimatedCostUsd: 0,
      costStatus: 'included',
    });
    const byModel = await host.store.usageByModel(agent.sessionId);
    expect(byModel).toHaveLength(1);
    expect(byModel[0]).toMatchObject({
      provider: 'scripted',
      model: 'test',
      task: 'main',
      costUsd: 0,
      costStatus: 'included',
    });
    expect(byModel[0]!.usage).toMatchObject({ inputTokens: 300, outputTokens: 30 });
  });

  it('42. the cost of a priced model follows the formula of §17.2', async () => {
    const server = await startScriptedOpenAIServer({
      script: [
        { ...step(text('priced')), usage: { inputTokens: 1_000_000, outputTokens: 200_000, cacheReadTokens: 400_000 } },
      ],
    });
    cleanups.push(() => server.close());
    const host = await createAgentHost({
      homeDir: temp('hermes-home-'),
      env: { HERMES_MODEL: 'custom:priced', HERMES_BASE_URL: server.baseURL },
      config: { ...noTitles, pricing: { 'custom:priced': { input: 3, output: 15, cache_read: 0.3 } } },
      connectMcp: false,
      logger: silentLogger,
    });
    cleanups.push(() => host.close());
    const agent = await host.newSession();
    const { result } = await collectTurn(agent.runTurn({ text: 'x' }));
    // (1,000,000 − 400,000) × 3 + 400,000 × 0.3 + 200,000 × 15, per million.
    expect(result.cost.turnUsd).toBeCloseTo(1.8 + 0.12 + 3, 6);
    expect(result.cost.status).toBe('estimated');
  });
});

describe('compression', () => {
  const tight = {
    ...noTitles,
    models: { 'scripted:test': { context_length: 1000 } },
    compression: { protect_first_n: 1, protect_last_n: 1 },
  };

  /** A workspace with a file whose contents make a tool result of about 300 tokens. */
  function bigFile(): string {
    const cwd = temp('hermes-ws-');
    writeFileSync(join(cwd, 'big.txt'), `${'lorem ipsum '.repeat(100)}\n`);
    return cwd;
  }

  /** Turn one reads a big file; its answer leaves the estimate just above half of the window. */
  const firstTurn = [
    { ...step(toolCall('read_file', { path: 'big.txt' })), usage: { inputTokens: 50 } },
    { ...step(text('The file is placeholder text, repeated many times over.')), usage: { inputTokens: 500 } },
  ];

  it('35. a transcript above half of a 1,000-token window is compacted at turn start', async () => {
    const host = await testHost({
      config: tight,
      script: [...firstTurn, step(text('Goal: test. Progress: read big.txt.')), step(text('answer after compaction'))],
    });
    const agent = await host.newSession({ cwd: bigFile() });
    await collectTurn(agent.runTurn({ text: 'first' }));
    const before = await host.store.loadConversation(agent.sessionId);
    const { events, result } = await collectTurn(agent.runTurn({ text: 'second' }));
    expect(result.outcome).toBe('completed');
    expect(events.filter((event) => event.type === 'compaction.start')).toMatchObject([{ trigger: 'preflight' }]);
    expect(events.find((event) => event.type === 'compaction.end')).toMatchObject({ ok: true, archivedRows: 2 });
    const all = await host.store.loadConversation(agent.sessionId, { includeInactive: true });
    for (const row of before.slice(1, 3))
      expect(all.find((stored) => stored.rowId === row.rowId)).toMatchObject({ active: false, compacted: true });
    const active = await host.store.loadConversation(agent.sessionId);
    expect(active.filter((row) => row.displayKind === 'compaction_summary')).toHaveLength(1);
    expect(active.map((row) => `${row.role}:${row.displayKind ?? ''}`)).toEqual([
      'user:',
      'user:compaction_summary',
      'assistant:',
      'user:',
      'assistant:',
    ]);
    const lastRequest = JSON.stringify(host.model.calls.at(-1)!.messages);
    expect(lastRequest).toContain('[Summary of 2 earlier messages]');
    expect(lastRequest).not.toContain('lorem ipsum');
    expect(active.every((row) => row.sessionId === agent.sessionId)).toBe(true);
  });

  it('36. a failing summarizer leaves the transcript unchanged and blocks automatic compression for 60 s; a forced one still runs', async () => {
    const host = await testHost({
      config: tight,
      script: [
        ...firstTurn,
        step(fail(400)),
        step(text('second answer')),
        step(text('third answer')),
        step(text('Forced summary.')),
      ],
    });
    const agent = await host.newSession({ cwd: bigFile() });
    await collectTurn(agent.runTurn({ text: 'first' }));
    const rowsBefore = await host.store.loadConversation(agent.sessionId);
    const second = await collectTurn(agent.runTurn({ text: 'second' }));
    expect(second.events.find((event) => event.type === 'compaction.end')).toMatchObject({ ok: false });
    const rowsAfter = await host.store.loadConversation(agent.sessionId);
    expect(rowsAfter.slice(0, rowsBefore.length)).toEqual(rowsBefore);
    const third = await collectTurn(agent.runTurn({ text: 'third' }));
    expect(third.events.some((event) => event.type === 'compaction.start')).toBe(false);
    const forced = await agent.compress({ force: true });
    expect(forced.ok).toBe(true);
  });

  it('37. a context overflow triggers one forced compression and the same iteration again, not counted against the budget', async () => {
    // Automatic compression is off, so only the provider's overflow can trigger it.
    const host = await testHost({
      config: { ...tight, compression: { ...tight.compression, enabled: false } },
      script: [
        step(fail(400, { kind: 'context_overflow' })),
        step(text('Summary of the seed.')),
        step(text('fits now')),
      ],
    });
    const long = 'old conversation text '.repeat(60);
    const agent = await host.newSession({
      seed: [
        { role: 'user', content: 'old question one' },
        { role: 'assistant', content: long },
        { role: 'user', content: 'old question two' },
        { role: 'assistant', content: long },
        { role: 'user', content: 'old question three' },
        { role: 'assistant', content: 'old answer three' },
      ],
    });
    const { events, result } = await collectTurn(agent.runTurn({ text: 'new question' }));
    expect(events.find((event) => event.type === 'compaction.start')).toMatchObject({ trigger: 'overflow' });
    expect(result.outcome).toBe('completed');
    expect(result.finalText).toBe('fits now');
    expect(result.iterations).toBe(1);
  });
});

describe('titles', () => {
  it('39. after the first completed turn an llm title is set and a title event emitted', async () => {
    const host = await testHost({
      script: [step(text('Rome is lovely in spring.')), step(text('"Planning A Trip To Rome."'))],
    });
    const agent = await host.newSession();
    const titles: AgentEvent[] = [];
    agent.subscribe((event) => event.type === 'title' && titles.push(event));
    await collectTurn(agent.runTurn({ text: 'Help me plan a trip to Rome' }));
    await until(() => titles.length > 0);
    expect(titles[0]).toMatchObject({ title: 'Planning A Trip To Rome', source: 'llm' });
    expect((await host.store.getSession(agent.sessionId))?.titleSource).toBe('llm');
  });

  it('39. a user title set before the first prompt is stored at creation and never replaced; duplicates fail or get #2', async () => {
    const host = await testHost({ script: [step(text('answer')), step(text('answer two')), step(text('My Trip'))] });
    const agent = await host.newSession();
    await agent.setTitle('My Trip');
    await collectTurn(agent.runTurn({ text: 'x' }));
    expect(await host.store.getSession(agent.sessionId)).toMatchObject({ title: 'My Trip', titleSource: 'user' });
    const other = await host.newSession();
    await expect(other.setTitle('my trip')).rejects.toMatchObject({ code: 'title_taken' });
    const titles: AgentEvent[] = [];
    other.subscribe((event) => event.type === 'title' && titles.push(event));
    await collectTurn(other.runTurn({ text: 'y' }));
    await until(() => titles.length > 0);
    expect(titles[0]).toMatchObject({ title: 'My Trip #2', source: 'llm' });
    // The first session still carries the user's title: a generated one never replaces it.
    expect((await host.store.getSession(agent.sessionId))?.title).toBe('My Trip');
  });
});

describe('process hygiene', () => {
  it('49. no byte is written to process.stdout during a turn with tools, approvals and compression', async () => {
    const write = vi.spyOn(process.stdout, 'write');
    try {
      const cwd = temp('hermes-ws-');
      writeFileSync(join(cwd, 'big.txt'), `${'lorem ipsum '.repeat(100)}\n`);
      const host = await testHost({
        config: {
          ...noTitles,
          models: { 'scripted:test': { context_length: 1000 } },
          compression: { protect_first_n: 1, protect_last_n: 1 },
        },
        script: [
          { ...step(toolCall('terminal', { command: 'mkdir -p build && rm -rf build' })), usage: { inputTokens: 40 } },
          { ...step(toolCall('read_file', { path: 'big.txt' })), usage: { inputTokens: 50 } },
          { ...step(text('Read it and cleaned the build folder.')), usage: { inputTokens: 500 } },
          step(text('Summary.')),
          step(text('done')),
        ],
      });
      host.approvals.answer('once');
      const agent = await host.newSession({ cwd });
      const first = await collectTurn(agent.runTurn({ text: 'clean' }));
      expect(first.events.some((event) => event.type === 'approval.request')).toBe(true);
      const second = await collectTurn(agent.runTurn({ text: 'again' }));
      expect(second.events.some((event) => event.type === 'compaction.end')).toBe(true);
      expect(write).not.toHaveBeenCalled();
    } finally {
      write.mockRestore();
    }
  });
});

describe('secrets', () => {
  it('24.7 a missing provider key asks the secret callback, is written to .env, and the turn continues', async () => {
    const server = await startScriptedOpenAIServer({ script: [step(text('authorized'))], apiKey: 'k-123456' });
    cleanups.push(() => server.close());
    const homeDir = temp('hermes-home-');
    const asked: unknown[] = [];
    const host = await createAgentHost({
      homeDir,
      env: {},
      connectMcp: false,
      logger: silentLogger,
      config: {
        ...noTitles,
        model: { default: 'local:m' },
        providers: { local: { base_url: server.baseURL, api_key_env: 'LOCAL_KEY' } },
      },
      callbacks: {
        secret: async (request) => {
          asked.push(request);
          return { value: 'k-123456' };
        },
      },
    });
    cleanups.push(() => host.close());
    const agent = await host.newSession();
    const { result } = await collectTurn(agent.runTurn({ text: 'x' }));
    expect(asked).toMatchObject([{ envVar: 'LOCAL_KEY' }]);
    expect(result).toMatchObject({ outcome: 'completed', finalText: 'authorized' });
    const dotenv = join(homeDir, '.env');
    expect(readFileSync(dotenv, 'utf8')).toContain('LOCAL_KEY=k-123456');
    expect(statSync(dotenv).mode & 0o777).toBe(0o600);
    expect(JSON.stringify(await host.store.loadConversation(agent.sessionId))).not.toContain('k-123456');
  });

  it('24.7 without a secret callback a missing key fails the turn with provider_error(auth) naming the variable', async () => {
    const host = await createAgentHost({
      homeDir: temp('hermes-home-'),
      env: {},
      connectMcp: false,
      logger: silentLogger,
      config: { ...noTitles, model: { default: 'openrouter:some/model' } },
    });
    cleanups.push(() => host.close());
    const agent = await host.newSession();
    const { result } = await collectTurn(agent.runTurn({ text: 'x' }));
    expect(result).toMatchObject({ outcome: 'failed', exitReason: 'provider_error(auth)' });
    expect(result.error?.message).toContain('OPENROUTER_API_KEY');
  });
});

describe('sessions without a stored row', () => {
  it('persist() creates the row at once with the seed rows and their display kinds', async () => {
    const host = await testHost({ config: noTitles });
    const agent = await host.newSession({
      seed: [
        { role: 'user', content: 'scaffold', displayKind: 'hidden' },
        { role: 'assistant', content: 'ok' },
      ],
    });
    expect(await host.store.getSession(agent.sessionId)).toBeNull();
    await agent.persist();
    const row = await host.store.getSession(agent.sessionId);
    expect(row?.systemPrompt?.length).toBeGreaterThan(0);
    const rows = await host.store.loadConversation(agent.sessionId);
    expect(rows.map((stored) => stored.displayKind)).toEqual(['hidden', null]);
  });

  it('an ephemeral session rewinds and undoes in memory by the negative ids of history()', async () => {
    const host = await testHost({ config: noTitles, script: [step(text('one')), step(text('two'))] });
    const agent = await host.newSession({ ephemeral: true });
    await collectTurn(agent.runTurn({ text: 'first' }));
    await collectTurn(agent.runTurn({ text: 'second' }));
    const history = await agent.history();
    expect(history.map((row) => row.rowId)).toEqual([-1, -2, -3, -4]);
    const undone = await agent.undo();
    expect(undone.removedUserText).toBe('second');
    expect((await agent.history()).map((row) => row.content)).toEqual(['first', 'one']);
    const rewound = await agent.rewind({ beforeRowId: -1 });
    expect(rewound.removedUserText).toBe('first');
    expect(await agent.history()).toEqual([]);
    await expect(agent.rewind({ beforeRowId: -5 })).rejects.toMatchObject({ code: 'invalid_input' });
  });
});

describe('persistAs and stored tool results', () => {
  it('persistAs changes the stored text only: the model receives the full input, this turn and the next', async () => {
    const host = await testHost({
      config: noTitles,
      script: [step(toolCall('todo', {})), step(text('first')), step(text('second'))],
    });
    const agent = await host.newSession();
    await collectTurn(
      agent.runTurn({
        text: 'Summarize this file:\n<file>long inlined contents</file>',
        persistAs: {
          text: 'Summarize this file',
          displayKind: 'attachment_prompt',
          displayMetadata: { files: ['a.txt'] },
        },
      }),
    );
    await collectTurn(agent.runTurn({ text: 'and again' }));
    expect(JSON.stringify(host.model.calls[0]!.messages)).toContain('long inlined contents');
    expect(JSON.stringify(host.model.calls[2]!.messages)).toContain('long inlined contents');
    const rows = await host.store.loadConversation(agent.sessionId);
    expect(rows[0]).toMatchObject({
      content: 'Summarize this file',
      displayKind: 'attachment_prompt',
      displayMetadata: { files: ['a.txt'] },
    });
    const todoRow = rows.find((row) => row.role === 'tool')!;
    expect(todoRow.displayMetadata).toMatchObject({ status: 'completed', structured: { todos: [] } });
  });
});

describe('memory scope', () => {
  /** `whoami`: answers with the memory scope its context carries. */
  const whoami: ToolDefinition<Record<string, never>> = {
    name: 'whoami',
    description: 'Reports the memory scope of the turn.',
    inputSchema: { type: 'object', properties: {} },
    toolset: 'test',
    kind: 'other',
    readOnly: true,
    async execute(_args, context) {
      return { content: `scope=${context.memoryScope ?? 'none'}` };
    },
  };

  it("a turn's memoryScope is on turn.start and in the tool context of the turn and of its delegated children", async () => {
    const host = await testHost({
      // The user enables the toolset of the tool they registered.
      config: { ...noTitles, toolsets: [...DEFAULT_TOOLSETS, 'test'] },
      tools: [whoami as ToolDefinition],
      script: [
        step(toolCall('delegate_task', { goal: 'ask who' })),
        step(toolCall('whoami', {})),
        step(text('child done')),
        step(toolCall('whoami', {})),
        step(text('parent done')),
        step(toolCall('whoami', {})),
        step(text('no scope')),
      ],
    });
    const agent = await host.newSession();
    const scoped = await collectTurn(agent.runTurn({ text: 'who am I' }, { memoryScope: 'mem-ada' }));
    expect(scoped.result.outcome).toBe('completed');
    expect(scoped.events[0]).toMatchObject({ type: 'turn.start', memoryScope: 'mem-ada' });
    const parentWhoami = scoped.events.find((event) => event.type === 'tool.end' && event.name === 'whoami');
    expect(parentWhoami).toMatchObject({ result: 'scope=mem-ada' });
    const children = await host.store.listSessions({ kinds: ['subagent'], includeHidden: true });
    expect(children.items).toHaveLength(1);
    const childRows = await host.store.loadConversation(children.items[0]!.id);
    expect(childRows.find((row) => row.role === 'tool')?.content).toBe('scope=mem-ada');

    const plain = await collectTurn(agent.runTurn({ text: 'and now' }));
    expect(plain.events[0]?.type).toBe('turn.start');
    expect(plain.events[0]).not.toHaveProperty('memoryScope');
    expect(plain.events.find((event) => event.type === 'tool.end')).toMatchObject({ result: 'scope=none' });
  });
});
