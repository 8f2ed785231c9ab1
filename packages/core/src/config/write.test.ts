import { chmod, lstat, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse as parseDotenv } from 'dotenv';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { HermesError } from '../errors.js';
import { ensureHomeDir, resolveHomeDir } from './home.js';
import { loadConfig } from './load.js';
import { appendCommandAllowlist, setDefaultModel, updateConfigFile, writeDotenvValue } from './write.js';

let homeDir: string;
let configPath: string;
let dotenvPath: string;

beforeEach(async () => {
  homeDir = await mkdtemp(path.join(tmpdir(), 'hermes-write-'));
  configPath = path.join(homeDir, 'config.yaml');
  dotenvPath = path.join(homeDir, '.env');
});

afterEach(async () => {
  await rm(homeDir, { recursive: true, force: true });
});

const COMMENTED_CONFIG = [
  '# Hermes settings, edited by hand',
  'model:',
  '  default: anthropic:claude-sonnet-4-5 # the main model',
  '  provider: anthropic',
  '',
  '# Commands approved for good',
  'command_allowlist:',
  '  - recursive_delete # rm -r',
  '  - git_force_push',
  '',
  'agent:',
  '  max_iterations: 40 # a smaller budget',
  '  # clarify_timeout: 60',
  'display:',
  '  busy_input_mode: queue',
  '',
].join('\n');

async function temporaryFiles(): Promise<string[]> {
  return (await readdir(homeDir)).filter((name) => name.endsWith('.tmp'));
}

describe('appendCommandAllowlist', () => {
  it('appends new keys once and keeps every other byte, comments and key order included', async () => {
    await writeFile(configPath, COMMENTED_CONFIG);
    const added = await appendCommandAllowlist(homeDir, ['recursive_delete', 'sudo', 'sudo', 'pipe_to_shell']);
    expect(added).toEqual(['sudo', 'pipe_to_shell']);
    const expected = COMMENTED_CONFIG.replace(
      '  - git_force_push\n',
      '  - git_force_push\n  - sudo\n  - pipe_to_shell\n',
    );
    expect(await readFile(configPath, 'utf8')).toBe(expected);
    const loaded = await loadConfig({ homeDir, env: {} });
    expect(loaded.config.command_allowlist).toEqual(['recursive_delete', 'git_force_push', 'sudo', 'pipe_to_shell']);
  });

  it('adding only keys already present leaves the file byte-identical', async () => {
    await writeFile(configPath, COMMENTED_CONFIG);
    expect(await appendCommandAllowlist(homeDir, ['git_force_push'])).toEqual([]);
    expect(await readFile(configPath, 'utf8')).toBe(COMMENTED_CONFIG);
  });

  it('adds the list at the end when the file has none, keeping the comments above', async () => {
    const text = '# my settings\nagent:\n  max_iterations: 12 # budget\n';
    await writeFile(configPath, text);
    await appendCommandAllowlist(homeDir, ['recursive_delete']);
    expect(await readFile(configPath, 'utf8')).toBe(`${text}command_allowlist:\n  - recursive_delete\n`);
  });

  it('fills an empty `command_allowlist:` and extends a flow list', async () => {
    await writeFile(configPath, 'command_allowlist:\n');
    await appendCommandAllowlist(homeDir, ['a']);
    expect((await loadConfig({ homeDir, env: {} })).config.command_allowlist).toEqual(['a']);

    await writeFile(configPath, 'command_allowlist: [a, b] # inline\n');
    await appendCommandAllowlist(homeDir, ['c']);
    expect(await readFile(configPath, 'utf8')).toBe('command_allowlist: [ a, b, c ] # inline\n');
  });

  it('creates config.yaml with mode 0600 when it is missing, and the home directory with mode 0700', async () => {
    const freshHome = path.join(homeDir, 'fresh');
    await appendCommandAllowlist(freshHome, ['recursive_delete']);
    expect(await readFile(path.join(freshHome, 'config.yaml'), 'utf8')).toBe(
      'command_allowlist:\n  - recursive_delete\n',
    );
    expect((await stat(path.join(freshHome, 'config.yaml'))).mode & 0o777).toBe(0o600);
    expect((await stat(freshHome)).mode & 0o777).toBe(0o700);
  });
});

