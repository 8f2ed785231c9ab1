import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { step, text } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { createFixture, type GatewayFixture } from './support/client.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function fixture(options: Parameters<typeof createFixture>[0] = {}): Promise<GatewayFixture> {
  const created = await createFixture(options);
  cleanups.push(() => created.dispose());
  return created;
}

/**
 * Every `config.set` key the spec names (tui-gateway §4.7, the v1 keys and the TUI's display keys),
 * with a value valid for it. A catalog command whose name is one of these keys is a setting the
 * client changes through `config.set`, so it must accept the value.
 */
const VALID_VALUES: Record<string, unknown> = {
  model: 'scripted:m2',
  busy: 'steer',
  approval_mode: 'smart',
  yolo: 'toggle',
  reasoning: 'low',
  cwd: mkdtempSync(join(tmpdir(), 'hermes-catalog-cwd-')),
  workdir: tmpdir(),
  verbose: 'cycle',
  fast: 'on',
  focus: 'on',
  details_mode: 'expanded',
  thinking_mode: 'on',
  density: 'compact',
  battery: 'on',
  theme: 'dark',
  statusbar: 'bottom',
  mouse: 'off',
  indicator: 'ascii',
  prompt: '> ',
  personality: 'default',
  skin: 'default',
  compact: 'on',
};

describe('commands.catalog and config.set', () => {
  it('every config key the catalog offers as a command is settable with config.set', async () => {
    const gateway = await fixture({ scripts: { m2: [step(text('from m2'))] } });
    const client = await gateway.connect();
    const catalog = await client.result('commands.catalog', {});
    const offered = (catalog.pairs as [string, string][])
      .map(([name]) => name.replace(/^\//, '').toLowerCase())
      .filter((name) => name in VALID_VALUES);
    // The catalog does offer settings (`/model`, `/density`, `/mouse`), so the walk is not empty.
    expect(offered).toEqual(expect.arrayContaining(['model', 'density', 'mouse']));
    for (const key of offered) {
      const answer = await client.call('config.set', { key, value: VALID_VALUES[key] });
      expect({ key, error: answer.error }).toEqual({ key, error: undefined });
    }
    expect((await client.result('config.get', { key: 'density' })).value).toBe('compact');
    expect((await client.call('config.set', { key: 'density', value: 'tiny' })).error.code).toBe(4002);
  });
});
