import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { LanguageModelV3 } from '@ai-sdk/provider';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../config/load.js';
import type { HermesConfig } from '../config/schema.js';
import { HermesError } from '../errors.js';
import type { DeepPartial } from '../types.js';
import { createProviderCatalog, publicRoute } from './catalog.js';
import type { ProviderAdapter, ResolvedRoute } from './types.js';

let homeDir: string;

beforeEach(async () => {
  homeDir = await mkdtemp(path.join(tmpdir(), 'hermes-catalog-'));
});

afterEach(async () => {
  await rm(homeDir, { recursive: true, force: true });
});

async function catalogFor(options: {
  yaml?: string;
  dotenv?: string;
  env?: Record<string, string>;
  overrides?: DeepPartial<HermesConfig>;
  providers?: ProviderAdapter[];
}) {
  if (options.yaml !== undefined) await writeFile(path.join(homeDir, 'config.yaml'), options.yaml);
  if (options.dotenv !== undefined) await writeFile(path.join(homeDir, '.env'), options.dotenv);
  const loaded = await loadConfig({ homeDir, env: options.env ?? {}, overrides: options.overrides });
  return createProviderCatalog(loaded, { providers: options.providers });
}

function caught(run: () => unknown): HermesError {
  try {
    run();
  } catch (error) {
    if (HermesError.isInstance(error)) return error;
    throw error;
  }
  throw new Error('expected a HermesError');
}

function scriptedAdapter(options: { strictAlternation?: boolean } = {}): ProviderAdapter & { routes: ResolvedRoute[] } {
  const routes: ResolvedRoute[] = [];
  return {
    id: 'scripted',
    aliases: ['fake'],
    local: true,
    ...(options.strictAlternation === undefined ? {} : { strictAlternation: options.strictAlternation }),
    routes,
    create(route) {
      routes.push(route);
      return { specificationVersion: 'v3', provider: 'scripted', modelId: route.model } as unknown as LanguageModelV3;
    },
  };
}

