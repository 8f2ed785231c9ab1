import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { collectTurn, createTestHost, step, type TestHost, text, toolCall } from '../../src/testing/index.js';
import { heldReads } from './helpers.js';

let host: TestHost | null = null;
afterEach(async () => {
  await host?.dispose();
  host = null;
});

function workspace(): string {
  const dir = mkdtempSync(join(tmpdir(), 'hermes-ws-'));
  writeFileSync(join(dir, 'x.txt'), 'contents');
  return dir;
}

function sse(events: Record<string, unknown>[]): Response {
  const body = events.map((event) => `event: ${String(event.type)}\ndata: ${JSON.stringify(event)}\n\n`).join('');
  return new Response(body, { status: 200, headers: { 'content-type': 'text/event-stream' } });
}

const start = {
  type: 'message_start',
  message: {
    id: 'msg_1',
    type: 'message',
    role: 'assistant',
    model: 'claude-sonnet-4-5',
    content: [],
    stop_reason: null,
    stop_sequence: null,
    usage: { input_tokens: 12, output_tokens: 1 },
  },
};

function anthropicToolCall(): Response {
  return sse([
    start,
    {
      type: 'content_block_start',
      index: 0,
      content_block: { type: 'tool_use', id: 'toolu_1', name: 'read_file', input: {} },
    },
    { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{"path":"x.txt"}' } },
    { type: 'content_block_stop', index: 0 },
    { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 5 } },
    { type: 'message_stop' },
  ]);
}

function anthropicText(value: string): Response {
  return sse([
    start,
    { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
    { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: value } },
    { type: 'content_block_stop', index: 0 },
    { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 3 } },
    { type: 'message_stop' },
  ]);
}

describe('strict alternation', () => {
  it('20. Anthropic: the steer text rides in the same user turn as the tool results and no request has two user turns in a row', async () => {
    const bodies: { messages: { role: string; content: { type: string; text?: string }[] | string }[] }[] = [];
    const responses = [anthropicToolCall(), anthropicText('Using tabs.')];
    const held = heldReads('contents');
    host = await createTestHost({
      env: { ANTHROPIC_API_KEY: 'sk-ant-test-key-0000' },
      config: { model: { default: 'anthropic:claude-sonnet-4-5' }, session: { auto_title: false } },
      fetch: async (_url, init) => {
        bodies.push(JSON.parse(String(init?.body)));
        const response = responses.shift();
        if (!response) throw new Error('unexpected request');
        return response;
      },
    });
    const agent = await host.newSession({
      cwd: workspace(),
      fileAccess: held.fileAccess,
    });
    const run = agent.runTurn({ text: 'format the file' });
    await held.started();
    agent.steer('use tabs');
    held.release();
    const { result } = await collectTurn(run);
    expect(result.outcome).toBe('completed');
    expect(bodies).toHaveLength(2);
    for (const body of bodies) {
      for (let index = 1; index < body.messages.length; index += 1) {
        expect(body.messages[index]!.role === 'user' && body.messages[index - 1]!.role === 'user').toBe(false);
      }
    }
    const last = bodies[1]!.messages.at(-1)!;
    expect(last.role).toBe('user');
    const blocks = last.content as { type: string; text?: string }[];
    expect(blocks.map((block) => block.type)).toEqual(['tool_result', 'text']);
    expect(blocks[1]!.text).toContain('use tabs');
  });

  it('20. a strict scripted provider never receives two consecutive user messages', async () => {
    const held = heldReads('contents');
    host = await createTestHost({
      strictAlternation: true,
      config: { session: { auto_title: false } },
      script: [step(toolCall('read_file', { path: 'x.txt' })), step(text('done'))],
    });
    const agent = await host.newSession({
      cwd: workspace(),
      fileAccess: held.fileAccess,
    });
    const run = agent.runTurn({ text: 'go' });
    await held.started();
    agent.steer('use tabs');
    held.release();
    const { result } = await collectTurn(run);
    expect(result.outcome).toBe('completed');
    const messages = host.model.calls[1]!.messages as { role: string }[];
    for (let index = 1; index < messages.length; index += 1) {
      expect(messages[index]!.role === 'user' && messages[index - 1]!.role === 'user').toBe(false);
    }
    expect(JSON.stringify(messages)).toContain('use tabs');
  });
});
