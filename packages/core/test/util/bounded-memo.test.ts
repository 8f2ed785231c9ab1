import { describe, expect, it } from 'vitest';
import { BoundedMemo } from '../../src/util/bounded-memo.js';

describe('BoundedMemo', () => {
  it('computes a key once, remembering undefined results too', () => {
    const memo = new BoundedMemo<string, number | undefined>();
    let calls = 0;
    const compute = (key: string) => {
      calls += 1;
      return key === 'none' ? undefined : key.length;
    };
    expect(memo.get('abc', compute)).toBe(3);
    expect(memo.get('abc', compute)).toBe(3);
    expect(memo.get('none', compute)).toBeUndefined();
    expect(memo.get('none', compute)).toBeUndefined();
    expect(calls).toBe(2);
  });

  it('forgets everything when a new key would pass the limit, and keeps an overwrite', () => {
    const memo = new BoundedMemo<number, number>(3);
    for (const key of [1, 2, 3]) memo.set(key, key * 10);
    memo.set(3, 33);
    expect([memo.has(1), memo.peek(3)]).toEqual([true, 33]);
    memo.set(4, 40);
    expect([memo.has(1), memo.has(2), memo.has(3), memo.peek(4)]).toEqual([false, false, false, 40]);
  });
});
