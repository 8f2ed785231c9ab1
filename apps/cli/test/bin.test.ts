import { execFileSync, spawnSync } from 'node:child_process';
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

  it('the README names every command and every option that --help shows', () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    // acp and gateway print their help on stderr: their stdout carries protocol frames only.
    const help = (args: string[]) => {
      const result = spawnSync(process.execPath, [bin, ...args, '--help'], {
        encoding: 'utf8',
        env: { ...process.env, NO_COLOR: '1' },
      });
      return `${result.stdout}${result.stderr}`;
    };
    const section = (text: string, heading: string) => {
      const start = text.indexOf(`${heading}:\n`);
      if (start < 0) return '';
      const rest = text.slice(start + heading.length + 2);
      const end = rest.search(/\n\S/);
      return end < 0 ? rest : rest.slice(0, end);
    };
    const commands = [...section(help([]), 'Commands').matchAll(/^ {2}([a-z]+)/gm)].map((match) => match[1] as string);
    expect(commands).toEqual(expect.arrayContaining(['acp', 'gateway', 'serve', 'sessions', 'config', 'model']));
    const missing: string[] = [];
    for (const path of [[], ...commands.map((command) => [command])]) {
      const text = help(path);
      for (const match of section(text, 'Options').matchAll(/--[a-z][a-z-]*/g)) {
        if (match[0] === '--help' || match[0] === '--version') continue;
        if (!readme.includes(match[0])) missing.push(`hermes ${path.join(' ')} ${match[0]}`);
      }
      for (const match of section(text, 'Commands').matchAll(/^ {2}([a-z]+)/gm)) {
        if (match[1] === 'help') continue;
        if (!readme.includes(`hermes ${[...path, match[1]].join(' ')}`))
          missing.push(`hermes ${[...path, match[1]].join(' ')}`);
      }
    }
    expect(missing).toEqual([]);
  }, 120_000);
});
