import { describe, expect, it } from 'vitest';
import { resolveApiServerSettings } from './settings.js';

function hostWith(section: Record<string, unknown>, environment: Record<string, string> = {}) {
  return { configSection: () => section, lookupEnv: (name: string) => environment[name] };
}

describe('settings', () => {
  it('reads the api_server section, lets variables win, and splits list variables on commas', () => {
    const settings = resolveApiServerSettings(
      hostWith(
        { port: 9000, model_name: 'file-name', cors_origins: ['https://a'] },
        {
          API_SERVER_MODEL_NAME: 'env-name',
          API_SERVER_CORS_ORIGINS: ' https://b , https://c ',
        },
      ),
    );
    expect(settings.port).toBe(9000);
    expect(settings.modelName).toBe('env-name');
    expect(settings.corsOrigins).toEqual(['https://b', 'https://c']);
    expect(settings.host).toBe('127.0.0.1');
  });

  it('clamps a negative concurrency cap to 0, which disables it', () => {
    expect(resolveApiServerSettings(hostWith({ max_concurrent_runs: -3 })).maxConcurrentRuns).toBe(0);
    expect(resolveApiServerSettings(hostWith({})).maxConcurrentRuns).toBe(10);
  });
});
