// Issue 16.5: the agent's own tool calls come back from /v1/responses in a form that real Responses clients show
// and never run themselves (an `mcp_call` item, ADR 0010). Each client below runs against the real server over
// HTTP with a scripted model that calls a tool, streaming and not.
import { createOpenAI } from '@ai-sdk/openai';
import { delay, step, text, toolCall } from '@hermes/core/testing';
import { Agent, tool as agentTool, OpenAIProvider, Runner, setTracingDisabled } from '@openai/agents';
import { generateText, jsonSchema, streamText, tool } from 'ai';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { KEY, type Rig, startRig } from './harness.js';

let rig: Rig | null = null;
afterEach(async () => {
  await rig?.close();
  rig = null;
});
// The Agents SDK exports traces to OpenAI by default; tests never reach the internet.
beforeAll(() => setTracingDisabled(true));

const toolScript = () => [step(text('Checking. '), toolCall('test_echo', { text: 'README.md' })), step(text('Done'))];

/**
 * A client-side tool the model does not call: it must never run, the server already ran its own. (A client tool named
 * like a server tool is refused with a 400 since ADR 0052.)
 */
function clientSideEcho(calls: unknown[]) {
  return tool({
    description: 'Echoes a text.',
    inputSchema: jsonSchema<{ text: string }>({
      type: 'object',
      properties: { text: { type: 'string' } },
      required: ['text'],
    }),
    execute: async (input) => {
      calls.push(input);
      return 'client ran it';
    },
  });
}

describe('coalesced text deltas on a Responses stream (spec §14.7)', () => {
  /** Every event of a streamed response, through the official client. */
  async function events(rig: Rig) {
    const stream = await rig.client.responses.create({ model: 'hermes-agent', input: 'go', stream: true });
    const seen: { type: string; sequence_number: number; delta?: string; text?: string }[] = [];
    for await (const event of stream) seen.push(event as (typeof seen)[number]);
    return seen;
  }

  it('a burst shares events; the numbers stay consecutive and the text whole, also across a tool call', async () => {
    const answer = Array.from({ length: 2000 }, (_, index) => String(index % 10)).join('');
    rig = await startRig({
      script: [step(text(answer, 1), toolCall('test_echo', { text: 'x' })), step(text(answer, 1))],
    });
    const seen = await events(rig);
    expect(seen.map((event) => event.sequence_number)).toEqual(seen.map((_, index) => index));
    const deltas = seen.filter((event) => event.type === 'response.output_text.delta');
    expect(deltas.length).toBeLessThan(4000);
    expect(deltas.map((event) => event.delta).join('')).toBe(answer + answer);
    const done = seen.filter((event) => event.type === 'response.output_text.done').map((event) => event.text);
    expect(done).toEqual([answer, answer]);
    const types = seen.map((event) => event.type).filter((type, index, all) => type !== all[index - 1]);
    expect(types.slice(0, 5)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
    ]);
    expect(types.at(-1)).toBe('response.completed');
  });

  it('deltas that arrive at their own pace get an event each', async () => {
    rig = await startRig({ script: [step(text('one '), delay(30), text('two '), delay(30), text('three'))] });
    const deltas = (await events(rig)).filter((event) => event.type === 'response.output_text.delta');
    expect(deltas.map((event) => event.delta)).toEqual(['one ', 'two ', 'three']);
  });
});

describe('openai 6.x client', () => {
  it('create: the server-run tool is an mcp_call item with its output', async () => {
    rig = await startRig({ script: toolScript() });
    const response = await rig.client.responses.create({ model: 'hermes-agent', input: 'list files' });
    expect(response.output_text).toBe('Checking. Done');
    expect(response.output.map((item) => item.type)).toEqual(['message', 'mcp_call', 'message']);
    const call = response.output[1];
    expect(call).toMatchObject({
      type: 'mcp_call',
      server_label: 'hermes',
      name: 'test_echo',
      arguments: '{"text":"README.md"}',
      output: 'README.md',
      error: null,
      status: 'completed',
    });
    expect(rig.host.model.calls).toHaveLength(2);
  });

  it('stream: the accumulated and the event-by-event views agree', async () => {
    rig = await startRig({ script: [...toolScript(), ...toolScript()] });
    const final = await rig.client.responses.stream({ model: 'hermes-agent', input: 'list files' }).finalResponse();
    expect(final.output.map((item) => item.type)).toEqual(['message', 'mcp_call', 'message']);
    const stream = await rig.client.responses.create({ model: 'hermes-agent', input: 'again', stream: true });
    const types: string[] = [];
    for await (const event of stream) types.push(event.type);
    expect(types).toContain('response.mcp_call.completed');
    expect(types.some((type) => type.startsWith('response.function_call'))).toBe(false);
    expect(types.at(-1)).toBe('response.completed');
  });
});

