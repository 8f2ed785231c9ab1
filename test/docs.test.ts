import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
// The built core, as the CLI and the server load it.
import { BUILTIN_PROVIDERS, loadConfig } from '../packages/core/dist/index.js';

/**
 * The guides in docs/ show settings a reader copies as they are: every `config.yaml` example must
 * load without a warning (no unknown or misspelt key) and every provider variable must be one the
 * core reads.
 */
const root = fileURLToPath(new URL('..', import.meta.url));

function yamlBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/```yaml\n([\s\S]*?)```/g)].map((match) => match[1] ?? '');
}

describe('docs/providers.md', () => {
  const guide = readFileSync(join(root, 'docs/providers.md'), 'utf8');

  it('every config.yaml example loads with no warning', async () => {
    const blocks = yamlBlocks(guide);
    expect(blocks.length).toBeGreaterThanOrEqual(3);
    for (const block of blocks) {
      const home = mkdtempSync(join(tmpdir(), 'hermes-docs-'));
      try {
        writeFileSync(join(home, 'config.yaml'), block);
        const loaded = await loadConfig({ homeDir: home, env: {} });
        expect({ block, warnings: loaded.warnings }).toEqual({ block, warnings: [] });
      } finally {
        rmSync(home, { recursive: true, force: true });
      }
    }
  });

  it('names every built-in provider with its own variables, and no variable the core does not read', () => {
    const known = new Set<string>(['HERMES_MODEL']);
    for (const provider of Object.values(BUILTIN_PROVIDERS)) {
      expect(guide).toContain(`\`${provider.id}\``);
      for (const variable of [provider.keyVariable, provider.baseUrlVariable]) {
        if (variable === null) continue;
        known.add(variable);
        expect(guide).toContain(variable);
      }
    }
    // Variables named by `api_key_env` in the examples are the reader's own.
    for (const match of guide.matchAll(/api_key_env: ([A-Z_]+)/g)) known.add(match[1] ?? '');
    const mentioned = new Set([...guide.matchAll(/\b[A-Z][A-Z0-9]*_(?:API_KEY|BASE_URL|MODEL)\b/g)].map((m) => m[0]));
    expect([...mentioned].filter((variable) => !known.has(variable))).toEqual([]);
  });
});

describe('SECURITY.md', () => {
  const policy = readFileSync(join(root, 'SECURITY.md'), 'utf8');

  it('its hardened config.yaml loads with no warning', async () => {
    const blocks = yamlBlocks(policy);
    expect(blocks).toHaveLength(1);
    const home = mkdtempSync(join(tmpdir(), 'hermes-docs-'));
    try {
      writeFileSync(join(home, 'config.yaml'), blocks[0] ?? '');
      const loaded = await loadConfig({ homeDir: home, env: {} });
      expect(loaded.warnings).toEqual([]);
      expect(loaded.config.terminal).toMatchObject({ sandbox: 'bwrap', sandbox_network: false, env: 'core' });
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  it('every test it names as evidence exists', () => {
    const named = [...new Set([...policy.matchAll(/`([\w./-]+\.test\.ts)`/g)].map((match) => match[1] ?? ''))];
    expect(named.length).toBeGreaterThanOrEqual(8);
    expect(named.filter((path) => !existsSync(join(root, path)))).toEqual([]);
  });
});

describe('docs/deploy.md', () => {
  it('every test its Guarantees table names exists', () => {
    const guide = readFileSync(join(root, 'docs/deploy.md'), 'utf8');
    const table = guide.slice(guide.indexOf('## Guarantees'), guide.indexOf('## 5.'));
    const named = [...new Set([...table.matchAll(/`([\w./-]+\.test\.ts)`/g)].map((match) => match[1] ?? ''))];
    expect(named.length).toBeGreaterThanOrEqual(6);
    expect(named.filter((path) => !existsSync(join(root, path)))).toEqual([]);
  });
});