describe('resolve', () => {
  it('resolves built-in providers with their default base URLs', async () => {
    const catalog = await catalogFor({
      env: { OPENAI_API_KEY: 'sk-openai', ANTHROPIC_API_KEY: 'sk-ant', OPENROUTER_API_KEY: 'sk-or' },
    });
    expect(publicRoute(catalog.resolve('openai:gpt-4.1'))).toEqual({
      spec: 'openai:gpt-4.1',
      provider: 'openai',
      model: 'gpt-4.1',
      baseUrl: 'https://api.openai.com/v1',
    });
    expect(catalog.resolve('anthropic:claude-sonnet-4-5').baseUrl).toBe('https://api.anthropic.com/v1');
    expect(catalog.resolve('openrouter:x/y').baseUrl).toBe('https://openrouter.ai/api/v1');
    expect(catalog.resolve('ollama:llama3.3').baseUrl).toBe('http://localhost:11434/v1');
    expect(catalog.resolve('vllm:m').baseUrl).toBe('http://localhost:8000/v1');
    expect(catalog.resolve('llamacpp:m').baseUrl).toBe('http://localhost:8080/v1');
    expect(catalog.resolve('lm-studio:m').baseUrl).toBe('http://localhost:1234/v1');
  });

  it('reads base URLs from the environment and appends /v1 to a local URL without a path', async () => {
    const catalog = await catalogFor({
      env: {
        OLLAMA_BASE_URL: 'http://127.0.0.1:11434',
        LMSTUDIO_BASE_URL: 'http://192.168.1.20:1234/',
        VLLM_BASE_URL: 'https://vllm.example.com',
        OPENAI_BASE_URL: 'https://proxy.example.com/openai/v1/',
        OPENAI_API_KEY: 'sk-openai',
      },
    });
    expect(catalog.resolve('ollama:m').baseUrl).toBe('http://127.0.0.1:11434/v1');
    expect(catalog.resolve('lmstudio:m').baseUrl).toBe('http://192.168.1.20:1234/v1');
    expect(catalog.resolve('vllm:m').baseUrl).toBe('https://vllm.example.com');
    expect(catalog.resolve('openai:m').baseUrl).toBe('https://proxy.example.com/openai/v1');
  });

  it('a provider that requires a key fails with missing_credentials naming the variable to set', async () => {
    const catalog = await catalogFor({ env: { HERMES_API_KEY: 'not-for-openai' } });
    const error = caught(() => catalog.resolve('openai:gpt-4.1'));
    expect(error.code).toBe('missing_credentials');
    expect(error.message).toContain('OPENAI_API_KEY');
    expect(error.message).toContain(path.join(homeDir, '.env'));
    expect(error.details).toMatchObject({ provider: 'openai', envVar: 'OPENAI_API_KEY' });
    expect(caught(() => catalog.resolve('anthropic:claude-sonnet-4-5')).message).toContain('ANTHROPIC_API_KEY');
    expect(caught(() => catalog.resolve('openrouter:x/y')).message).toContain('OPENROUTER_API_KEY');
  });

  it('keys come from the environment, then .env, then the configuration, each scoped to its provider', async () => {
    const catalog = await catalogFor({
      dotenv: 'ANTHROPIC_API_KEY=ant-from-dotenv\nOPENAI_API_KEY=openai-from-dotenv\n',
      env: { OPENAI_API_KEY: 'openai-from-env' },
      yaml: 'providers:\n  openrouter:\n    api_key: or-from-config\n',
    });
    expect(catalog.resolve('openai:m').apiKey).toBe('openai-from-env');
    expect(catalog.resolve('anthropic:m').apiKey).toBe('ant-from-dotenv');
    expect(catalog.resolve('openrouter:m').apiKey).toBe('or-from-config');
    expect(catalog.resolve('ollama:m').apiKey).toBeNull();
    expect(catalog.resolve('vllm:m').apiKey).toBeNull();
  });

  it('custom uses only HERMES_API_KEY or model.api_key, never another provider’s key', async () => {
    const others = {
      OPENAI_API_KEY: 'sk-openai',
      ANTHROPIC_API_KEY: 'sk-ant',
      OPENROUTER_API_KEY: 'sk-or',
      VLLM_API_KEY: 'v',
    };
    const withoutKey = await catalogFor({ env: { ...others, HERMES_BASE_URL: 'http://127.0.0.1:9' } });
    const route = withoutKey.resolve('custom:m');
    expect(route.apiKey).toBeNull();
    expect(route.baseUrl).toBe('http://127.0.0.1:9/v1');

    const fromConfig = await catalogFor({
      env: others,
      yaml: 'model:\n  base_url: https://llm.example.com/v1\n  api_key: cfg-key\n',
    });
    expect(fromConfig.resolve('custom:m').apiKey).toBe('cfg-key');
    const fromEnvironment = await catalogFor({
      env: { ...others, HERMES_API_KEY: 'env-key' },
      yaml: 'model:\n  base_url: https://llm.example.com/v1\n  api_key: cfg-key\n',
    });
    expect(fromEnvironment.resolve('custom:m').apiKey).toBe('env-key');
  });

  it('custom without a base URL fails with missing_credentials naming HERMES_BASE_URL', async () => {
    const catalog = await catalogFor({});
    const error = caught(() => catalog.resolve('custom:m'));
    expect(error.code).toBe('missing_credentials');
    expect(error.message).toContain('HERMES_BASE_URL');
  });

  it('an unknown current provider fails with unknown_provider; an unknown prefix is part of the model', async () => {
    const catalog = await catalogFor({ yaml: 'model:\n  provider: nowhere\n' });
    expect(caught(() => catalog.resolve('some-model')).code).toBe('unknown_provider');
    expect(caught(() => catalog.resolve('m', { currentProvider: 'elsewhere' })).code).toBe('unknown_provider');
    expect(catalog.parse('nowhere:thing', { currentProvider: 'ollama' })).toMatchObject({
      provider: 'ollama',
      model: 'nowhere:thing',
    });
    const bare = await catalogFor({ yaml: '' });
    expect(caught(() => bare.resolve('some-model')).code).toBe('invalid_model_spec');
  });

  it('named endpoints use their own base URL and key variable, and a missing variable names it', async () => {
    const yaml = [
      'providers:',
      '  together:',
      '    base_url: https://api.together.xyz/v1',
      '    api_key_env: TOGETHER_API_KEY',
      '    strict_alternation: true',
      '    context_length: 65536',
      '  lan:',
      '    base_url: http://10.0.0.5:8080',
      '',
    ].join('\n');
    const withKey = await catalogFor({ yaml, env: { TOGETHER_API_KEY: 'tg-key', OPENAI_API_KEY: 'sk-openai' } });
    const route = withKey.resolve('together:meta/llama');
    expect(route).toMatchObject({
      provider: 'together',
      baseUrl: 'https://api.together.xyz/v1',
      strictAlternation: true,
    });
    expect(route.apiKey).toBe('tg-key');
    expect(route.contextWindow).toBe(65536);
    expect(withKey.resolve('lan:m')).toMatchObject({ baseUrl: 'http://10.0.0.5:8080/v1', strictAlternation: false });
    expect(withKey.resolve('lan:m').apiKey).toBeNull();

    const withoutKey = await catalogFor({ yaml, env: { OPENAI_API_KEY: 'sk-openai' } });
    const error = caught(() => withoutKey.resolve('together:meta/llama'));
    expect(error.code).toBe('missing_credentials');
    expect(error.details).toMatchObject({ envVar: 'TOGETHER_API_KEY' });
  });

  it('the key is on the route for create() but left out of copies and JSON', async () => {
    const catalog = await catalogFor({ env: { OPENAI_API_KEY: 'sk-secret-value-123' } });
    const route = catalog.resolve('openai:gpt-4o');
    expect(route.apiKey).toBe('sk-secret-value-123');
    expect(JSON.stringify(route)).not.toContain('sk-secret-value-123');
    expect(Object.keys({ ...route })).not.toContain('apiKey');
  });
});

