import { describe, expect, it } from 'vitest';
import { buildSubprocessEnv, filterSubprocessEnv } from './subprocess-env.js';

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

describe('buildSubprocessEnv', () => {
  const env = {
    PATH: '/bin',
    HOME: '/home/me',
    LANG: 'C.UTF-8',
    LC_ALL: 'C.UTF-8',
    TERM: 'xterm',
    API_SERVER_KEY: 'server-key',
    HERMES_GATEWAY_TOKEN: 'gateway',
    HERMES_DATABASE_URL: 'postgres://u:p@h/d',
    OPENAI_API_KEY: 'sk-1',
    NPM_TOKEN: 'npm',
    AWS_REGION: 'eu-west-1',
    AWS_SECRET_ACCESS_KEY: 'aws',
    NODE_ENV: 'test',
    ALIAS_OF_KEY: 'server-key',
    UNSET: undefined,
  };

  it('core keeps only the basics a shell needs', () => {
    expect(buildSubprocessEnv(env, { mode: 'core' })).toEqual({
      PATH: '/bin',
      HOME: '/home/me',
      LANG: 'C.UTF-8',
      LC_ALL: 'C.UTF-8',
      TERM: 'xterm',
    });
  });

  it('include patterns add names; exclude patterns remove them; passthrough names come as they are', () => {
    expect(
      buildSubprocessEnv(env, {
        mode: 'core',
        include: ['aws_*', 'NODE_ENV'],
        exclude: ['LC_*'],
        passthrough: ['NPM_TOKEN'],
      }),
    ).toEqual({
      PATH: '/bin',
      HOME: '/home/me',
      LANG: 'C.UTF-8',
      TERM: 'xterm',
      AWS_REGION: 'eu-west-1',
      NODE_ENV: 'test',
      NPM_TOKEN: 'npm',
    });
  });

  it("all drops secret-shaped names, and no setting lets the server's own secrets through", () => {
    const all = buildSubprocessEnv(env, {
      mode: 'all',
      include: ['*'],
      passthrough: ['API_SERVER_KEY', 'HERMES_DATABASE_URL', 'OPENAI_API_KEY', 'ALIAS_OF_KEY'],
      secretValues: ['server-key', 'sk-1'],
    });
    expect(all).toMatchObject({ PATH: '/bin', AWS_REGION: 'eu-west-1', NODE_ENV: 'test' });
    for (const name of [
      'API_SERVER_KEY',
      'HERMES_GATEWAY_TOKEN',
      'HERMES_DATABASE_URL',
      'OPENAI_API_KEY',
      'NPM_TOKEN',
    ]) {
      expect(all[name]).toBeUndefined();
    }
    expect(all.AWS_SECRET_ACCESS_KEY).toBeUndefined();
    // A variable holding the value of a server secret is left out under any name.
    expect(all.ALIAS_OF_KEY).toBeUndefined();
  });

  it('none starts from nothing', () => {
    expect(buildSubprocessEnv(env, { mode: 'none', include: ['PATH'] })).toEqual({ PATH: '/bin' });
  });
});
