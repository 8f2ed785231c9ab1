// Packs every public workspace package with pnpm (so `workspace:` ranges are rewritten as they
// would be on publish) and checks the tarball with attw (esm-only profile) and publint.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');
const bin = (name) => join(root, 'node_modules', '.bin', name);
const packages = ['packages', 'apps']
  .flatMap((folder) => readdirSync(join(root, folder)).map((name) => join(root, folder, name)))
  .map((dir) => ({ dir, manifest: JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) }))
  .filter(({ manifest }) => !manifest.private);

const out = mkdtempSync(join(tmpdir(), 'hermes-pack-'));
let failures = 0;
try {
  for (const { dir, manifest } of packages) {
    process.stderr.write(`\n== ${manifest.name}\n`);
    const before = new Set(readdirSync(out));
    execFileSync('npx', ['-y', 'pnpm@12.4.2', 'pack', '--pack-destination', out], {
      cwd: dir,
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    const tarball = readdirSync(out).find((name) => !before.has(name));
    if (!tarball) throw new Error(`pnpm pack produced no tarball for ${manifest.name}`);
    for (const [tool, args] of [
      [bin('attw'), [join(out, tarball), '--profile', 'esm-only']],
      [bin('publint'), [join(out, tarball), '--strict']],
    ]) {
      try {
        execFileSync(tool, args, { cwd: dir, stdio: 'inherit' });
      } catch {
        failures += 1;
      }
    }
  }
} finally {
  rmSync(out, { recursive: true, force: true });
}
if (failures > 0) {
  process.stderr.write(`\n${failures} package check(s) failed\n`);
  process.exit(1);
}
process.stderr.write(`\nAll ${packages.length} public packages pass attw and publint.\n`);
