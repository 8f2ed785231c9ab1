import { describe, expect, it } from 'vitest';
import {
  completionContent,
  fencedBlock,
  planEntries,
  RESULT_TEXT_LIMIT,
  rawOutputOf,
  runningContent,
} from './tool-rendering.js';

describe('tool rendering', () => {
  it('a fence is longer than any backtick run inside the text', () => {
    expect(fencedBlock('a ```` b')).toBe('`````\na ```` b\n`````');
    expect(fencedBlock('plain', 'sh')).toBe('```sh\nplain\n```');
  });

  it('result text longer than the limit is cut and marked', () => {
    const [block] =
      completionContent({
        name: 'search_files',
        args: {},
        status: 'completed',
        result: 'x'.repeat(RESULT_TEXT_LIMIT + 10),
      }) ?? [];
    const text = block?.type === 'content' && block.content.type === 'text' ? block.content.text : '';
    expect(text.endsWith('\n… (truncated)')).toBe(true);
    expect(text).toContain('x'.repeat(RESULT_TEXT_LIMIT));
    expect(text).not.toContain('x'.repeat(RESULT_TEXT_LIMIT + 1));
  });

  it('failed calls show the core result as plain text, even for edits', () => {
    expect(
      completionContent({ name: 'patch', args: {}, status: 'denied', result: 'Edit rejected by the user' }),
    ).toEqual([{ type: 'content', content: { type: 'text', text: 'Edit rejected by the user' } }]);
  });

  it('edits become whole-file diff blocks, or the unified text when the core truncated them', () => {
    const content = completionContent({
      name: 'write_file',
      args: {},
      status: 'completed',
      result: 'ok',
      diffs: [
        { path: '/p/a', oldText: null, newText: 'n', unified: '+n' },
        { path: '/p/b', oldText: 'o', newText: 'n', unified: '-o\n+n', truncated: true },
      ],
    });
    expect(content?.[0]).toEqual({ type: 'diff', path: '/p/a', oldText: null, newText: 'n' });
    expect(content?.[1]).toEqual({ type: 'content', content: { type: 'text', text: '```diff\n-o\n+n\n```' } });
  });

  it('terminal commands show the command while running and the terminal or the text form at completion', () => {
    expect(runningContent('terminal', { command: 'ls' })).toEqual([
      { type: 'content', content: { type: 'text', text: '```sh\n$ ls\n```' } },
    ]);
    expect(runningContent('read_file', { path: 'a' })).toBeUndefined();
    expect(
      completionContent({
        name: 'terminal',
        args: { command: 'ls' },
        status: 'completed',
        result: 'x',
        terminalId: 't1',
      }),
    ).toEqual([{ type: 'terminal', terminalId: 't1' }]);
    expect(
      completionContent({ name: 'terminal', args: { command: 'ls' }, status: 'completed', result: 'a\n[exit code 0]' }),
    ).toEqual([{ type: 'content', content: { type: 'text', text: '```sh\n$ ls\na\n[exit code 0]\n```' } }]);
    expect(completionContent({ name: 'read_file', args: {}, status: 'completed', result: 'x' })).toBeUndefined();
  });

  it('rawOutput is omitted above 64 KiB', () => {
    expect(rawOutputOf({ exitCode: 3 })).toEqual({ exitCode: 3 });
    expect(rawOutputOf('x'.repeat(70 * 1024))).toBeUndefined();
    expect(rawOutputOf(undefined)).toBeUndefined();
  });

  it('todo items map to plan entries with medium priority and cancelled items completed', () => {
    expect(
      planEntries([
        { id: '1', content: 'a', status: 'in_progress' },
        { id: '2', content: 'b', status: 'cancelled' },
      ]),
    ).toEqual([
      { content: 'a', priority: 'medium', status: 'in_progress' },
      { content: '[cancelled] b', priority: 'medium', status: 'completed' },
    ]);
  });
});