describe('context window (§10.4)', () => {
  it('models.<spec> beats providers.<id>, which beats model.context_length, which beats the table', async () => {
    const yaml = [
      'model:',
      '  default: openai:gpt-4.1',
      '  context_length: 300000',
      'models:',
      '  openai:gpt-4o:',
      '    context_length: 50000',
      '  lm-studio:qwen:',
      '    context_length: 8192',
      'providers:',
      '  ollama:',
      '    context_length: 16384',
      '',
    ].join('\n');
    const catalog = await catalogFor({ yaml, env: { OPENAI_API_KEY: 'k' } });
    expect(catalog.resolve('openai:gpt-4o').contextWindow).toBe(50000);
    expect(catalog.resolve('ollama:anything').contextWindow).toBe(16384);
    expect(catalog.resolve('openai:gpt-4.1').contextWindow).toBe(300000);
    expect(catalog.resolve('lmstudio:qwen').contextWindow).toBe(8192);
    expect(catalog.resolve('openai:gpt-4o-mini').contextWindow).toBe(128000);
  });

  it('the shipped table knows well-known models, else 128000', async () => {
    const catalog = await catalogFor({ env: { OPENAI_API_KEY: 'k', ANTHROPIC_API_KEY: 'k', OPENROUTER_API_KEY: 'k' } });
    expect(catalog.contextWindow('anthropic:claude-sonnet-4-5')).toBe(200000);
    expect(catalog.contextWindow('anthropic:claude-sonnet-4-5-20250929')).toBe(200000);
    expect(catalog.contextWindow('openai:gpt-4.1')).toBe(1047576);
    expect(catalog.contextWindow('openai:gpt-4o')).toBe(128000);
    expect(catalog.contextWindow('openrouter:anthropic/claude-sonnet-4.5')).toBe(200000);
    expect(catalog.contextWindow('ollama:qwen2.5-coder:32b')).toBe(32768);
    expect(catalog.contextWindow('ollama:unheard-of')).toBe(128000);
  });
});