describe('AI SDK @ai-sdk/openai .responses()', () => {
  it('generateText: the call is provider-executed, its result shown, and the client tool never runs', async () => {
    rig = await startRig({ script: toolScript() });
    const openai = createOpenAI({ baseURL: `${rig.base}/v1`, apiKey: KEY });
    const calls: unknown[] = [];
    const result = await generateText({
      model: openai.responses('hermes-agent'),
      prompt: 'list files',
      tools: { client_echo: clientSideEcho(calls) },
    });
    expect(result.text).toContain('Done');
    expect(calls).toEqual([]);
    expect(result.steps).toHaveLength(1);
    const toolCalls = result.toolCalls;
    expect(toolCalls).toHaveLength(1);
    expect(toolCalls[0]).toMatchObject({ toolName: 'mcp.test_echo', providerExecuted: true, dynamic: true });
    expect(result.toolResults[0]).toMatchObject({
      toolName: 'mcp.test_echo',
      output: { type: 'call', serverLabel: 'hermes', name: 'test_echo', output: 'README.md' },
    });
    expect(rig.host.model.calls).toHaveLength(2);
  });

  it('a follow-up turn that sends the provider-executed call back is accepted', async () => {
    rig = await startRig({ script: [...toolScript(), step(text('You are welcome.')), step(text('You are welcome.'))] });
    const openai = createOpenAI({ baseURL: `${rig.base}/v1`, apiKey: KEY });
    const first = await generateText({ model: openai.responses('hermes-agent'), prompt: 'list files' });
    for (const store of [true, false]) {
      const second = await generateText({
        model: openai.responses('hermes-agent'),
        messages: [
          { role: 'user', content: 'list files' },
          ...first.response.messages,
          { role: 'user', content: 'thanks' },
        ],
        providerOptions: { openai: { store } },
      });
      expect(second.text, `store: ${store}`).toBe('You are welcome.');
    }
  });

  it('streamText: no error part, the same provider-executed call, and the text', async () => {
    rig = await startRig({ script: toolScript() });
    const openai = createOpenAI({ baseURL: `${rig.base}/v1`, apiKey: KEY });
    const calls: unknown[] = [];
    const result = streamText({
      model: openai.responses('hermes-agent'),
      prompt: 'list files',
      tools: { client_echo: clientSideEcho(calls) },
    });
    const parts: { type: string; [key: string]: unknown }[] = [];
    for await (const part of result.fullStream) parts.push(part as never);
    expect(parts.filter((part) => part.type === 'error')).toEqual([]);
    expect(await result.text).toBe('Checking. Done');
    expect(await result.finishReason).toBe('stop');
    expect(calls).toEqual([]);
    expect(parts.find((part) => part.type === 'tool-call')).toMatchObject({
      toolName: 'mcp.test_echo',
      providerExecuted: true,
    });
    expect(parts.find((part) => part.type === 'tool-result')).toMatchObject({
      toolName: 'mcp.test_echo',
      output: { output: 'README.md' },
    });
  });
});

/** A prompt as `role: text` lines; tool calls and results are shown as `call name args` and `result text`. */
function promptLines(messages: unknown[]): string[] {
  return (messages as { role: string; content: unknown }[])
    .filter((message) => message.role !== 'system')
    .map((message) => {
      const parts = typeof message.content === 'string' ? [{ type: 'text', text: message.content }] : message.content;
      const shown = (parts as Record<string, unknown>[]).map((part) => {
        if (part.type === 'text') return String(part.text);
        if (part.type === 'tool-call') return `call ${String(part.toolName)} ${JSON.stringify(part.input)}`;
        if (part.type === 'tool-result') return `result ${JSON.stringify(part.output)}`;
        return String(part.type);
      });
      return `${message.role}: ${shown.join(' | ')}`;
    });
}

