import { Writable } from 'node:stream';
import type { AgentEvent, TurnResult } from '@hermes/core';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseApprovalAnswer, parseClarifyAnswer } from '../src/chat/answers.js';
import { loadHighlighter } from '../src/chat/highlight.js';
import { ChatOutput } from '../src/chat/output.js';
import { formatStatusLine, formatTokens, renderDiff, summarizeResult, TurnRenderer } from '../src/chat/render.js';
import { createPalette, shouldUseColor, stripAnsi } from '../src/chat/style.js';

beforeAll(loadHighlighter);

function memoryOutput(color: boolean): { output: ChatOutput; text: () => string } {
  let written = '';
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      written += chunk.toString();
      callback();
    },
  });
  return { output: new ChatOutput(stream, createPalette(color), false), text: () => written };
}

function event<T extends AgentEvent['type']>(
  type: T,
  payload: Omit<Extract<AgentEvent, { type: T }>, 'type' | 'sessionId' | 'turnId' | 'seq' | 'ts'>,
): AgentEvent {
  return { type, sessionId: 's', turnId: 't', seq: 1, ts: 0, ...payload } as unknown as AgentEvent;
}

const usage = {
  inputTokens: 1234,
  outputTokens: 56,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  reasoningTokens: 0,
  totalTokens: 1290,
  apiCalls: 1,
};

describe('chat colors', () => {
  it('uses colors only on a terminal without NO_COLOR', () => {
    expect(shouldUseColor({ isTTY: true }, {})).toBe(true);
    expect(shouldUseColor({ isTTY: true }, { NO_COLOR: '1' })).toBe(false);
    expect(shouldUseColor({ isTTY: true }, { NO_COLOR: '' })).toBe(true);
    expect(shouldUseColor({ isTTY: false }, {})).toBe(false);
    expect(shouldUseColor({}, {})).toBe(false);
  });

  it('a disabled palette returns text unchanged and an enabled one wraps it in SGR codes', () => {
    expect(createPalette(false).red('x')).toBe('x');
    expect(createPalette(true).red('x')).toBe('\x1b[31mx\x1b[39m');
    expect(stripAnsi(createPalette(true).dim(createPalette(true).bold('x')))).toBe('x');
  });
});