describe('default route', () => {
  it('is null without configuration', async () => {
    expect((await catalogFor({})).defaultSpec()).toBeNull();
  });

  it('is model.default with model.provider', async () => {
    const catalog = await catalogFor({ yaml: 'model:\n  default: qwen2.5-coder:32b\n  provider: ollama\n' });
    expect(catalog.defaultSpec()).toBe('ollama:qwen2.5-coder:32b');
    expect(catalog.resolve('llama3.3').provider).toBe('ollama');
  });

  it('HERMES_MODEL overrides it; a bare HERMES_MODEL with HERMES_BASE_URL means custom', async () => {
    const yaml = 'model:\n  default: gpt-4o\n  provider: openai\n';
    expect((await catalogFor({ yaml, env: { HERMES_MODEL: 'anthropic:claude-haiku-4-5' } })).defaultSpec()).toBe(
      'anthropic:claude-haiku-4-5',
    );
    expect((await catalogFor({ yaml, env: { HERMES_MODEL: 'gpt-4.1' } })).defaultSpec()).toBe('openai:gpt-4.1');
    const custom = await catalogFor({
      yaml,
      env: { HERMES_MODEL: 'gpt-4.1', HERMES_BASE_URL: 'http://127.0.0.1:1/v1' },
    });
    expect(custom.defaultSpec()).toBe('custom:gpt-4.1');
    expect(custom.resolve('another-model').provider).toBe('custom');
  });

  it('a bare model.default with no provider and HERMES_BASE_URL means custom', async () => {
    const catalog = await catalogFor({
      yaml: 'model:\n  default: gpt-4.1\n',
      env: { HERMES_BASE_URL: 'http://127.0.0.1:1' },
    });
    expect(catalog.defaultSpec()).toBe('custom:gpt-4.1');
  });

  it('resolves aliases in model.default', async () => {
    const catalog = await catalogFor({
      yaml: 'model_aliases:\n  sonnet: anthropic:claude-sonnet-4-5\nmodel:\n  default: sonnet\n',
    });
    expect(catalog.defaultSpec()).toBe('anthropic:claude-sonnet-4-5');
  });
});

describe('registered adapters', () => {
  it('the scripted provider resolves, creates models with the catalog, and is local', async () => {
    const adapter = scriptedAdapter();
    const catalog = await catalogFor({ providers: [adapter], yaml: 'fallback_models: [scripted:backup]\n' });
    const route = catalog.resolve('scripted:primary');
    expect(publicRoute(route)).toEqual({
      spec: 'scripted:primary',
      provider: 'scripted',
      model: 'primary',
      baseUrl: null,
    });
    expect(catalog.resolve('fake:backup').provider).toBe('scripted');
    const model = catalog.createModel(route);
    expect(model.modelId).toBe('primary');
    expect(adapter.routes[0]?.apiKey).toBeNull();
    expect(catalog.isLocal('scripted')).toBe(true);
    expect(catalog.strictAlternation('scripted')).toBe(false);
    expect(catalog.adapter('fake')).toBe(adapter);
    expect(catalog.providerOptionsFor(route, 'high')).toBeUndefined();
  });

  it('strict alternation follows the adapter, the configuration, and anthropic by default', async () => {
    const strict = await catalogFor({ providers: [scriptedAdapter({ strictAlternation: true })] });
    expect(strict.strictAlternation('scripted')).toBe(true);
    expect(strict.resolve('scripted:x').strictAlternation).toBe(true);
    expect(strict.strictAlternation('anthropic')).toBe(true);
    expect(strict.strictAlternation('openai')).toBe(false);
    const configured = await catalogFor({ yaml: 'providers:\n  anthropic:\n    strict_alternation: false\n' });
    expect(configured.strictAlternation('anthropic')).toBe(false);
  });

  it('a registered adapter replaces the built-in of the same id but keeps its key scoping', async () => {
    const adapter: ProviderAdapter & { routes: ResolvedRoute[] } = { ...scriptedAdapter(), id: 'openai', routes: [] };
    adapter.create = (route) => {
      adapter.routes.push(route);
      return {} as LanguageModelV3;
    };
    const catalog = await catalogFor({ providers: [adapter], env: { OPENAI_API_KEY: 'sk-o', HERMES_API_KEY: 'h' } });
    const route = catalog.resolve('openai:gpt-4o');
    catalog.createModel({ ...route });
    expect(adapter.routes[0]?.apiKey).toBe('sk-o');
    expect(adapter.routes[0]?.baseUrl).toBe('https://api.openai.com/v1');
  });
});

