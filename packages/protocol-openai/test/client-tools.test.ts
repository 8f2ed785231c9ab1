// Issue 35.2, ADR 0052: the clients' own function tools on chat completions and Responses. Each client declares a
// tool, the scripted model calls it, the client's own code runs it, and the model's next step receives exactly what
// that code returned (the step's `expect` fails the call otherwise) and answers with it.
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { type RecordedCall, type ScriptStep, step, text, toolCall } from '@hermes/core/testing';
import { type AIMessage, type BaseMessage, HumanMessage, ToolMessage } from '@langchain/core/messages';
import { tool as langchainTool } from '@langchain/core/tools';
import { ChatOpenAI } from '@langchain/openai';
import { Agent, tool as agentTool, OpenAIProvider, Runner, setTracingDisabled } from '@openai/agents';
import { generateText, jsonSchema, stepCountIs, streamText, tool } from 'ai';
import OpenAI from 'openai';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ChatCompletionChunkSchema, ChatCompletionSchema, ResponseObjectSchema } from '../src/wire/index.js';
import { dataOf, KEY, type Rig, readFrames, startRig } from './harness.js';

let rig: Rig | null = null;
afterEach(async () => {
  await rig?.close();
  rig = null;
});
beforeAll(() => setTracingDisabled(true));

const TIMEOUT = 60_000;

/** What the client's own tool returns for a city: the model's answer must carry it. */
const forecast = (city: string) => `${city}: 3 degrees, light snow`;

const weatherParameters = {
  type: 'object',
  properties: { city: { type: 'string' } },
  required: ['city'],
  additionalProperties: false,
} as const;

/** The results of the prompt's tool messages, as `name=text`. */
function toolResults(call: RecordedCall): string[] {
  const results: string[] = [];
  for (const message of call.messages as { role: string; content: unknown }[]) {
    if (message.role !== 'tool' || !Array.isArray(message.content)) continue;
    for (const part of message.content as { toolName: string; output: { value: unknown } }[])
      results.push(
        `${part.toolName}=${typeof part.output.value === 'string' ? part.output.value : JSON.stringify(part.output.value)}`,
      );
  }
  return results;
}

/** The model's step after the client ran its tool: it must see that result last, and answers with it. */
function answerWith(result: string): ScriptStep {
  return {
    ...step(text(`The forecast says ${result}.`)),
    expect: (call) => {
      const last = toolResults(call).at(-1) ?? '';
      if (!last.startsWith('get_weather=') || !last.includes(result))
        throw new Error(`the model did not receive the client's result: ${JSON.stringify(toolResults(call))}`);
    },
  };
}

const callWeather = (id?: string) => step(text('Let me check. '), toolCall('get_weather', { city: 'Oslo' }, id));