describe('updateConfigFile', () => {
  it('replaces the file atomically: a new inode, the same mode, no temporary file left', async () => {
    await writeFile(configPath, COMMENTED_CONFIG);
    await chmod(configPath, 0o640);
    const before = await stat(configPath);
    await updateConfigFile(homeDir, (document) => {
      document.setIn(['agent', 'max_iterations'], 41);
    });
    const after = await stat(configPath);
    expect(after.ino).not.toBe(before.ino);
    expect(after.mode & 0o777).toBe(0o640);
    expect(await temporaryFiles()).toEqual([]);
    expect(await readFile(configPath, 'utf8')).toBe(
      COMMENTED_CONFIG.replace('max_iterations: 40 # a smaller budget', 'max_iterations: 41 # a smaller budget'),
    );
  });

  it('a symlinked config.yaml stays a link and the file it points at is changed', async () => {
    const real = path.join(homeDir, 'dotfiles-config.yaml');
    await writeFile(real, 'command_allowlist: []\n');
    await symlink(real, configPath);
    await appendCommandAllowlist(homeDir, ['sudo']);
    expect((await lstat(configPath)).isSymbolicLink()).toBe(true);
    expect(await readFile(real, 'utf8')).toBe('command_allowlist: [ sudo ]\n');
  });

  it('re-reads the file before each change, so a hand edit in between is kept', async () => {
    await writeFile(configPath, 'command_allowlist:\n  - a\n');
    await appendCommandAllowlist(homeDir, ['b']);
    await writeFile(configPath, `# edited by hand\n${await readFile(configPath, 'utf8')}`);
    await appendCommandAllowlist(homeDir, ['c']);
    expect(await readFile(configPath, 'utf8')).toBe('# edited by hand\ncommand_allowlist:\n  - a\n  - b\n  - c\n');
  });

  it('a failing change leaves the file untouched and no temporary file behind', async () => {
    await writeFile(configPath, COMMENTED_CONFIG);
    await expect(
      updateConfigFile(homeDir, () => {
        throw new Error('change failed');
      }),
    ).rejects.toThrow('change failed');
    expect(await readFile(configPath, 'utf8')).toBe(COMMENTED_CONFIG);
    expect(await temporaryFiles()).toEqual([]);
  });

  it('refuses to rewrite a file that does not parse', async () => {
    const broken = 'agent: [unclosed\n';
    await writeFile(configPath, broken);
    const error = await appendCommandAllowlist(homeDir, ['x']).catch((caught: unknown) => caught);
    expect(HermesError.isInstance(error) && error.code).toBe('config_invalid');
    expect(await readFile(configPath, 'utf8')).toBe(broken);
  });

  it('concurrent changes from one process are all kept', async () => {
    await writeFile(configPath, COMMENTED_CONFIG);
    await Promise.all(['k1', 'k2', 'k3', 'k4'].map((key) => appendCommandAllowlist(homeDir, [key])));
    const { config } = await loadConfig({ homeDir, env: {} });
    // The four writes may land in any order; none may be lost.
    expect(config.command_allowlist.slice(0, 2)).toEqual(['recursive_delete', 'git_force_push']);
    expect([...config.command_allowlist.slice(2)].sort()).toEqual(['k1', 'k2', 'k3', 'k4']);
  });
});

