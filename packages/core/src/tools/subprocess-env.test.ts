import { describe, expect, it } from 'vitest';
import { filterSubprocessEnv } from './subprocess-env.js';

describe('filterSubprocessEnv', () => {
  it('drops secret-looking names and provider variables, keeps the rest and the passthrough list', () => {
    const env = {
      PATH: '/bin',
      HOME: '/home/me',
      OPENAI_API_KEY: 'sk-1',
      OPENAI_BASE_URL: 'http://x',
      ANTHROPIC_API_KEY: 'a',
      ANTHROPIC_BASE_URL: 'b',
      ANTHROPIC_MODEL: 'm',
      OPENROUTER_API_KEY: 'o',
      HERMES_API_KEY: 'h',
      HERMES_BASE_URL: 'u',
      VLLM_API_KEY: 'v',
      VLLM_BASE_URL: 'v',
      OLLAMA_BASE_URL: 'o',
      LLAMACPP_BASE_URL: 'l',
      LMSTUDIO_BASE_URL: 'l',
      GITHUB_TOKEN: 't',
      AWS_SECRET: 's',
      DB_PASSWORD: 'p',
      NPM_TOKEN: 'n',
      lower_api_key: 'x',
      HERMES_HOME: '/h',
      TOKENIZER: 'keep',
      UNSET: undefined,
    };
    expect(filterSubprocessEnv(env, ['NPM_TOKEN', 'OPENAI_BASE_URL'])).toEqual({
      PATH: '/bin',
      HOME: '/home/me',
      OPENAI_BASE_URL: 'http://x',
      NPM_TOKEN: 'n',
      HERMES_HOME: '/h',
      TOKENIZER: 'keep',
    });
  });
});
