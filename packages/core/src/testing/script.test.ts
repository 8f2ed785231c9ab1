import { describe, expect, it } from 'vitest';
import {
  computeUsage,
  countChatMessagesCharacters,
  countPromptCharacters,
  delay,
  describeScriptedError,
  fail,
  hang,
  planStep,
  rawToolCall,
  reasoning,
  step,
  text,
  toolCall,
} from './script.js';
import { findAlternationViolation } from './strict-alternation.js';

describe('script builders', () => {
  it('build the parts of spec/core.md §22.1', () => {
    expect(
      step(
        text('hi'),
        text('chunked', 3),
        reasoning('why'),
        toolCall('read_file', { path: 'a' }),
        toolCall('todo', {}, 'call_1'),
        rawToolCall('patch', '{oops', 'call_2'),
        delay(250),
        fail(429, { retryAfterSeconds: 7 }),
        fail(),
        fail(undefined, { kind: 'context_overflow' }),
        hang(),
      ),
    ).toEqual({
      parts: [
        { text: 'hi' },
        { text: 'chunked', chunkSize: 3 },
        { reasoning: 'why' },
        { toolCall: { name: 'read_file', args: { path: 'a' } } },
        { toolCall: { name: 'todo', args: {}, id: 'call_1' } },
        { toolCall: { name: 'patch', args: undefined, rawArgs: '{oops', id: 'call_2' } },
        { delayMs: 250 },
        { error: { status: 429, retryAfterSeconds: 7 } },
        { error: {} },
        { error: { kind: 'context_overflow' } },
        { hang: true },
      ],
    });
  });

  it('planning drops parts after an error or a hang and infers the finish reason', () => {
    expect(planStep(step(text('a'), fail(500), text('never')), 1).actions).toEqual([
      { type: 'text', delta: 'a' },
      { type: 'error', error: { status: 500 } },
    ]);
    expect(planStep(step(hang(), text('never')), 1).actions).toEqual([{ type: 'hang' }]);
    expect(planStep(step(text('a')), 1).finishReason).toBe('stop');
    expect(planStep(step(toolCall('x', {})), 1).finishReason).toBe('tool-calls');
    expect(planStep({ ...step(toolCall('x', {})), finishReason: 'length' }, 1).finishReason).toBe('length');
  });

  it('default usage is 4 characters per token, rounded up, for prompt and output', () => {
    const scriptStep = step(reasoning('12345'), text('123456789'), toolCall('t', { a: 1 }));
    const plan = planStep(scriptStep, 1);
    expect(computeUsage(scriptStep, plan, 10)).toEqual({
      inputTokens: 3,
      outputTokens: 6, // text 9 + args 7 = 16 → 4; reasoning 5 → 2
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
      reasoningTokens: 2,
    });
    expect(computeUsage({ ...scriptStep, usage: { outputTokens: 1 } }, plan, 10)).toMatchObject({
      outputTokens: 1,
      reasoningTokens: 1,
    });
  });

  it('an AI SDK prompt and its OpenAI chat messages count the same characters', () => {
    const sdkPrompt = [
      { role: 'system', content: 'sys' },
      { role: 'user', content: [{ type: 'text', text: 'hello' }] },
      {
        role: 'assistant',
        content: [
          { type: 'reasoning', text: 'think' },
          { type: 'text', text: 'ok' },
          { type: 'tool-call', toolCallId: 'c', toolName: 't', input: { a: 1 } },
        ],
      },
      {
        role: 'tool',
        content: [{ type: 'tool-result', toolCallId: 'c', toolName: 't', output: { type: 'json', value: [1] } }],
      },
    ];
    const chatMessages = [
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'hello' },
      {
        role: 'assistant',
        content: 'ok',
        reasoning_content: 'think',
        tool_calls: [{ id: 'c', type: 'function', function: { name: 't', arguments: '{"a":1}' } }],
      },
      { role: 'tool', tool_call_id: 'c', content: '[1]' },
    ];
    expect(countPromptCharacters(sdkPrompt)).toBe(3 + 5 + 5 + 2 + 7 + 3);
    expect(countChatMessagesCharacters(chatMessages)).toBe(countPromptCharacters(sdkPrompt));
  });

  it('describes errors with the OpenAI envelope and lowercase headers', () => {
    expect(describeScriptedError({ status: 503, retryAfterSeconds: 2 }, 'm')).toEqual({
      status: 503,
      message: 'The server is overloaded or not ready yet.',
      type: 'server_error',
      code: null,
      headers: { 'content-type': 'application/json', 'retry-after': '2' },
      envelope: {
        error: { message: 'The server is overloaded or not ready yet.', type: 'server_error', param: null, code: null },
      },
    });
    expect(describeScriptedError({ status: 404 }, 'gpt-x').message).toBe(
      'The model `gpt-x` does not exist or you do not have access to it.',
    );
    expect(describeScriptedError({}, 'm').status).toBeUndefined();
  });
});

describe('findAlternationViolation', () => {
  const user = { role: 'user', content: [] };
  const tool = { role: 'tool', content: [] };
  const assistant = { role: 'assistant', content: [] };
  const system = { role: 'system', content: 'x' };

  it('flags consecutive user turns, skipping system messages', () => {
    expect(findAlternationViolation([system, user, assistant, user], true)).toBeUndefined();
    expect(findAlternationViolation([user, system, user], 'user-only')).toMatch(/message 2 \(user\)/);
    expect(findAlternationViolation([user, user], false)).toBeUndefined();
  });

  it('counts a tool turn as the user side only under the strict (true) rule', () => {
    expect(findAlternationViolation([user, assistant, tool, user], true)).toMatch(/follows message 2 \(tool\)/);
    expect(findAlternationViolation([user, assistant, tool, user], 'user-only')).toBeUndefined();
  });
});
