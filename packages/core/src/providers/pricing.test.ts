import { describe, expect, it } from 'vitest';
import { computeCost, costStatusFor, formatUsd, PRICE_TABLE_DATE, priceFor, weakestCostStatus } from './pricing.js';

const usage = { inputTokens: 1_000_000, outputTokens: 200_000, cacheReadTokens: 300_000, cacheWriteTokens: 100_000 };

describe('42. cost of a priced model matches the formula of §17.2', () => {
  it('(input − cache read − cache write) × input + cache read × read + cache write × write + output × output', () => {
    const price = { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 };
    const expected = (600_000 * 3 + 300_000 * 0.3 + 100_000 * 3.75 + 200_000 * 15) / 1_000_000;
    expect(computeCost(usage, price)).toBeCloseTo(expected, 12);
    expect(computeCost(usage, price)).toBeCloseTo(5.265, 12);
  });

  it('cache rates default to the input rate', () => {
    const cost = computeCost(usage, { input: 2, output: 8 });
    expect(cost).toBeCloseTo((1_000_000 * 2 + 200_000 * 8) / 1_000_000, 12);
  });

  it('a local provider costs 0 with status included; no price is unknown; a price is estimated', () => {
    const price = priceFor('anthropic:claude-sonnet-4-5');
    expect(costStatusFor({ usage, price, local: true })).toEqual({ costUsd: 0, status: 'included' });
    expect(costStatusFor({ usage, price: null, local: false })).toEqual({ costUsd: 0, status: 'unknown' });
    expect(costStatusFor({ usage, price, local: false })).toEqual({
      costUsd: computeCost(usage, price!),
      status: 'estimated',
    });
    expect(costStatusFor({ usage, price, local: false, reportedCostUsd: 0.5 })).toEqual({
      costUsd: 0.5,
      status: 'actual',
    });
  });
});

describe('priceFor', () => {
  it('reads the shipped table with its date, including dated model ids', () => {
    expect(priceFor('anthropic:claude-sonnet-4-5')).toEqual({
      input: 3,
      output: 15,
      cacheRead: 0.3,
      cacheWrite: 3.75,
      source: 'table',
      date: PRICE_TABLE_DATE,
    });
    expect(priceFor('anthropic:claude-sonnet-4-5-20250929')?.input).toBe(3);
    expect(priceFor('openai:gpt-4.1')).toMatchObject({ input: 2, output: 8, cacheRead: 0.5, cacheWrite: 2 });
  });

  it('knows nothing of unlisted models or variants priced differently', () => {
    expect(priceFor('custom:my-model')).toBeNull();
    expect(priceFor('openrouter:meta-llama/llama-3.3-70b-instruct:free')).toBeNull();
    expect(priceFor('ollama:qwen2.5-coder:32b')).toBeNull();
  });

  it('pricing.<spec> overrides the table rate by rate, and prices models the table lacks', () => {
    const overrides = {
      'anthropic:claude-sonnet-4-5': { output: 20 },
      'custom:my-model': { input: 1, output: 2 },
    };
    expect(priceFor('anthropic:claude-sonnet-4-5', overrides)).toMatchObject({
      input: 3,
      output: 20,
      cacheRead: 0.3,
      source: 'config',
    });
    expect(priceFor('custom:my-model', overrides)).toEqual({
      input: 1,
      output: 2,
      cacheRead: 1,
      cacheWrite: 1,
      source: 'config',
    });
  });
});

describe('weakestCostStatus', () => {
  it('orders unknown < estimated < actual = included', () => {
    expect(weakestCostStatus('unknown', 'estimated')).toBe('unknown');
    expect(weakestCostStatus('actual', 'estimated')).toBe('estimated');
    expect(weakestCostStatus('included', 'estimated')).toBe('estimated');
    expect(weakestCostStatus('included', 'included')).toBe('included');
    expect(weakestCostStatus('actual', 'actual')).toBe('actual');
    expect(weakestCostStatus('included', 'actual')).toBe('actual');
    expect(weakestCostStatus('included', 'unknown')).toBe('unknown');
  });
});

describe('formatUsd', () => {
  it('uses four decimals below one cent and two otherwise', () => {
    expect(formatUsd(0)).toBe('$0.0000');
    expect(formatUsd(0.00421)).toBe('$0.0042');
    expect(formatUsd(0.009999)).toBe('$0.0100');
    expect(formatUsd(0.01)).toBe('$0.01');
    expect(formatUsd(1.2345)).toBe('$1.23');
    expect(formatUsd(12)).toBe('$12.00');
  });
});