describe('AI SDK .responses() over several turns: item_reference items resolve (issue 35.3)', () => {
  it('turn 2 sends turn 1 as references; the model sees user, assistant and the new user message apart', async () => {
    rig = await startRig({ script: [step(text('Hello, Ada.')), step(text('Your name is Ada.'))] });
    const openai = createOpenAI({ baseURL: `${rig.base}/v1`, apiKey: KEY });
    const bodies: { input: { type?: string; role?: string }[] }[] = [];
    const recording = createOpenAI({
      baseURL: `${rig.base}/v1`,
      apiKey: KEY,
      fetch: async (url, init) => {
        bodies.push(JSON.parse(String(init?.body)));
        return fetch(url, init);
      },
    });
    const first = await generateText({ model: openai.responses('hermes-agent'), prompt: 'I am Ada.' });
    expect(first.text).toBe('Hello, Ada.');
    const second = await generateText({
      model: recording.responses('hermes-agent'),
      messages: [
        { role: 'user', content: 'I am Ada.' },
        ...first.response.messages,
        { role: 'user', content: 'Who am I?' },
      ],
    });
    expect(second.text).toBe('Your name is Ada.');
    // The client really sent the assistant turn as a reference, not as a message.
    expect(bodies[0]?.input.map((item) => (item.type === 'item_reference' ? item.type : item.role))).toEqual([
      'user',
      'item_reference',
      'user',
    ]);
    const calls = rig.host.model.calls;
    expect(calls).toHaveLength(2);
    expect(promptLines(calls[1]?.messages ?? [])).toEqual([
      'user: I am Ada.',
      'assistant: Hello, Ada.',
      'user: Who am I?',
    ]);
  });

  it('a server-run tool of turn 1 comes back as its call and result, and does not run again in turn 2', async () => {
    rig = await startRig({ script: [...toolScript(), step(text('You listed README.md.'))] });
    const openai = createOpenAI({ baseURL: `${rig.base}/v1`, apiKey: KEY });
    const first = await generateText({ model: openai.responses('hermes-agent'), prompt: 'list files' });
    expect(first.text).toContain('Done');
    const second = await generateText({
      model: openai.responses('hermes-agent'),
      messages: [
        { role: 'user', content: 'list files' },
        ...first.response.messages,
        { role: 'user', content: 'what was it?' },
      ],
    });
    expect(second.text).toBe('You listed README.md.');
    const calls = rig.host.model.calls;
    expect(calls).toHaveLength(3);
    const lines = promptLines(calls[2]?.messages ?? []);
    expect(lines).toHaveLength(5);
    expect(lines[0]).toBe('user: list files');
    expect(lines[1]).toBe('assistant: Checking.  | call test_echo {"text":"README.md"}');
    expect(lines[2]).toMatch(/^tool: result .*README\.md/);
    expect(lines[3]).toBe('assistant: Done');
    expect(lines[4]).toBe('user: what was it?');
    // Turn 2's session holds the one copied tool result and no new run of the tool.
    const sessionId = second.response.headers?.['x-hermes-session-id'];
    expect(typeof sessionId).toBe('string');
    const rows = await rig.host.store.loadConversation(String(sessionId));
    expect(rows.filter((row) => row.role === 'tool')).toHaveLength(1);
  });

  it('an unknown reference is a 400 naming the id, with param at its input index', async () => {
    rig = await startRig({ script: [] });
    const response = await rig.raw('/v1/responses', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
      body: JSON.stringify({
        model: 'hermes-agent',
        input: [
          { role: 'user', content: 'hi' },
          { type: 'item_reference', id: 'msg_doesnotexist' },
          { role: 'user', content: 'again' },
        ],
      }),
    });
    expect(response.status).toBe(400);
    const body = (await response.json()) as { error: Record<string, unknown> };
    expect(body.error).toMatchObject({ type: 'invalid_request_error', code: 'item_not_found', param: 'input[1]' });
    expect(String(body.error.message)).toContain('msg_doesnotexist');
    expect(rig.host.model.calls).toHaveLength(0);
  });
});

describe('@openai/agents 0.20.0', () => {
  const runnerFor = (base: string) =>
    new Runner({ modelProvider: new OpenAIProvider({ baseURL: `${base}/v1`, apiKey: KEY, useResponses: true }) });

  it('run: the server-run call is a hosted tool call, the agent finishes, and its own tool never runs', async () => {
    rig = await startRig({ script: toolScript() });
    const calls: unknown[] = [];
    const agent = new Agent({
      name: 'hermes',
      model: 'hermes-agent',
      tools: [
        agentTool({
          name: 'client_echo',
          description: 'Echoes a text.',
          parameters: z.object({ text: z.string() }),
          execute: async (input) => {
            calls.push(input);
            return 'client ran it';
          },
        }),
      ],
    });
    const result = await runnerFor(rig.base).run(agent, 'list files');
    expect(result.finalOutput).toContain('Done');
    expect(calls).toEqual([]);
    const hosted = result.newItems.map((item) => item.rawItem).find((raw) => raw.type === 'hosted_tool_call');
    expect(hosted).toMatchObject({ type: 'hosted_tool_call', name: 'mcp_call', output: 'README.md' });
    expect(rig.host.model.calls).toHaveLength(2);
  });

  it("a follow-up run over the first run's history (with the hosted call in it) is accepted", async () => {
    rig = await startRig({ script: [...toolScript(), step(text('You are welcome.'))] });
    const agent = new Agent({ name: 'hermes', model: 'hermes-agent' });
    const runner = runnerFor(rig.base);
    const first = await runner.run(agent, 'list files');
    const second = await runner.run(agent, [...first.history, { role: 'user', content: 'thanks' }]);
    expect(second.finalOutput).toBe('You are welcome.');
  });

  it('run with stream: true, and an agent with no tools at all (the "Tool terminal not found" case)', async () => {
    rig = await startRig({ script: toolScript() });
    const agent = new Agent({ name: 'hermes', model: 'hermes-agent' });
    const result = await runnerFor(rig.base).run(agent, 'list files', { stream: true });
    const events: string[] = [];
    for await (const event of result) events.push(event.type);
    await result.completed;
    expect(result.error).toBeNull();
    expect(result.finalOutput).toContain('Done');
    expect(events).toContain('run_item_stream_event');
    expect(result.newItems.some((item) => item.rawItem.type === 'hosted_tool_call')).toBe(true);
  });
});