describe('setDefaultModel', () => {
  it('writes model.default and model.provider and keeps the rest of the section and its comments', async () => {
    await writeFile(
      configPath,
      COMMENTED_CONFIG.replace(
        '  provider: anthropic\n',
        '  provider: anthropic\n  base_url: http://localhost:8080/v1\n',
      ),
    );
    await setDefaultModel(homeDir, { provider: 'openrouter', model: 'anthropic/claude-sonnet-4.5' });
    const text = await readFile(configPath, 'utf8');
    expect(text).toContain(
      '  default: anthropic/claude-sonnet-4.5 # the main model\n  provider: openrouter\n  base_url: http://localhost:8080/v1\n',
    );
    expect(text).toContain('# Commands approved for good\n');
    const { config } = await loadConfig({ homeDir, env: {} });
    expect(config.model).toMatchObject({ default: 'anthropic/claude-sonnet-4.5', provider: 'openrouter' });
  });

  it('creates the model section when it is missing or empty', async () => {
    await writeFile(configPath, '# nothing yet\nmodel:\n');
    await setDefaultModel(homeDir, { provider: 'ollama', model: 'qwen2.5-coder:32b' });
    const { config } = await loadConfig({ homeDir, env: {} });
    expect(config.model).toEqual({ default: 'qwen2.5-coder:32b', provider: 'ollama' });
    expect(await readFile(configPath, 'utf8')).toMatch(/^# nothing yet\n/);
  });
});

describe('writeDotenvValue', () => {
  it('creates .env with mode 0600', async () => {
    await writeDotenvValue(homeDir, 'OPENAI_API_KEY', 'sk-new-value');
    expect(await readFile(dotenvPath, 'utf8')).toBe('OPENAI_API_KEY=sk-new-value\n');
    expect((await stat(dotenvPath)).mode & 0o777).toBe(0o600);
  });

  it('replaces an existing assignment in place, keeps other lines, and tightens the mode to 0600', async () => {
    await writeFile(
      dotenvPath,
      '# keys\nOPENAI_API_KEY=old\nexport ANTHROPIC_API_KEY=keep-me\nOPENAI_API_KEY=older-duplicate\n',
    );
    await chmod(dotenvPath, 0o644);
    await writeDotenvValue(homeDir, 'OPENAI_API_KEY', 'sk-replaced');
    expect(await readFile(dotenvPath, 'utf8')).toBe(
      '# keys\nOPENAI_API_KEY=sk-replaced\nexport ANTHROPIC_API_KEY=keep-me\n',
    );
    expect((await stat(dotenvPath)).mode & 0o777).toBe(0o600);
    expect(await temporaryFiles()).toEqual([]);
  });

  it('appends a new key after the existing lines', async () => {
    await writeFile(dotenvPath, 'A=1');
    await writeDotenvValue(homeDir, 'B', '2');
    expect(await readFile(dotenvPath, 'utf8')).toBe('A=1\nB=2\n');
  });

  it.each([
    'with spaces and # hash',
    `it's quoted`,
    `both ' and " quotes`,
    'trailing space ',
    '$HOME and \\n stay literal',
  ])('writes %j so that dotenv reads it back unchanged', async (value) => {
    await writeDotenvValue(homeDir, 'TRICKY_SECRET', value);
    expect(parseDotenv(await readFile(dotenvPath, 'utf8')).TRICKY_SECRET).toBe(value);
    const loaded = await loadConfig({ homeDir, env: {} });
    expect(loaded.lookup('TRICKY_SECRET')).toBe(value);
    expect(process.env.TRICKY_SECRET).toBeUndefined();
  });

  it('rejects invalid names and multi-line values', async () => {
    await expect(writeDotenvValue(homeDir, 'BAD NAME', 'x')).rejects.toMatchObject({ code: 'invalid_input' });
    await expect(writeDotenvValue(homeDir, 'KEY', 'line1\nline2')).rejects.toMatchObject({ code: 'invalid_input' });
  });
});

describe('HERMES_HOME', () => {
  it('resolves the option, then HERMES_HOME, then ~/.hermes', () => {
    expect(resolveHomeDir({ homeDir: '/opt/hermes', env: { HERMES_HOME: '/srv/hermes' } })).toBe('/opt/hermes');
    expect(resolveHomeDir({ env: { HERMES_HOME: '/srv/hermes', HOME: '/home/someone' } })).toBe('/srv/hermes');
    expect(resolveHomeDir({ env: { HERMES_HOME: '~/custom', HOME: '/home/someone' } })).toBe('/home/someone/custom');
    if (process.platform !== 'win32') {
      expect(resolveHomeDir({ env: { HOME: '/home/someone' } })).toBe('/home/someone/.hermes');
    }
  });

  it('ensureHomeDir creates the directory with mode 0700', async () => {
    const created = path.join(homeDir, 'a', 'hermes');
    expect(await ensureHomeDir(created)).toBe(created);
    expect((await stat(created)).mode & 0o777).toBe(0o700);
  });
});
