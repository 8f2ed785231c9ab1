import { describe, expect, it } from 'vitest';
import { defaultConfig } from '../config/schema.js';
import { collectHostSecrets, urlPassword } from './host-secrets.js';
import { SecretRedactor } from './secret-redactor.js';

describe('SecretRedactor', () => {
  const redactor = new SecretRedactor([
    { name: 'API_SERVER_KEY', value: 'hk-0123456789abcdef' },
    { name: 'HERMES_DATABASE_URL', value: 'postgres://u:Pa55word-xyz@db/h' },
    { name: 'HERMES_DATABASE_URL:password', value: 'Pa55word-xyz' },
    { name: 'SHORT', value: 'abc' },
  ]);

  it('replaces every occurrence with the secret name, the longest secret first', () => {
    expect(redactor.redact('key=hk-0123456789abcdef and again hk-0123456789abcdef')).toBe(
      'key=[REDACTED:API_SERVER_KEY] and again [REDACTED:API_SERVER_KEY]',
    );
    expect(redactor.redact('url postgres://u:Pa55word-xyz@db/h pw Pa55word-xyz')).toBe(
      'url [REDACTED:HERMES_DATABASE_URL] pw [REDACTED:HERMES_DATABASE_URL:password]',
    );
  });

  it('leaves values shorter than 8 characters alone', () => {
    expect(redactor.redact('abc abc')).toBe('abc abc');
  });

  it('redacts strings anywhere in JSON values', () => {
    expect(redactor.redactJson({ list: ['hk-0123456789abcdef', 1, null], nested: { text: 'Pa55word-xyz' } })).toEqual({
      list: ['[REDACTED:API_SERVER_KEY]', 1, null],
      nested: { text: '[REDACTED:HERMES_DATABASE_URL:password]' },
    });
  });

  it('a secret cut by a chunk boundary is held back until whole, then redacted', () => {
    const stream = redactor.stream();
    const shown = [stream.push('one hk-01234'), stream.push('56789abcdef two '), stream.push('hk-'), stream.end()];
    expect(shown.join('')).toBe('one [REDACTED:API_SERVER_KEY] two hk-');
    expect(shown.join('')).not.toContain('hk-01234');
    expect(shown[0]).toBe('one ');
  });
});

describe('collectHostSecrets', () => {
  it("names the server's key, the gateway token, provider keys, the database URL and its password, and config keys", () => {
    const config = defaultConfig();
    config.model.api_key = 'cfg-model-key-123';
    const secrets = collectHostSecrets(
      {
        config,
        env: {
          API_SERVER_KEY: 'server-key-123456',
          HERMES_GATEWAY_TOKEN: 'gateway-token-1234',
          HERMES_DATABASE_URL: 'postgres://hermes:db-password-1@host/db',
          OPENAI_API_KEY: 'sk-openai-1234567',
          NPM_TOKEN: 'npm-token-12345678',
          PATH: '/usr/bin',
        },
        dotenv: { OPENROUTER_API_KEY: 'or-key-12345678' },
        lookup: () => undefined,
      },
      { EXTRA_SECRET: 'extra-secret-value' },
    );
    const byName = Object.fromEntries(secrets.map((secret) => [secret.name, secret]));
    expect(byName.API_SERVER_KEY).toMatchObject({ value: 'server-key-123456', server: true });
    expect(byName.HERMES_GATEWAY_TOKEN).toMatchObject({ value: 'gateway-token-1234', server: true });
    expect(byName['HERMES_DATABASE_URL:password']).toMatchObject({ value: 'db-password-1', server: true });
    expect(byName.OPENAI_API_KEY?.server).toBe(true);
    expect(byName.OPENROUTER_API_KEY?.server).toBe(true);
    expect(byName['model.api_key']?.server).toBe(true);
    expect(byName.EXTRA_SECRET?.server).toBe(true);
    // Redacted, but a user may pass it to commands on purpose (terminal.env_passthrough).
    expect(byName.NPM_TOKEN?.server).toBe(false);
    expect(byName.PATH).toBeUndefined();
  });

  it('reads the password of a URL, but not one equal to the user name', () => {
    expect(urlPassword('postgres://user:s%40cret@host:5432/db')).toBe('s@cret');
    expect(urlPassword('postgres://postgres:postgres@localhost/db')).toBeNull();
    expect(urlPassword('https://example.com/path')).toBeNull();
  });
});