describe('chat rendering', () => {
  it('colors a unified diff and summarizes lines beyond the limit', () => {
    const diff = {
      path: 'a.txt',
      oldText: 'old\n',
      newText: 'new\n',
      unified: '--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-old\n+new\n same\n',
    };
    const colored = renderDiff(diff, createPalette(true));
    expect(colored).toContain('\x1b[31m-old\x1b[39m');
    expect(colored).toContain('\x1b[32m+new\x1b[39m');
    expect(colored).toContain('\x1b[36m@@ -1 +1 @@\x1b[39m');
    expect(renderDiff(diff, createPalette(false), 3)).toBe(
      '--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n… 3 more diff lines',
    );
  });

  it('summarizes a tool result as its first line, cut to the limit', () => {
    expect(summarizeResult('\n  first line\nsecond')).toBe('first line …');
    expect(summarizeResult('only')).toBe('only');
    expect(summarizeResult('')).toBe('');
    expect(summarizeResult('x'.repeat(200), 10)).toBe(`${'x'.repeat(9)}…`);
  });

  it('formats the status line with model, session, tokens and context', () => {
    expect(formatTokens(999)).toBe('999');
    expect(formatTokens(1234)).toBe('1.2k');
    expect(formatTokens(2_500_000)).toBe('2.5M');
    const line = formatStatusLine(
      { model: 'custom:scripted', session: 'Notes', usage, contextRatio: 0.042, costUsd: null },
      createPalette(false),
    );
    expect(line).toBe('─ custom:scripted · Notes · 1.2k in / 56 out · context 4%');
  });

  it('streams text, dims reasoning, and shows tool calls with their result and diff', () => {
    const { output, text } = memoryOutput(true);
    const renderer = new TurnRenderer(output);
    renderer.render(event('reasoning.delta', { messageId: 'm', text: 'hmm' }));
    renderer.render(event('reasoning.end', { messageId: 'm', text: 'hmm' }));
    renderer.render(event('message.delta', { messageId: 'm', text: 'Hel' }));
    renderer.render(event('message.delta', { messageId: 'm', text: 'lo' }));
    renderer.render(
      event('tool.start', {
        callId: 'c',
        name: 'write_file',
        args: {},
        kind: 'edit',
        title: 'Write a.txt',
        locations: [],
        parallel: false,
        batchIndex: 0,
        batchSize: 1,
      }),
    );
    renderer.render(
      event('tool.end', {
        callId: 'c',
        name: 'write_file',
        status: 'completed',
        result: 'Created a.txt',
        truncated: false,
        durationMs: 5,
        rowId: null,
        diffs: [
          { path: 'a.txt', oldText: null, newText: 'x\n', unified: '--- /dev/null\n+++ b/a.txt\n@@ -0,0 +1 @@\n+x\n' },
        ],
      }),
    );
    const raw = text();
    expect(raw).toContain('\x1b[2mhmm\x1b[22m\n');
    expect(stripAnsi(raw)).toBe(
      'hmm\nHello\n⚙ Write a.txt\n  ✓ write_file (5 ms) Created a.txt\n--- /dev/null\n+++ b/a.txt\n@@ -0,0 +1 @@\n+x\n',
    );
  });

  it('reports a cancelled and a failed turn', () => {
    const { output, text } = memoryOutput(false);
    const renderer = new TurnRenderer(output);
    renderer.render(event('message.delta', { messageId: 'm', text: 'partial' }));
    renderer.finish({
      outcome: 'cancelled',
      interruptedBy: { issuer: 'user', reason: 'Ctrl-C', hard: false },
    } as TurnResult);
    renderer.finish({ outcome: 'failed', exitReason: 'provider_error', error: { message: 'boom' } } as TurnResult);
    expect(text()).toBe('partial\nInterrupted (Ctrl-C): the turn was cancelled.\nError: boom\n');
  });
});

describe('chat answers', () => {
  it('reads approval answers by letter or word, and an empty answer denies', () => {
    const choices = ['once', 'session', 'always', 'deny'] as const;
    expect(parseApprovalAnswer('o', [...choices])).toEqual({ ok: true, value: 'once' });
    expect(parseApprovalAnswer(' Session ', [...choices])).toEqual({ ok: true, value: 'session' });
    expect(parseApprovalAnswer('a', [...choices])).toEqual({ ok: true, value: 'always' });
    expect(parseApprovalAnswer('', [...choices])).toEqual({ ok: true, value: 'deny' });
    expect(parseApprovalAnswer('n', [...choices])).toEqual({ ok: true, value: 'deny' });
    expect(parseApprovalAnswer('a', ['once', 'session', 'deny'])).toMatchObject({ ok: false });
    expect(parseApprovalAnswer('maybe', [...choices])).toMatchObject({ ok: false });
  });

  it('reads clarify answers as choice numbers or free text, and an empty answer declines', () => {
    const choices = ['red', 'green', 'blue'];
    expect(parseClarifyAnswer('2', choices, false)).toEqual({ ok: true, value: 'green' });
    expect(parseClarifyAnswer('1, 3', choices, true)).toEqual({ ok: true, value: ['red', 'blue'] });
    expect(parseClarifyAnswer('1 3', choices, false)).toMatchObject({ ok: false });
    expect(parseClarifyAnswer('9', choices, false)).toMatchObject({ ok: false });
    expect(parseClarifyAnswer('BLUE', choices, false)).toEqual({ ok: true, value: 'blue' });
    expect(parseClarifyAnswer('purple', choices, false)).toEqual({ ok: true, value: 'purple' });
    expect(parseClarifyAnswer('anything', [], false)).toEqual({ ok: true, value: 'anything' });
    expect(parseClarifyAnswer('  ', choices, false)).toEqual({ ok: true, value: null });
  });
});
