import { describe, expect, it } from 'vitest';
import { clientAddress, isLoopback, readServerSettings } from './settings.js';

describe('server settings', () => {
  it('X-Forwarded-For is honoured only from a configured trusted proxy', () => {
    expect(clientAddress('203.0.113.9', '198.51.100.7', [])).toBe('203.0.113.9');
    expect(clientAddress('::ffff:10.0.0.2', '198.51.100.7', ['10.0.0.2'])).toBe('198.51.100.7');
    // A client cannot smuggle an address through a trusted proxy: the right-most untrusted hop wins.
    expect(clientAddress('10.0.0.2', '1.2.3.4, 198.51.100.7, 10.0.0.3', ['10.0.0.2', '10.0.0.3'])).toBe('198.51.100.7');
    expect(clientAddress('10.0.0.9', '198.51.100.7', ['10.0.0.2'])).toBe('10.0.0.9');
  });

  it('reads the environment and rejects a bad port or proxy address with a clear message', () => {
    expect(readServerSettings({ API_SERVER_PORT: '9000', HERMES_TRUSTED_PROXIES: '127.0.0.1, ::1' })).toMatchObject({
      host: '127.0.0.1',
      port: 9000,
      trustedProxies: ['127.0.0.1', '::1'],
      key: null,
    });
    expect(() => readServerSettings({ API_SERVER_PORT: 'eighty' })).toThrow(/API_SERVER_PORT/);
    expect(() => readServerSettings({ HERMES_TRUSTED_PROXIES: 'proxy.local' })).toThrow(/HERMES_TRUSTED_PROXIES/);
    expect(isLoopback('127.0.0.1') && isLoopback('::1') && isLoopback('localhost')).toBe(true);
    expect(isLoopback('0.0.0.0')).toBe(false);
  });

  it('API_SERVER_ALLOWED_HOSTS lists the public host names, lower-cased; a URL in it is refused', () => {
    expect(
      readServerSettings({ API_SERVER_ALLOWED_HOSTS: 'Hermes.Example.com, api.example.org' }).allowedHosts,
    ).toEqual(['hermes.example.com', 'api.example.org']);
    expect(readServerSettings({}).allowedHosts).toEqual([]);
    expect(() => readServerSettings({ API_SERVER_ALLOWED_HOSTS: 'https://hermes.example.com/' })).toThrow(
      /API_SERVER_ALLOWED_HOSTS/,
    );
  });
});
