import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const bin = fileURLToPath(new URL('../dist/bin.js', import.meta.url));
const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };

describe('hermes binary', () => {
  it('--version prints the package version and exits 0', () => {
    expect(execFileSync(process.execPath, [bin, '--version'], { encoding: 'utf8' }).trim()).toBe(manifest.version);
  });

  it('--help lists usage and examples', () => {
    const help = execFileSync(process.execPath, [bin, '--help'], { encoding: 'utf8' });
    expect(help).toContain('Usage: hermes');
    expect(help).toContain('Examples:');
  });
});