describe('raw openai client, chat completions', () => {
  const chatTools: OpenAI.Chat.Completions.ChatCompletionTool[] = [
    {
      type: 'function',
      function: { name: 'get_weather', description: 'The weather in a city.', parameters: weatherParameters },
    },
  ];

  it(
    'without a session header: tool_calls with finish_reason tool_calls, then the tool message continues the turn',
    async () => {
      rig = await startRig({ script: [callWeather('call_w1'), answerWith(forecast('Oslo'))] });
      const messages: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [
        { role: 'user', content: 'Weather in Oslo?' },
      ];
      const first = await rig.client.chat.completions.create({ model: 'hermes-agent', messages, tools: chatTools });
      ChatCompletionSchema.parse(first);
      const choice = first.choices[0];
      expect(choice?.finish_reason).toBe('tool_calls');
      expect(choice?.message.content).toBe('Let me check. ');
      expect(choice?.message.tool_calls).toEqual([
        { id: 'call_w1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } },
      ]);
      // The model was offered the client's tool with its schema, beside the server's own.
      const offered = rig.host.model.calls[0]?.tools ?? [];
      expect(offered.find((entry) => entry.name === 'get_weather')?.schema).toEqual(weatherParameters);
      expect(offered.map((entry) => entry.name)).toContain('test_echo');

      const call = choice?.message.tool_calls?.[0] as OpenAI.Chat.Completions.ChatCompletionMessageFunctionToolCall;
      const ran = forecast(JSON.parse(call.function.arguments).city);
      messages.push(choice?.message as OpenAI.Chat.Completions.ChatCompletionMessageParam, {
        role: 'tool',
        tool_call_id: call.id,
        content: ran,
      });
      const { data: second, response } = await rig.client.chat.completions
        .create({ model: 'hermes-agent', messages, tools: chatTools })
        .withResponse();
      expect(second.choices[0]?.finish_reason).toBe('stop');
      expect(second.choices[0]?.message.content).toBe(`The forecast says ${ran}.`);
      expect(second.choices[0]?.message.tool_calls).toBeUndefined();
      // Both requests recorded into one derived session, which holds the whole turn in order.
      const derived = response.headers.get('x-hermes-session-id') as string;
      const rows = await rig.host.store.loadConversation(derived);
      expect(rows.map((row) => row.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
      expect(rows[2]).toMatchObject({ toolCallId: 'call_w1', content: ran });
    },
    TIMEOUT,
  );

  it(
    'with X-Hermes-Session-Id: the stored session keeps the open turn; a server tool in the same step runs first',
    async () => {
      rig = await startRig({
        script: [
          step(
            toolCall('test_echo', { text: 'server side' }, 'call_s'),
            toolCall('get_weather', { city: 'Oslo' }, 'call_c'),
          ),
          answerWith(forecast('Oslo')),
        ],
      });
      const headers = { 'X-Hermes-Session-Id': 'client-tools-1' };
      const first = await rig.client.chat.completions.create(
        { model: 'hermes-agent', messages: [{ role: 'user', content: 'go' }], tools: chatTools },
        { headers },
      );
      // Only the client's call comes back; the server ran its own.
      expect(first.choices[0]?.message.tool_calls?.map((call) => call.id)).toEqual(['call_c']);
      // With the header the body history is ignored: the tool message alone continues the stored turn.
      const second = await rig.client.chat.completions.create(
        {
          model: 'hermes-agent',
          messages: [
            { role: 'user', content: 'go' },
            first.choices[0]?.message as OpenAI.Chat.Completions.ChatCompletionMessageParam,
            { role: 'tool', tool_call_id: 'call_c', content: forecast('Oslo') },
          ],
          tools: chatTools,
        },
        { headers },
      );
      expect(second.choices[0]?.message.content).toBe(`The forecast says ${forecast('Oslo')}.`);
      expect(toolResults(rig.host.model.calls[1] as RecordedCall)).toEqual([
        'test_echo=server side',
        `get_weather=${forecast('Oslo')}`,
      ]);
      const rows = await rig.host.store.loadConversation('client-tools-1');
      expect(rows.map((row) => row.role)).toEqual(['user', 'assistant', 'tool', 'tool', 'assistant']);
      expect(new Set(rows.map((row) => row.turnId)).size).toBe(1);
    },
    TIMEOUT,
  );

  it(
    'without a header, a server tool run in the same step survives: the open turn comes from the derived session',
    async () => {
      rig = await startRig({
        script: [
          step(
            toolCall('test_echo', { text: 'server side' }, 'call_s'),
            toolCall('get_weather', { city: 'Oslo' }, 'call_c'),
          ),
          answerWith(forecast('Oslo')),
          step(toolCall('get_weather', { city: 'Rome' }, 'call_c2')),
          answerWith(forecast('Rome')),
        ],
      });
      const opening: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'go' },
      ];
      const { data: first, response } = await rig.client.chat.completions
        .create({ model: 'hermes-agent', messages: opening, tools: chatTools })
        .withResponse();
      const derived = response.headers.get('x-hermes-session-id') as string;
      const continued = [
        ...opening,
        first.choices[0]?.message as OpenAI.Chat.Completions.ChatCompletionMessageParam,
        { role: 'tool' as const, tool_call_id: 'call_c', content: forecast('Oslo') },
      ];
      const second = await rig.client.chat.completions.create({
        model: 'hermes-agent',
        messages: continued,
        tools: chatTools,
      });
      expect(second.choices[0]?.message.content).toBe(`The forecast says ${forecast('Oslo')}.`);
      expect(toolResults(rig.host.model.calls[1] as RecordedCall)).toEqual([
        'test_echo=server side',
        `get_weather=${forecast('Oslo')}`,
      ]);
      const rows = await rig.host.store.loadConversation(derived);
      expect(rows.map((row) => row.role)).toEqual(['user', 'assistant', 'tool', 'tool', 'assistant']);
      expect(new Set(rows.map((row) => row.turnId)).size).toBe(1);

      // Once the derived session is gone, the body's copy of the open turn is what the model gets.
      const fresh = [
        ...continued,
        second.choices[0]?.message as OpenAI.Chat.Completions.ChatCompletionMessageParam,
        { role: 'user' as const, content: 'and Rome?' },
      ];
      const third = await rig.client.chat.completions.create({
        model: 'hermes-agent',
        messages: fresh,
        tools: chatTools,
      });
      expect((await rig.raw(`/api/sessions/${derived}`, { method: 'DELETE' })).status).toBe(200);
      const fourth = await rig.client.chat.completions.create({
        model: 'hermes-agent',
        messages: [
          ...fresh,
          third.choices[0]?.message as OpenAI.Chat.Completions.ChatCompletionMessageParam,
          { role: 'tool', tool_call_id: 'call_c2', content: forecast('Rome') },
        ],
        tools: chatTools,
      });
      expect(fourth.choices[0]?.message.content).toBe(`The forecast says ${forecast('Rome')}.`);
      expect(toolResults(rig.host.model.calls[3] as RecordedCall)).toEqual([`get_weather=${forecast('Rome')}`]);
    },
    TIMEOUT,
  );

  it(
    'streaming: the calls are tool_calls deltas (index, id, type, name, arguments) and the finish chunk says tool_calls',
    async () => {
      rig = await startRig({
        script: [
          step(
            text('Two cities. '),
            toolCall('get_weather', { city: 'Oslo' }, 'call_a'),
            toolCall('get_weather', { city: 'Rome' }, 'call_b'),
          ),
          {
            ...step(text('Oslo and Rome done.')),
            expect: (call) => {
              expect(toolResults(call)).toEqual([`get_weather=${forecast('Oslo')}`, `get_weather=${forecast('Rome')}`]);
            },
          },
        ],
      });
      const body = {
        model: 'hermes-agent',
        stream: true,
        messages: [{ role: 'user', content: 'Oslo and Rome?' }],
        tools: chatTools,
      };
      const response = await rig.raw('/v1/chat/completions', { method: 'POST', body: JSON.stringify(body) });
      const chunks = (await readFrames(response)).map(dataOf) as (Record<string, unknown> | string)[];
      expect(chunks.at(-1)).toBe('[DONE]');
      for (const chunk of chunks.slice(0, -1)) ChatCompletionChunkSchema.parse(chunk);
      const deltas = chunks
        .slice(0, -1)
        .map(
          (chunk) =>
            (chunk as { choices: { delta: Record<string, unknown>; finish_reason: string | null }[] }).choices[0],
        );
      expect(deltas[0]?.delta).toEqual({ role: 'assistant', content: '' });
      const callDeltas = deltas.filter((delta) => delta?.delta.tool_calls);
      expect(callDeltas.map((delta) => delta?.delta.tool_calls)).toEqual([
        [{ index: 0, id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }],
        [{ index: 1, id: 'call_b', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Rome"}' } }],
      ]);
      expect(callDeltas.every((delta) => delta?.finish_reason === null)).toBe(true);
      expect(deltas.at(-1)).toEqual({ index: 0, delta: {}, logprobs: null, finish_reason: 'tool_calls' });
      expect(
        deltas
          .map((delta) => delta?.delta.content)
          .filter(Boolean)
          .join(''),
      ).toBe('Two cities. ');

      // The official client's stream helper accumulates the same calls; the continuation streams the answer.
      const messages: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [
        { role: 'user', content: 'Oslo and Rome?' },
        {
          role: 'assistant',
          content: 'Two cities. ',
          tool_calls: [
            { id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } },
            { id: 'call_b', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Rome"}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_a', content: forecast('Oslo') },
        { role: 'tool', tool_call_id: 'call_b', content: forecast('Rome') },
      ];
      const stream = await rig.client.chat.completions.create({
        model: 'hermes-agent',
        messages,
        tools: chatTools,
        stream: true,
      });
      let answer = '';
      let finish: string | null = null;
      for await (const chunk of stream) {
        answer += chunk.choices[0]?.delta.content ?? '';
        finish = chunk.choices[0]?.finish_reason ?? finish;
      }
      expect(answer).toBe('Oslo and Rome done.');
      expect(finish).toBe('stop');
    },
    TIMEOUT,
  );

  it('a client tool named like a server tool is a 400 invalid_field on tools, and nothing runs', async () => {
    rig = await startRig({ script: [step(text('never'))] });
    const response = await rig.raw('/v1/chat/completions', {
      method: 'POST',
      body: JSON.stringify({
        model: 'hermes-agent',
        messages: [{ role: 'user', content: 'go' }],
        tools: [{ type: 'function', function: { name: 'test_echo', parameters: { type: 'object' } } }],
      }),
    });
    expect(response.status).toBe(400);
    const body = (await response.json()) as { error: Record<string, unknown> };
    expect(body.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_field', param: 'tools' });
    expect(String(body.error.message)).toContain('test_echo');
    expect(rig.host.model.calls).toHaveLength(0);
  });

  it('tool_choice: a named function forces the first step; none keeps the client tools from the model', async () => {
    rig = await startRig({ script: [callWeather(), answerWith(forecast('Oslo')), step(text('No tools.'))] });
    const named = await rig.client.chat.completions.create({
      model: 'hermes-agent',
      messages: [{ role: 'user', content: 'go' }],
      tools: chatTools,
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
    });
    expect(rig.host.model.calls[0]?.options.toolChoice).toEqual({ type: 'tool', toolName: 'get_weather' });
    const call = named.choices[0]?.message
      .tool_calls?.[0] as OpenAI.Chat.Completions.ChatCompletionMessageFunctionToolCall;
    await rig.client.chat.completions.create({
      model: 'hermes-agent',
      messages: [
        { role: 'user', content: 'go' },
        named.choices[0]?.message as OpenAI.Chat.Completions.ChatCompletionMessageParam,
        { role: 'tool', tool_call_id: call.id, content: forecast('Oslo') },
      ],
      tools: chatTools,
      tool_choice: 'auto',
    });
    expect(rig.host.model.calls[1]?.options.toolChoice).toBeUndefined();
    const none = await rig.client.chat.completions.create({
      model: 'hermes-agent',
      messages: [{ role: 'user', content: 'again' }],
      tools: chatTools,
      tool_choice: 'none',
    });
    expect(none.choices[0]?.message.content).toBe('No tools.');
    expect(rig.host.model.calls[2]?.tools.map((entry) => entry.name)).not.toContain('get_weather');
    const unknown = await rig.raw('/v1/chat/completions', {
      method: 'POST',
      body: JSON.stringify({
        messages: [{ role: 'user', content: 'go' }],
        tools: chatTools,
        tool_choice: { type: 'function', function: { name: 'nope' } },
      }),
    });
    expect(unknown.status).toBe(400);
    expect(((await unknown.json()) as { error: { param: string } }).error.param).toBe('tool_choice');
  });

  it('a tool message that answers no waiting call is a 400 naming it; with the header the results alone continue', async () => {
    rig = await startRig({ script: [callWeather('call_w1'), answerWith(forecast('Oslo'))] });
    const headers = { 'X-Hermes-Session-Id': 'client-tools-2' };
    await rig.client.chat.completions.create(
      { model: 'hermes-agent', messages: [{ role: 'user', content: 'go' }], tools: chatTools },
      { headers },
    );
    const response = await rig.raw('/v1/chat/completions', {
      method: 'POST',
      headers,
      body: JSON.stringify({
        messages: [
          { role: 'user', content: 'go' },
          { role: 'tool', tool_call_id: 'call_other', content: 'x' },
        ],
        tools: chatTools,
      }),
    });
    expect(response.status).toBe(400);
    const body = (await response.json()) as { error: Record<string, unknown> };
    expect(body.error).toMatchObject({ code: 'invalid_field', param: 'messages[1].tool_call_id' });
    expect(String(body.error.message)).toContain('call_other');
    expect(rig.host.model.calls).toHaveLength(1);
    const alone = await rig.client.chat.completions.create(
      { model: 'hermes-agent', messages: [{ role: 'tool', tool_call_id: 'call_w1', content: forecast('Oslo') }] },
      { headers },
    );
    expect(alone.choices[0]?.message.content).toBe(`The forecast says ${forecast('Oslo')}.`);
  });
});

describe('raw openai client, Responses', () => {
  const responseTools: OpenAI.Responses.FunctionTool[] = [
    {
      type: 'function',
      name: 'get_weather',
      description: 'The weather in a city.',
      parameters: weatherParameters,
      strict: true,
    },
  ];

  it(
    'create: a function_call item, status completed; function_call_output with previous_response_id continues',
    async () => {
      rig = await startRig({ script: [callWeather('call_r1'), answerWith(forecast('Oslo'))] });
      const first = await rig.client.responses.create({
        model: 'hermes-agent',
        input: 'Weather in Oslo?',
        tools: responseTools,
      });
      expect(first.status).toBe('completed');
      ResponseObjectSchema.parse(first);
      const call = first.output.find(
        (item) => item.type === 'function_call',
      ) as OpenAI.Responses.ResponseFunctionToolCall;
      expect(call).toMatchObject({
        type: 'function_call',
        status: 'completed',
        call_id: 'call_r1',
        name: 'get_weather',
        arguments: '{"city":"Oslo"}',
      });
      expect(call.id).toMatch(/^fc_/);
      expect(first.tools).toEqual([expect.objectContaining({ type: 'function', name: 'get_weather' })]);
      const ran = forecast(JSON.parse(call.arguments).city);
      const { data: second, response } = await rig.client.responses
        .create({
          model: 'hermes-agent',
          previous_response_id: first.id,
          input: [{ type: 'function_call_output', call_id: call.call_id, output: ran }],
          tools: responseTools,
        })
        .withResponse();
      expect(second.status).toBe('completed');
      expect(second.output_text).toBe(`The forecast says ${ran}.`);
      expect(second.previous_response_id).toBe(first.id);
      // The chained session holds one turn: prompt, call, the client's result, answer.
      const rows = await rig.host.store.loadConversation(response.headers.get('x-hermes-session-id') as string);
      expect(rows.map((row) => row.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
      expect(new Set(rows.map((row) => row.turnId)).size).toBe(1);
    },
    TIMEOUT,
  );

  it(
    'stream: the function_call item events, then response.completed; the full input (store: false) continues too',
    async () => {
      rig = await startRig({ script: [callWeather('call_r2'), answerWith(forecast('Oslo'))] });
      const stream = await rig.client.responses.create({
        model: 'hermes-agent',
        input: 'Weather in Oslo?',
        tools: responseTools,
        store: false,
        stream: true,
      });
      const events: { type: string; [key: string]: unknown }[] = [];
      for await (const event of stream) events.push(event as never);
      const types = events.map((event) => event.type);
      const callEvents = types.slice(types.lastIndexOf('response.output_item.added'));
      expect(callEvents).toEqual([
        'response.output_item.added',
        'response.function_call_arguments.delta',
        'response.function_call_arguments.done',
        'response.output_item.done',
        'response.completed',
      ]);
      expect(events.at(-3)).toMatchObject({ arguments: '{"city":"Oslo"}' });
      expect(events.at(-2)).toMatchObject({ item: { type: 'function_call', status: 'completed', call_id: 'call_r2' } });
      const completed = events.at(-1) as unknown as { response: OpenAI.Responses.Response };
      const call = completed.response.output.find(
        (item) => item.type === 'function_call',
      ) as OpenAI.Responses.ResponseFunctionToolCall;
      const second = await rig.client.responses.create({
        model: 'hermes-agent',
        store: false,
        input: [
          { role: 'user', content: 'Weather in Oslo?' },
          ...(completed.response.output as OpenAI.Responses.ResponseInputItem[]),
          { type: 'function_call_output', call_id: call.call_id, output: forecast('Oslo') },
        ],
        tools: responseTools,
      });
      expect(second.output_text).toBe(`The forecast says ${forecast('Oslo')}.`);
    },
    TIMEOUT,
  );

  it(
    'a step with a server tool and a client tool: message, mcp_call, then function_call; both results reach the model',
    async () => {
      rig = await startRig({
        script: [
          step(
            text('Both. '),
            toolCall('test_echo', { text: 'server side' }, 'call_s'),
            toolCall('get_weather', { city: 'Oslo' }, 'call_c'),
          ),
          answerWith(forecast('Oslo')),
        ],
      });
      const first = await rig.client.responses.create({ model: 'hermes-agent', input: 'go', tools: responseTools });
      expect(first.output.map((item) => item.type)).toEqual(['message', 'mcp_call', 'function_call']);
      expect(first.output[1]).toMatchObject({ name: 'test_echo', output: 'server side', status: 'completed' });
      const second = await rig.client.responses.create({
        model: 'hermes-agent',
        previous_response_id: first.id,
        input: [{ type: 'function_call_output', call_id: 'call_c', output: forecast('Oslo') }],
        tools: responseTools,
      });
      expect(second.output_text).toBe(`The forecast says ${forecast('Oslo')}.`);
      expect(toolResults(rig.host.model.calls[1] as RecordedCall)).toEqual([
        'test_echo=server side',
        `get_weather=${forecast('Oslo')}`,
      ]);
    },
    TIMEOUT,
  );

  it('a function_call_output for a call nobody made is a 400 naming it', async () => {
    rig = await startRig({ script: [callWeather('call_r3')] });
    const first = await rig.client.responses.create({ model: 'hermes-agent', input: 'go', tools: responseTools });
    const response = await rig.raw('/v1/responses', {
      method: 'POST',
      body: JSON.stringify({
        previous_response_id: first.id,
        input: [{ type: 'function_call_output', call_id: 'call_other', output: 'x' }],
        tools: responseTools,
      }),
    });
    expect(response.status).toBe(400);
    const body = (await response.json()) as { error: Record<string, unknown> };
    expect(body.error).toMatchObject({ code: 'invalid_field', param: 'input[0].call_id' });
  });
});

describe('AI SDK generateText with tools and stopWhen', () => {
  const weatherTool = (runs: unknown[]) =>
    tool({
      description: 'The weather in a city.',
      inputSchema: jsonSchema<{ city: string }>(weatherParameters as never),
      execute: async ({ city }) => {
        runs.push(city);
        return forecast(city);
      },
    });

  it(
    'openai-compatible provider (chat completions): execute runs, and the final answer uses its result',
    async () => {
      rig = await startRig({ script: [callWeather(), answerWith(forecast('Oslo'))] });
      const provider = createOpenAICompatible({ name: 'hermes', baseURL: `${rig.base}/v1`, apiKey: KEY });
      const runs: unknown[] = [];
      const result = await generateText({
        model: provider('hermes-agent'),
        prompt: 'Weather in Oslo?',
        tools: { get_weather: weatherTool(runs) },
        stopWhen: stepCountIs(5),
      });
      expect(runs).toEqual(['Oslo']);
      expect(result.steps).toHaveLength(2);
      expect(result.steps[0]?.finishReason).toBe('tool-calls');
      expect(result.text).toContain(forecast('Oslo'));
      // Both steps recorded one turn into the conversation's derived session.
      const derived = result.steps[1]?.response.headers?.['x-hermes-session-id'] as string;
      const rows = await rig.host.store.loadConversation(derived);
      expect(rows.map((row) => row.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
      expect(new Set(rows.map((row) => row.turnId)).size).toBe(1);
    },
    TIMEOUT,
  );

  it(
    'streamText over the openai-compatible provider reads the streamed tool_calls deltas and runs the tool',
    async () => {
      rig = await startRig({ script: [callWeather(), answerWith(forecast('Oslo'))] });
      const provider = createOpenAICompatible({ name: 'hermes', baseURL: `${rig.base}/v1`, apiKey: KEY });
      const runs: unknown[] = [];
      const result = streamText({
        model: provider('hermes-agent'),
        prompt: 'Weather in Oslo?',
        tools: { get_weather: weatherTool(runs) },
        stopWhen: stepCountIs(5),
      });
      const parts: { type: string }[] = [];
      for await (const part of result.fullStream) parts.push(part);
      expect(parts.filter((part) => part.type === 'error')).toEqual([]);
      expect(runs).toEqual(['Oslo']);
      expect(await result.text).toContain(forecast('Oslo'));
      expect((await result.steps)[0]?.finishReason).toBe('tool-calls');
    },
    TIMEOUT,
  );

  it(
    '@ai-sdk/openai .responses() (store on: the calls come back as item references): execute runs, the answer uses it',
    async () => {
      rig = await startRig({ script: [callWeather(), answerWith(forecast('Oslo'))] });
      const openai = createOpenAI({ baseURL: `${rig.base}/v1`, apiKey: KEY });
      const runs: unknown[] = [];
      const result = await generateText({
        model: openai.responses('hermes-agent'),
        prompt: 'Weather in Oslo?',
        tools: { get_weather: weatherTool(runs) },
        stopWhen: stepCountIs(5),
      });
      expect(runs).toEqual(['Oslo']);
      expect(result.steps).toHaveLength(2);
      expect(result.text).toContain(forecast('Oslo'));
      // The continuation ran in the first response's session, found through the referenced call item.
      const sessions = result.steps.map((entry) => entry.response.headers?.['x-hermes-session-id']);
      expect(sessions[0]).toBeTruthy();
      expect(sessions[1]).toBe(sessions[0]);
      const prompt = rig.host.model.calls[1]?.messages as { role: string }[];
      expect(prompt.filter((message) => message.role === 'user')).toHaveLength(1);
    },
    TIMEOUT,
  );
});

describe('@openai/agents with a function tool', () => {
  it(
    'the agent runs its own tool and its final output uses the result',
    async () => {
      rig = await startRig({ script: [callWeather(), answerWith(forecast('Oslo'))] });
      const runs: string[] = [];
      const agent = new Agent({
        name: 'weather',
        model: 'hermes-agent',
        tools: [
          agentTool({
            name: 'get_weather',
            description: 'The weather in a city.',
            parameters: z.object({ city: z.string() }),
            execute: async ({ city }) => {
              runs.push(city);
              return forecast(city);
            },
          }),
        ],
      });
      const sessions: (string | null)[] = [];
      const client = new OpenAI({
        baseURL: `${rig.base}/v1`,
        apiKey: KEY,
        fetch: async (url, init) => {
          const response = await fetch(url, init);
          sessions.push(response.headers.get('x-hermes-session-id'));
          return response;
        },
      });
      // The Agents SDK bundles its own openai major: the client is the same at run time, a different type.
      const runner = new Runner({
        modelProvider: new OpenAIProvider({ openAIClient: client as never, useResponses: true }),
      });
      const result = await runner.run(agent, 'Weather in Oslo?');
      expect(runs).toEqual(['Oslo']);
      expect(result.finalOutput).toBe(`The forecast says ${forecast('Oslo')}.`);
      // It sends the whole conversation again; its `fc_…` call item leads to the first response's session.
      expect(sessions).toHaveLength(2);
      expect(sessions[1]).toBe(sessions[0]);
    },
    TIMEOUT,
  );
});

describe('LangChain ChatOpenAI.bindTools with a tool loop', () => {
  it(
    'the loop runs the tool the model called and the last message uses its result',
    async () => {
      rig = await startRig({ script: [callWeather(), answerWith(forecast('Oslo'))] });
      const runs: string[] = [];
      const weather = langchainTool(
        async ({ city }: { city: string }) => {
          runs.push(city);
          return forecast(city);
        },
        { name: 'get_weather', description: 'The weather in a city.', schema: z.object({ city: z.string() }) },
      );
      const model = new ChatOpenAI({
        model: 'hermes-agent',
        apiKey: KEY,
        configuration: { baseURL: `${rig.base}/v1` },
      }).bindTools([weather]);
      const messages: BaseMessage[] = [new HumanMessage('Weather in Oslo?')];
      let reply = (await model.invoke(messages)) as AIMessage;
      for (let round = 0; round < 5 && (reply.tool_calls?.length ?? 0) > 0; round += 1) {
        messages.push(reply);
        for (const call of reply.tool_calls ?? []) {
          const output = await weather.invoke(call.args as { city: string });
          messages.push(new ToolMessage({ content: String(output), tool_call_id: call.id as string }));
        }
        reply = (await model.invoke(messages)) as AIMessage;
      }
      expect(runs).toEqual(['Oslo']);
      expect(reply.content).toBe(`The forecast says ${forecast('Oslo')}.`);
    },
    TIMEOUT,
  );
});
