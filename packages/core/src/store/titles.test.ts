import { describe, expect, it } from 'vitest';
import { asciiFolded, normalizeTitle, numberedTitle, numberedTitleHead, titleBase } from './titles.js';

describe('titles', () => {
  it('normalizeTitle trims, cuts to 100 characters without splitting a code point, and maps empty to null', () => {
    expect(normalizeTitle('  Plan  ')).toBe('Plan');
    expect(normalizeTitle('')).toBeNull();
    expect(normalizeTitle(' \n ')).toBeNull();
    expect(normalizeTitle(null)).toBeNull();
    expect(normalizeTitle(undefined)).toBeNull();
    expect(normalizeTitle('a'.repeat(101))).toBe('a'.repeat(100));
    const emoji = '🙂'.repeat(101);
    expect(Array.from(normalizeTitle(emoji) ?? '')).toHaveLength(100);
  });

  it('titleBase strips a numbered suffix only', () => {
    expect(titleBase('Plan #3')).toBe('Plan');
    expect(titleBase('Plan')).toBe('Plan');
    expect(titleBase('#3')).toBe('#3');
    expect(titleBase('Issue #12 fix')).toBe('Issue #12 fix');
  });

  it('numberedTitle keeps the whole within 100 characters', () => {
    expect(numberedTitle('Plan', 2)).toBe('Plan #2');
    const long = numberedTitle('b'.repeat(100), 12);
    expect(long).toHaveLength(100);
    expect(long.endsWith(' #12')).toBe(true);
  });

  it('numberedTitleHead is the start every numbered title of the base shares', () => {
    expect(numberedTitleHead('Plan #3')).toBe('Plan');
    const base = `${'c'.repeat(95)}   dd`;
    const head = numberedTitleHead(base);
    for (const number of [2, 10, 12_345, 999_999_999]) expect(numberedTitle(base, number).startsWith(head)).toBe(true);
  });

  it('asciiFolded lowers ASCII letters only, as SQLite NOCASE compares', () => {
    expect(asciiFolded('Trip PLANNING #2')).toBe('trip planning #2');
    expect(asciiFolded('ÉTÉ Été')).toBe('ÉtÉ Été');
  });
});
