import { chmodSync, existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { step, text, toolCall } from '@hermes/core/testing';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CLI_BIN, Cleanups, childEnvironment, makeHome, requireBuilt, startModel } from './support/fixtures.js';

const cleanups = new Cleanups();
afterEach(() => cleanups.run());

describe('the README host example', () => {
  it('runs as written against `hermes gateway` on PATH: streams the turn and answers the approval', async () => {
    requireBuilt(CLI_BIN);
    const target = mkdtempSync(join(tmpdir(), 'hermes-sdk-readme-'));
    const home = makeHome(cleanups);
    const model = await startModel(
      [step(toolCall('terminal', { command: `rm -rf ${target}` }, 'call_rm')), step(text('The build folder is gone.'))],
      cleanups,
    );
    // A `hermes` executable on PATH, exactly what the example spawns.
    const bin = mkdtempSync(join(tmpdir(), 'hermes-sdk-bin-'));
    writeFileSync(join(bin, 'hermes'), `#!/bin/sh\nexec "${process.execPath}" "${CLI_BIN}" "$@"\n`);
    chmodSync(join(bin, 'hermes'), 0o755);
    const saved = { ...process.env };
    cleanups.add(() => {
      for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key];
      Object.assign(process.env, saved);
    });
    Object.assign(process.env, childEnvironment(home, model.baseURL), {
      PATH: `${bin}${delimiter}${process.env.PATH ?? ''}`,
    });
    const logged: string[] = [];
    const written: string[] = [];
    const log = vi.spyOn(console, 'log').mockImplementation((...parts: unknown[]) => {
      logged.push(parts.join(' '));
    });
    const write = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      written.push(String(chunk));
      return true;
    });
    cleanups.add(() => {
      log.mockRestore();
      write.mockRestore();
    });
    await import('../examples/readme-example.js');
    expect(logged).toContain(`approving: rm -rf ${target}`);
    expect(logged).toContain('\n[tool] terminal');
    expect(logged.at(-1)).toBe('\n[turn complete]');
    expect(written.join('')).toContain('The build folder is gone.');
    expect(existsSync(target)).toBe(false);
  });
});
