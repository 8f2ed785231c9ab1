import { describe, expect, it } from 'vitest';
import { HermesError } from '../errors.js';
import { parseModelSpec } from './model-spec.js';

function errorCode(run: () => unknown): string | null {
  try {
    run();
    return null;
  } catch (error) {
    return HermesError.isInstance(error) ? error.code : 'not a HermesError';
  }
}

describe('43. the model-spec examples of §10.1 parse as listed', () => {
  it.each([
    { spec: 'anthropic:claude-sonnet-4-5', context: {}, provider: 'anthropic', model: 'claude-sonnet-4-5' },
    {
      spec: 'openrouter:anthropic/claude-sonnet-4.5',
      context: {},
      provider: 'openrouter',
      model: 'anthropic/claude-sonnet-4.5',
    },
    {
      spec: 'openrouter:meta-llama/llama-3.3-70b-instruct:free',
      context: {},
      provider: 'openrouter',
      model: 'meta-llama/llama-3.3-70b-instruct:free',
    },
    { spec: 'ollama:qwen2.5-coder:32b', context: {}, provider: 'ollama', model: 'qwen2.5-coder:32b' },
    {
      spec: 'qwen2.5-coder:32b',
      context: { currentProvider: 'ollama' },
      provider: 'ollama',
      model: 'qwen2.5-coder:32b',
    },
    { spec: 'gpt-4.1', context: { customBaseUrl: true }, provider: 'custom', model: 'gpt-4.1' },
  ])('$spec → $provider / $model', ({ spec, context, provider, model }) => {
    const parsed = parseModelSpec(spec, context);
    expect(parsed.provider).toBe(provider);
    expect(parsed.model).toBe(model);
    expect(parsed.spec).toBe(`${provider}:${model}`);
  });

  it('a bare spec with no provider to attach it to fails with invalid_model_spec', () => {
    expect(errorCode(() => parseModelSpec('gpt-4.1', {}))).toBe('invalid_model_spec');
    expect(errorCode(() => parseModelSpec('qwen2.5-coder:32b', {}))).toBe('invalid_model_spec');
  });
});

describe('parseModelSpec', () => {
  it('replaces aliases from model_aliases first, following chains', () => {
    const aliases = { sonnet: 'anthropic:claude-sonnet-4-5', fast: 'sonnet', loop: 'loop' };
    expect(parseModelSpec('sonnet', { aliases })).toMatchObject({ provider: 'anthropic', model: 'claude-sonnet-4-5' });
    expect(parseModelSpec('fast', { aliases })).toMatchObject({ provider: 'anthropic', model: 'claude-sonnet-4-5' });
    expect(parseModelSpec('loop', { aliases, currentProvider: 'ollama' })).toMatchObject({
      provider: 'ollama',
      model: 'loop',
    });
  });

  it('accepts provider aliases case-insensitively', () => {
    expect(parseModelSpec('lm-studio:qwen', {}).provider).toBe('lmstudio');
    expect(parseModelSpec('LM-Studio:qwen', {}).provider).toBe('lmstudio');
    expect(parseModelSpec('llama.cpp:model', {}).provider).toBe('llamacpp');
    expect(parseModelSpec('llama-cpp:model', {}).provider).toBe('llamacpp');
    expect(parseModelSpec('openai-compatible:model', {}).provider).toBe('custom');
    expect(parseModelSpec('OpenRouter:x/y', {}).spec).toBe('openrouter:x/y');
  });

  it('splits at a named endpoint from providers: and at registered adapter aliases', () => {
    const context = { providers: ['openai', 'together', 'scripted'], providerAliases: { fake: 'scripted' } };
    expect(parseModelSpec('together:meta/llama:8b', context)).toMatchObject({
      provider: 'together',
      model: 'meta/llama:8b',
    });
    expect(parseModelSpec('fake:primary', context)).toMatchObject({ provider: 'scripted', model: 'primary' });
  });

  it('keeps the whole string as a bare model when the part before the colon is not a provider', () => {
    expect(parseModelSpec('meta-llama/llama-3.3:free', { currentProvider: 'openrouter' })).toMatchObject({
      provider: 'openrouter',
      model: 'meta-llama/llama-3.3:free',
      explicitProvider: false,
    });
  });

  it('prefers the current provider, then the default one, then custom', () => {
    expect(
      parseModelSpec('m', { currentProvider: 'ollama', defaultProvider: 'openai', customBaseUrl: true }).provider,
    ).toBe('ollama');
    expect(parseModelSpec('m', { defaultProvider: 'openai', customBaseUrl: true }).provider).toBe('openai');
    expect(parseModelSpec('m', { customBaseUrl: true }).provider).toBe('custom');
    expect(parseModelSpec('m', { currentProvider: 'LM-Studio' }).provider).toBe('lmstudio');
  });

  it('rejects an empty spec and a provider with no model', () => {
    expect(errorCode(() => parseModelSpec('  ', { currentProvider: 'openai' }))).toBe('invalid_model_spec');
    expect(errorCode(() => parseModelSpec('openai:', {}))).toBe('invalid_model_spec');
  });
});
