import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../logger.js';
import { startScriptedOpenAIServer } from '../testing/index.js';
import { createAgentHost } from './host.js';
import { buildModelOptions } from './model-options.js';

describe('buildModelOptions', () => {
  it('probes only the current custom provider until a refresh, and hides credentials of a failed URL', async () => {
    const endpoint = await startScriptedOpenAIServer({ script: [], models: ['listed-a', 'listed-b'] });
    const home = mkdtempSync(join(tmpdir(), 'hermes-model-options-'));
    const host = await createAgentHost({
      homeDir: home,
      env: {},
      logger: silentLogger,
      config: {
        model: { default: 'live:listed-a' },
        session: { auto_title: false },
        providers: {
          live: { base_url: endpoint.baseURL, models: ['listed-a'] },
          // Port 9 on loopback: nothing listens there, and the URL carries credentials.
          broken: { base_url: 'http://user:s3cret-pass@127.0.0.1:9/v1', models: ['saved-b'] },
        },
      },
    });
    const listings = () => endpoint.requests.filter((request) => request.path.endsWith('/models')).length;
    try {
      const first = await buildModelOptions(host);
      expect(first).toMatchObject({ model: 'listed-a', provider: 'live' });
      const live = first.providers.find((row) => row.id === 'live');
      expect(live).toMatchObject({ is_custom: true, is_current: true, error: null });
      expect(live?.models.map((model) => model.id)).toEqual(['listed-a', 'listed-b']);
      expect(first.providers.find((row) => row.id === 'broken')?.error).toBeNull();
      expect(listings()).toBe(1);
      await buildModelOptions(host);
      expect(listings()).toBe(1);

      const refreshed = await buildModelOptions(host, { refresh: true });
      expect(listings()).toBe(2);
      const broken = refreshed.providers.find((row) => row.id === 'broken');
      expect(broken?.models).toEqual([]);
      expect(broken?.error).toMatch(/model listing failed/);
      expect(JSON.stringify(refreshed)).not.toContain('s3cret-pass');

      const explicit = await buildModelOptions(host, { refresh: true, explicitOnly: true });
      expect(listings()).toBe(2);
      expect(explicit.providers.find((row) => row.id === 'live')?.models.map((model) => model.id)).toEqual([
        'listed-a',
      ]);
    } finally {
      await host.close();
      await endpoint.close();
      rmSync(home, { recursive: true, force: true });
    }
  });
});
