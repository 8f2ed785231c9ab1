import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Cleanups, REPO_ROOT, requireBuilt } from './support/fixtures.js';

const cleanups = new Cleanups();
afterEach(() => cleanups.run());

const PACKAGES = ['packages/client-sdk', 'packages/protocol-tui', 'packages/protocol-openai'];

/** Every file under `dir` whose name matches, node_modules included (that is the point). */
function findFiles(dir: string, match: (name: string) => boolean, found: string[] = []): string[] {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) findFiles(full, match, found);
    else if (match(entry.name)) found.push(full);
  }
  return found;
}

describe('the published shape of @hermes/client-sdk', () => {
  it('installs from packed tarballs without @hermes/core or any native module, and imports as ESM', () => {
    // The tarballs are packed from the built dist folders (turbo builds before tests; by hand: npx tsup in each).
    for (const folder of PACKAGES) requireBuilt(join(REPO_ROOT, folder, 'dist/index.js'));
    const packs = mkdtempSync(join(tmpdir(), 'hermes-sdk-packs-'));
    const project = mkdtempSync(join(tmpdir(), 'hermes-sdk-install-'));
    cleanups.add(() => {
      rmSync(packs, { recursive: true, force: true });
      rmSync(project, { recursive: true, force: true });
    });
    const tarballs = new Map<string, string>();
    for (const folder of PACKAGES) {
      const before = new Set(readdirSync(packs));
      execFileSync('npx', ['-y', 'pnpm@12.4.2', 'pack', '--pack-destination', packs], {
        cwd: join(REPO_ROOT, folder),
        stdio: 'pipe',
      });
      const tarball = readdirSync(packs).find((name) => !before.has(name) && name.endsWith('.tgz'));
      if (!tarball) throw new Error(`pnpm pack produced no tarball in ${folder}`);
      const name = (JSON.parse(readFileSync(join(REPO_ROOT, folder, 'package.json'), 'utf8')) as { name: string }).name;
      tarballs.set(name, join(packs, tarball));
    }
    // The workspace packages come from the tarballs (the overrides point the SDK's own dependencies at them),
    // never from the registry; their third-party dependencies come from the registry.
    const dependencies = Object.fromEntries([...tarballs].map(([name, path]) => [name, `file:${path}`]));
    const overrides = Object.fromEntries([...tarballs.keys()].map((name) => [name, `$${name}`]));
    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify({ name: 'sdk-install-check', private: true, type: 'module', dependencies, overrides }, null, 2),
    );
    execFileSync('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error'], {
      cwd: project,
      stdio: 'pipe',
      timeout: 280_000,
    });
    const modules = join(project, 'node_modules');
    expect(existsSync(join(modules, '@hermes/client-sdk/package.json'))).toBe(true);
    expect(existsSync(join(modules, '@hermes/core'))).toBe(false);
    expect(existsSync(join(modules, 'better-sqlite3'))).toBe(false);
    expect(findFiles(modules, (name) => name.endsWith('.node') || name === 'binding.gyp')).toEqual([]);
    const script = `const sdk = await import('@hermes/client-sdk');
const runs = new sdk.RunsClient({ baseURL: 'http://127.0.0.1:1' });
const gateway = new sdk.GatewayClient({ connection: { url: 'ws://127.0.0.1:1/api/ws' } });
console.log(JSON.stringify({ exports: Object.keys(sdk).sort(), runs: typeof runs.create, state: gateway.state }));`;
    const output = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
      cwd: project,
      encoding: 'utf8',
    });
    const result = JSON.parse(output.trim()) as { exports: string[]; runs: string; state: string };
    expect(result.exports).toEqual(expect.arrayContaining(['GatewayClient', 'RunsClient', 'RpcError', 'ClientError']));
    expect(result.runs).toBe('function');
    expect(result.state).toBe('connecting');
  }, 300_000);
});
