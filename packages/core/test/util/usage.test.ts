import { describe, expect, it } from 'vitest';
import { normalizeUsage } from '../../src/usage.js';

/** A prompt-size count that records whether it was asked for. */
function countedPrompt(chars: number) {
  const calls = { count: 0 };
  return {
    calls,
    promptChars: () => {
      calls.count += 1;
      return chars;
    },
  };
}

describe('normalizeUsage', () => {
  it('takes the reported counts and never measures the prompt', () => {
    const prompt = countedPrompt(4_000);
    const usage = normalizeUsage(
      {
        inputTokens: { total: 120, noCache: 100, cacheRead: 20, cacheWrite: 0 },
        outputTokens: { total: 30, text: 25, reasoning: 5 },
      },
      { promptChars: prompt.promptChars, outputChars: 90 },
    );
    expect(usage).toMatchObject({ inputTokens: 120, outputTokens: 30, cacheReadTokens: 20, totalTokens: 150 });
    expect(usage.estimated).toBeUndefined();
    expect(prompt.calls.count).toBe(0);
  });

  it('estimates from the characters, a quarter token each, when the model reports none', () => {
    const prompt = countedPrompt(4_001);
    const usage = normalizeUsage(undefined, { promptChars: prompt.promptChars, outputChars: 90 });
    expect(usage).toMatchObject({ inputTokens: 1_001, outputTokens: 23, totalTokens: 1_024, estimated: true });
    expect(prompt.calls.count).toBe(1);
  });

  it('estimates only the side that is missing', () => {
    const prompt = countedPrompt(400);
    const usage = normalizeUsage(
      {
        inputTokens: { total: undefined, noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
        outputTokens: { total: 7, text: undefined, reasoning: undefined },
      },
      { promptChars: prompt.promptChars, outputChars: 90 },
    );
    expect(usage).toMatchObject({ inputTokens: 100, outputTokens: 7, estimated: true });
    expect(prompt.calls.count).toBe(1);
  });
});
