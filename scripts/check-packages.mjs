// Packs every public workspace package with pnpm (so `workspace:` ranges are rewritten as they
// would be on publish) and checks the tarball with attw (esm-only profile) and publint. Then bundles
// the client-sdk's browser entry as a web app's bundler would and holds it to its size budget.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

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
// The browser gateway client (ADR 0044): what a page pays for `GatewayClient` and `RunsClient`, minified and gzipped.
const BROWSER_BUDGET_BYTES = 60 * 1024;
process.stderr.write('\n== @hermes/client-sdk browser bundle\n');
const entryDir = mkdtempSync(join(root, 'packages', 'client-sdk', '.size-'));
try {
  const entry = join(entryDir, 'entry.js');
  writeFileSync(entry, "export { GatewayClient, RunsClient } from '@hermes/client-sdk';\n");
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    minify: true,
    format: 'esm',
    platform: 'browser',
    write: false,
    metafile: true,
    logLevel: 'silent',
    // The package's tsconfig maps its own name to the sources for tests; a host resolves the published exports.
    tsconfigRaw: {},
  });
  const code = result.outputFiles[0].contents;
  const nodeInputs = Object.keys(result.metafile.inputs).filter((input) =>
    /(^|\/)(ws|zod)\/|^node:|child_process/.test(input),
  );
  const gzipped = gzipSync(code, { level: 9 }).length;
  process.stderr.write(`${code.length} bytes minified, ${gzipped} bytes gzipped (budget ${BROWSER_BUDGET_BYTES})\n`);
  if (nodeInputs.length > 0) {
    process.stderr.write(`the browser bundle reaches Node-only or schema modules: ${nodeInputs.join(', ')}\n`);
    failures += 1;
  }
  if (gzipped > BROWSER_BUDGET_BYTES) {
    process.stderr.write('the browser bundle is over its budget\n');
    failures += 1;
  }
} catch (error) {
  process.stderr.write(`bundling the browser entry failed: ${error.message}\n`);
  failures += 1;
} finally {
  rmSync(entryDir, { recursive: true, force: true });
}
if (failures > 0) {
  process.stderr.write(`\n${failures} package check(s) failed\n`);
  process.exit(1);
}
process.stderr.write(
  `\nAll ${packages.length} public packages pass attw and publint; the browser client is within budget.\n`,
);