describe('local providers and listModels', () => {
  it('ollama, llamacpp and lmstudio are local; keyed providers are not', async () => {
    const catalog = await catalogFor({});
    expect(['ollama', 'llamacpp', 'lmstudio', 'lm-studio'].map((id) => catalog.isLocal(id))).toEqual([
      true,
      true,
      true,
      true,
    ]);
    expect(['openai', 'anthropic', 'openrouter', 'custom', 'vllm'].map((id) => catalog.isLocal(id))).toEqual([
      false,
      false,
      false,
      false,
      false,
    ]);
  });

  it('lists the default, the fallbacks, configured provider models and table models of keyed providers', async () => {
    const yaml = [
      'model:',
      '  default: anthropic:claude-sonnet-4-5',
      'fallback_models: [openai:gpt-4o, ollama:llama3.3]',
      'providers:',
      '  together:',
      '    base_url: https://api.together.xyz/v1',
      '    models: [meta/llama-3.3-70b]',
      '',
    ].join('\n');
    const catalog = await catalogFor({ yaml, env: { OPENAI_API_KEY: 'k' } });
    const options = catalog.listModels();
    expect(options.slice(0, 4)).toEqual([
      {
        spec: 'anthropic:claude-sonnet-4-5',
        provider: 'anthropic',
        model: 'claude-sonnet-4-5',
        contextWindow: 200000,
        configured: false,
      },
      { spec: 'openai:gpt-4o', provider: 'openai', model: 'gpt-4o', contextWindow: 128000, configured: true },
      { spec: 'ollama:llama3.3', provider: 'ollama', model: 'llama3.3', contextWindow: 131072, configured: true },
      {
        spec: 'together:meta/llama-3.3-70b',
        provider: 'together',
        model: 'meta/llama-3.3-70b',
        contextWindow: 128000,
        configured: true,
      },
    ]);
    const rest = options.slice(4);
    expect(rest.length).toBeGreaterThan(0);
    expect(rest.every((option) => option.provider === 'openai' && option.configured)).toBe(true);
    expect(rest.map((option) => option.spec)).toContain('openai:gpt-4.1');
    expect(new Set(options.map((option) => option.spec)).size).toBe(options.length);
  });
});

describe('request options (§10.5)', () => {
  it('maps reasoning effort to each provider’s option and gives nothing when unset', async () => {
    const catalog = await catalogFor({
      env: { OPENAI_API_KEY: 'k', ANTHROPIC_API_KEY: 'k' },
      yaml: 'providers:\n  my.endpoint:\n    base_url: http://localhost:1\n',
    });
    const openai = catalog.resolve('openai:o3');
    expect(catalog.providerOptionsFor(openai, 'high')).toEqual({ openai: { reasoningEffort: 'high' } });
    expect(catalog.providerOptionsFor(openai, undefined)).toBeUndefined();
    expect(catalog.providerOptionsFor(openai, null)).toBeUndefined();
    const anthropic = catalog.resolve('anthropic:claude-sonnet-4-5');
    expect(catalog.providerOptionsFor(anthropic, 'medium')).toEqual({
      anthropic: { thinking: { type: 'enabled', budgetTokens: 8192 } },
    });
    expect(catalog.providerOptionsFor(anthropic, 'none')).toEqual({ anthropic: { thinking: { type: 'disabled' } } });
    expect(catalog.providerOptionsFor(catalog.resolve('ollama:m'), 'low')).toEqual({
      ollama: { reasoningEffort: 'low' },
    });
    expect(catalog.providerOptionsFor(catalog.resolve('my.endpoint:m'), 'low')).toEqual({
      'my-endpoint': { reasoningEffort: 'low' },
    });
  });
});

describe('prices through the catalog', () => {
  it('pricing keys are matched after alias and provider-alias resolution', async () => {
    const yaml = 'model_aliases:\n  mine: lm-studio:qwen\npricing:\n  lm-studio:qwen:\n    input: 1\n    output: 2\n';
    const catalog = await catalogFor({ yaml });
    expect(catalog.priceFor('lmstudio:qwen')).toMatchObject({ input: 1, output: 2, source: 'config' });
    expect(catalog.priceFor('mine')).toMatchObject({ input: 1, output: 2 });
    expect(catalog.priceFor('anthropic:claude-haiku-4-5')).toMatchObject({ input: 1, output: 5, source: 'table' });
  });
});
