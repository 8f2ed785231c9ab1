import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

const bin = fileURLToPath(new URL('../dist/bin.js', import.meta.url));
const homes: string[] = [];

afterEach(() => {
  for (const home of homes.splice(0)) rmSync(home, { recursive: true, force: true });
});

function run(env: Record<string, string>) {
  const home = mkdtempSync(join(tmpdir(), 'hermes-cli-db-'));
  homes.push(home);
  return spawnSync(process.execPath, [bin, 'sessions', 'list'], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', HOME: home, HERMES_HOME: home, ...env },
  });
}

describe('HERMES_DATABASE_URL at start', () => {
  it('a malformed URL prints one error line naming the variable and exits non-zero', () => {
    for (const url of ['postgres://', 'sqlite:///tmp/state.db']) {
      const result = run({ HERMES_DATABASE_URL: url });
      expect(result.status, url).toBe(1);
      const lines = result.stderr.trim().split('\n');
      expect(lines, url).toHaveLength(1);
      expect(lines[0], url).toContain('HERMES_DATABASE_URL');
      expect(result.stdout).toBe('');
    }
  });
});
