// ADR 0052: the caller's own function tools. A model call to one ends the run with the call for the client; the next
// run brings the client's result and continues the same turn, with the server's own tools still working in it.
import { afterEach, describe, expect, it } from 'vitest';
import { pendingToolCalls } from '../../src/agent/transcript.js';
import type { ClientTool } from '../../src/index.js';
import {
  collectTurn,
  createTestHost,
  type ModelScript,
  step,
  type TestHost,
  text,
  toolCall,
} from '../../src/testing/index.js';
import type { ToolDefinition } from '../../src/tools/types.js';

let host: TestHost | null = null;
afterEach(async () => {
  await host?.dispose();
  host = null;
});

const weather: ClientTool = {
  name: 'get_weather',
  description: 'The weather in a city.',
  inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

const serverEchoCalls: unknown[] = [];
const serverEcho: ToolDefinition<{ text: string }> = {
  name: 'server_echo',
  description: 'Echoes a text.',
  inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  toolset: 'test',
  kind: 'other',
  readOnly: true,
  async execute(args) {
    serverEchoCalls.push(args);
    return { content: `echo:${args.text}` };
  },
};

async function testHost(script: ModelScript) {
  return createTestHost({
    script,
    tools: [serverEcho as ToolDefinition],
    config: { toolsets: ['file', 'test'], session: { auto_title: false } } as never,
  });
}

/** The prompt's tool results, as `name=text`. */
function toolResultsIn(messages: unknown[]): string[] {
  const results: string[] = [];
  for (const message of messages as { role: string; content: unknown }[]) {
    if (message.role !== 'tool' || !Array.isArray(message.content)) continue;
    for (const part of message.content as { toolName: string; output: { value: unknown } }[])
      results.push(`${part.toolName}=${String(part.output.value)}`);
  }
  return results;
}

describe('client tools (ADR 0052)', () => {
  it('a call to a client tool ends the run with the call; the next run answers it and the turn goes on', async () => {
    host = await testHost([
      step(text('Let me look. '), toolCall('get_weather', { city: 'Oslo' }, 'call_w1')),
      step(text('It is 3 degrees in Oslo.')),
    ]);
    const agent = await host.newSession();
    const first = await collectTurn(agent.runTurn({ text: 'weather in Oslo?' }, { clientTools: [weather] }));
    expect(first.result).toMatchObject({
      outcome: 'completed',
      exitReason: 'client_tool_calls',
      finishReason: 'tool_calls',
      finalText: 'Let me look. ',
      clientToolCalls: [{ id: 'call_w1', name: 'get_weather', arguments: '{"city":"Oslo"}' }],
    });
    // Offered beside the server's tools, with the client's schema as sent; never run by the core.
    const offered = host.model.calls[0]?.tools ?? [];
    expect(offered.map((tool) => tool.name)).toEqual(expect.arrayContaining(['get_weather', 'server_echo']));
    expect(offered.find((tool) => tool.name === 'get_weather')?.schema).toEqual(weather.inputSchema);
    expect(first.events.some((event) => event.type === 'tool.start')).toBe(false);
    const stored = await host.store.loadConversation(agent.sessionId);
    expect(stored.at(-1)).toMatchObject({ role: 'assistant', toolCalls: [{ id: 'call_w1' }] });
    expect(pendingToolCalls(stored).map((call) => call.id)).toEqual(['call_w1']);

    const second = await collectTurn(
      agent.runTurn({ toolResults: [{ callId: 'call_w1', content: '3 degrees' }] }, { clientTools: [weather] }),
    );
    expect(second.result).toMatchObject({ outcome: 'completed', finalText: 'It is 3 degrees in Oslo.' });
    expect(second.result.clientToolCalls).toBeUndefined();
    expect(second.result.turnId).toBe(first.result.turnId);
    expect(second.result.userRowId).toBeNull();
    expect(toolResultsIn(host.model.calls[1]?.messages ?? [])).toEqual(['get_weather=3 degrees']);
    const rows = await host.store.loadConversation(agent.sessionId);
    expect(rows.map((row) => `${row.role}:${row.turnId === first.result.turnId}`)).toEqual([
      'user:true',
      'assistant:true',
      'tool:true',
      'assistant:true',
    ]);
    expect(pendingToolCalls(rows)).toEqual([]);
  });

  it('a step that calls a server tool and a client tool runs the server one first; both results reach the model', async () => {
    serverEchoCalls.length = 0;
    host = await testHost([
      step(toolCall('server_echo', { text: 'hi' }, 'call_s'), toolCall('get_weather', { city: 'Rome' }, 'call_c')),
      step(toolCall('server_echo', { text: 'again' }, 'call_s2')),
      step(text('Done: sunny.')),
    ]);
    const agent = await host.newSession();
    const first = await collectTurn(agent.runTurn({ text: 'go' }, { clientTools: [weather] }));
    expect(serverEchoCalls).toEqual([{ text: 'hi' }]);
    expect(first.result.clientToolCalls?.map((call) => call.id)).toEqual(['call_c']);
    expect(first.events.filter((event) => event.type === 'tool.end').map((event) => event.callId)).toEqual(['call_s']);
    const second = await collectTurn(
      agent.runTurn({ toolResults: [{ callId: 'call_c', content: 'sunny' }] }, { clientTools: [weather] }),
    );
    // The server's tools keep working in the continued turn.
    expect(serverEchoCalls).toEqual([{ text: 'hi' }, { text: 'again' }]);
    expect(second.result.finalText).toBe('Done: sunny.');
    expect(toolResultsIn(host.model.calls[1]?.messages ?? [])).toEqual(['server_echo=echo:hi', 'get_weather=sunny']);
  });

  it('several client calls in one step are all returned; a call left without a result is answered with an error', async () => {
    host = await testHost([
      step(toolCall('get_weather', { city: 'A' }, 'call_a'), toolCall('get_weather', { city: 'B' }, 'call_b')),
      step(text('ok')),
    ]);
    const agent = await host.newSession();
    const first = await collectTurn(agent.runTurn({ text: 'go' }, { clientTools: [weather] }));
    expect(first.result.clientToolCalls?.map((call) => call.id)).toEqual(['call_a', 'call_b']);
    await collectTurn(
      agent.runTurn(
        {
          toolResults: [
            { callId: 'call_b', content: 'warm' },
            { callId: 'call_zzz', content: 'stray' },
          ],
        },
        { clientTools: [weather] },
      ),
    );
    expect(toolResultsIn(host.model.calls[1]?.messages ?? [])).toEqual([
      'get_weather=Error: the client returned no result for this call.',
      'get_weather=warm',
    ]);
  });

  it('a new prompt instead of the results leaves no call unanswered in the model request', async () => {
    host = await testHost([step(toolCall('get_weather', { city: 'A' }, 'call_a')), step(text('Fine.'))]);
    const agent = await host.newSession();
    await collectTurn(agent.runTurn({ text: 'go' }, { clientTools: [weather] }));
    const next = await collectTurn(agent.runTurn({ text: 'never mind' }));
    expect(next.result).toMatchObject({ outcome: 'completed', finalText: 'Fine.' });
    expect(toolResultsIn(host.model.calls[1]?.messages ?? [])).toHaveLength(1);
    expect(host.model.calls[1]?.tools.map((tool) => tool.name)).not.toContain('get_weather');
  });

  it('a client tool named like a server tool is refused with tool_name_conflict before anything runs', async () => {
    host = await testHost([step(text('never'))]);
    const agent = await host.newSession();
    expect(() =>
      agent.runTurn({ text: 'go' }, { clientTools: [{ name: 'server_echo', inputSchema: { type: 'object' } }] }),
    ).toThrow(expect.objectContaining({ code: 'tool_name_conflict' }));
    expect(host.model.calls).toHaveLength(0);
  });

  it('toolChoice forces the first model step of the run only', async () => {
    host = await testHost([step(toolCall('server_echo', { text: 'x' })), step(text('answer'))]);
    const agent = await host.newSession();
    await collectTurn(
      agent.runTurn({ text: 'go' }, { clientTools: [weather], toolChoice: { toolName: 'server_echo' } }),
    );
    expect(host.model.calls[0]?.options.toolChoice).toEqual({ type: 'tool', toolName: 'server_echo' });
    expect(host.model.calls[1]?.options.toolChoice).toBeUndefined();
  });
});
