import { describe, expect, it } from 'vitest';
import { sanitizeFtsQuery } from './search-query.js';

describe('sanitizeFtsQuery', () => {
  it('quotes every term and joins them with AND', () => {
    expect(sanitizeFtsQuery('kettle  descale\ttwice')).toBe('"kettle" AND "descale" AND "twice"');
  });

  it('doubles embedded quotes and keeps operators and punctuation literal', () => {
    expect(sanitizeFtsQuery('say "hi"')).toBe('"say" AND """hi"""');
    expect(sanitizeFtsQuery('well-known AND NEAR(x')).toBe('"well-known" AND "AND" AND "NEAR(x"');
    expect(sanitizeFtsQuery('col:value ^start')).toBe('"col:value" AND "^start"');
  });

  it('keeps a trailing * as a prefix match', () => {
    expect(sanitizeFtsQuery('config* cafe')).toBe('"config"* AND "cafe"');
    expect(sanitizeFtsQuery('multi**')).toBe('"multi"*');
  });

  it('returns null when nothing searchable is left', () => {
    for (const query of ['', '   ', '*', '"', '""', '- + ( )', '**']) expect(sanitizeFtsQuery(query)).toBeNull();
  });

  it('keeps non-Latin letters and digits', () => {
    expect(sanitizeFtsQuery('café 2024 日本')).toBe('"café" AND "2024" AND "日本"');
  });
});
