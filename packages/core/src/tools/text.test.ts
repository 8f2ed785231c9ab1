import { describe, expect, it } from 'vitest';
import { capToolResult, countLines, cutText, splitLines } from './text.js';

describe('capToolResult', () => {
  it('returns text that fits unchanged', () => {
    expect(capToolResult('short', 10)).toBe('short');
  });

  it('keeps the first 80% and the last 20% around an omission marker, within the cap', () => {
    const text = `${'h'.repeat(5000)}${'m'.repeat(5000)}${'t'.repeat(5000)}`;
    const capped = capToolResult(text, 1000);
    expect(capped.length).toBeLessThanOrEqual(1000);
    const [head, tail] = capped.split(/\n\n\[… \d+ characters omitted …\]\n\n/);
    expect(head).toMatch(/^h+$/);
    expect(tail).toMatch(/^t+$/);
    expect((head as string).length / ((head as string).length + (tail as string).length)).toBeCloseTo(0.8, 2);
    const omitted = Number(/\[… (\d+) characters omitted/.exec(capped)?.[1]);
    expect((head as string).length + (tail as string).length + omitted).toBe(text.length);
  });

  it('never splits a surrogate pair', () => {
    const capped = capToolResult('😀'.repeat(1000), 101);
    expect(capped).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])/);
    expect(capped).not.toMatch(/(?<![\ud800-\udbff])[\udc00-\udfff]/);
  });
});

describe('lines', () => {
  it('counts and splits lines without a phantom last line', () => {
    expect(splitLines('')).toEqual([]);
    expect(splitLines('a')).toEqual(['a']);
    expect(splitLines('a\n')).toEqual(['a']);
    expect(splitLines('a\r\nb\n\n')).toEqual(['a', 'b', '']);
    expect([countLines(''), countLines('a'), countLines('a\n'), countLines('a\n\n'), countLines('a\nb')]).toEqual([
      0, 1, 1, 2, 2,
    ]);
  });

  it('cuts text with a marker', () => {
    expect(cutText('abcdef', 3, 'diff')).toEqual({ text: 'abc\n[diff cut at 3 of 6 characters]', truncated: true });
    expect(cutText('abc', 3, 'diff')).toEqual({ text: 'abc', truncated: false });
  });
});
