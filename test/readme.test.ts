import { type ChildProcess, execFile, execFileSync, spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * The README's quick starts are command blocks a newcomer pastes (issue 36.5). Each block after a
 * `<!-- readme-test: NAME -->` marker runs here as written, in bash, in order, with these
 * differences, all of them in `environment` and `substitute` below:
 * - HOME, HERMES_HOME, TMPDIR, the npm global prefix and the pack folder (`/tmp/hermes-packs`) are
 *   temporary folders; every `API_SERVER_*`, `HERMES_*` and provider variable of the caller is removed.
 * - No registry is reached: npm runs with `npm_config_offline=true` on the caller's npm cache (where
 *   `npx -y pnpm@12.4.2` finds pnpm), and `npm install` of our
 *   tarballs is test/fixtures/readme/npm, which unpacks the tarballs as npm places them and links
 *   their third-party dependencies from the workspace's install (an offline `npm install` cannot
 *   work here: those dependencies are in no local npm cache).
 * - The server block's install and build are what `pnpm test` ran before vitest; its start command
 *   runs with `API_SERVER_PORT=0`, and the `curl` line it prints is run as printed.
 */
const root = fileURLToPath(new URL('..', import.meta.url));
const readme = readFileSync(join(root, 'README.md'), 'utf8');
const REPOSITORY_URL = 'https://github.com/hermes-ts/hermes-ts';
const PACKS = '/tmp/hermes-packs';

/** The `sh` block after each marker, by name. */
function quickStarts(): Map<string, string> {
  const found = new Map<string, string>();
  for (const match of readme.matchAll(/<!-- readme-test: ([\w-]+) -->\n```sh\n([\s\S]*?)\n```/g)) {
    found.set(match[1] ?? '', match[2] ?? '');
  }
  return found;
}
const blocks = quickStarts();

function block(name: string): string {
  const text = blocks.get(name);
  if (text === undefined) throw new Error(`README.md has no block marked readme-test: ${name}`);
  return text;
}

let temp: string;
let environment: NodeJS.ProcessEnv;
let packs: string;
let work: string;
const children: ChildProcess[] = [];

function substitute(text: string): string {
  return text.replaceAll(PACKS, packs);
}

/** Runs a block in bash (`set -e`: the first failing line fails it) and returns its output. */
function runBlock(
  name: string,
  cwd: string,
  extra: NodeJS.ProcessEnv = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      'bash',
      ['-c', `set -e\n${substitute(block(name))}`],
      { cwd, env: { ...environment, ...extra }, timeout: 120_000, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/** Starts the server's command and resolves with what it wrote to stderr up to its `curl` line. */
function startServer(command: string, env: NodeJS.ProcessEnv): Promise<{ child: ChildProcess; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', `exec ${command}`], { cwd: root, env, stdio: ['ignore', 'ignore', 'pipe'] });
    children.push(child);
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
      if (/\n\s*curl -N [^\n]*\n/.test(stderr)) resolve({ child, stderr });
    });
    child.on('exit', (code) => reject(new Error(`the server exited (${code}) before its curl line:\n${stderr}`)));
  });
}

/**
 * Runs the `curl` line the server printed, as printed. Where curl is not installed, the same request
 * (URL, headers and body read from that line) goes through fetch.
 */
async function runCurl(line: string): Promise<string> {
  const hasCurl = spawnSync('bash', ['-c', 'command -v curl'], { env: environment }).status === 0;
  if (hasCurl) {
    return execFileSync('bash', ['-c', line.replace('curl -N', 'curl -sS -N --max-time 60')], {
      encoding: 'utf8',
      env: environment,
    });
  }
  const url = /curl -N (\S+)/.exec(line)?.[1] as string;
  const headers = Object.fromEntries(
    [...line.matchAll(/-H "([^:]+): ([^"]+)"/g)].map((match) => [match[1] as string, match[2] as string]),
  );
  const body = /-d '([^']*)'/.exec(line)?.[1] as string;
  const response = await fetch(url, { method: 'POST', headers, body, signal: AbortSignal.timeout(60_000) });
  return response.text();
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

beforeAll(() => {
  temp = mkdtempSync(join(tmpdir(), 'hermes-readme-'));
  const folders = Object.fromEntries(
    ['home', 'hermes-home', 'npm-prefix', 'shim', 'packs', 'work', 'tmp'].map((name) => {
      const folder = join(temp, name);
      mkdirSync(folder, { recursive: true });
      return [name, folder];
    }),
  ) as Record<string, string>;
  packs = folders.packs as string;
  work = folders.work as string;
  const shim = join(folders.shim as string, 'npm');
  copyFileSync(join(root, 'test/fixtures/readme/npm'), shim);
  chmodSync(shim, 0o755);
  const realNpm = execFileSync('bash', ['-c', 'command -v npm'], { encoding: 'utf8' }).trim();
  // npx finds pnpm in the caller's npm cache (read offline): the test HOME has none.
  const npmCache = execFileSync(realNpm, ['config', 'get', 'cache'], { encoding: 'utf8' }).trim();
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(
      ([name]) =>
        !/^(API_SERVER_|HERMES_|OPENAI_|ANTHROPIC_|OPENROUTER_|OLLAMA_|VLLM_|LLAMACPP_|LMSTUDIO_|npm_)/i.test(name),
    ),
  );
  environment = {
    ...inherited,
    HOME: folders.home,
    HERMES_HOME: folders['hermes-home'],
    PATH: [
      folders.shim,
      join(folders['npm-prefix'] as string, 'bin'),
      join(folders.home as string, '.local/bin'),
      process.env.PATH,
    ].join(':'),
    npm_config_prefix: folders['npm-prefix'],
    npm_config_offline: 'true',
    npm_config_cache: npmCache,
    npm_config_update_notifier: 'false',
    npm_config_fund: 'false',
    npm_config_audit: 'false',
    // The demo model's scratch folders and npm's unpacking land in the test's folder, removed after.
    TMPDIR: folders.tmp,
    NO_COLOR: '1',
    CI: '1',
    HERMES_README_WORKSPACE: root,
    HERMES_README_REAL_NPM: realNpm,
  };
});

afterAll(async () => {
  await Promise.all(children.map(stop));
  rmSync(temp, { recursive: true, force: true });
});

describe('the README quick starts, run as written', { timeout: 120_000 }, () => {
  it('has the four quick starts, and the test command .ci/run calls, verbatim', () => {
    expect([...blocks.keys()]).toEqual(['server', 'cli', 'cli-link', 'embed', 'client']);
    const test = 'npx -y pnpm@12.4.2 install --frozen-lockfile && npx -y pnpm@12.4.2 run verify';
    expect(readme).toContain(
      `### Test it\n\nBuild, type-check, lint and every test, exactly what CI runs:\n\n\`\`\`sh\n${test}\n\`\`\``,
    );
    expect(readFileSync(join(root, '.ci/run'), 'utf8')).toContain(`\n${test} || status=$?\n`);
  });

  it('1. the server starts in HERMES_HOME, or ~/.hermes without it, and answers the curl line it prints', async () => {
    const [install, build, start, ...more] = block('server').split(' && ');
    expect([install, build, more]).toEqual([
      'npx -y pnpm@12.4.2 install --frozen-lockfile',
      'npx -y pnpm@12.4.2 build',
      [],
    ]);
    const home = environment.HERMES_HOME as string;
    const server = await startServer(start as string, { ...environment, API_SERVER_PORT: '0' });
    expect(server.stderr).toContain(`saved it to ${home}/.env`);
    expect(readFileSync(join(home, '.env'), 'utf8')).toMatch(/^API_SERVER_KEY=hk-/m);
    const curl = /\n\s*(curl -N [^\n]*)\n/.exec(server.stderr)?.[1] as string;
    const answer = await runCurl(curl);
    const frames = answer.split('\n').filter((line) => line.startsWith('data: '));
    expect(frames.at(-1)).toBe('data: [DONE]');
    const text = frames
      .slice(0, -1)
      .map((line) => JSON.parse(line.slice('data: '.length)) as { choices: { delta: { content?: string } }[] })
      .map((chunk) => chunk.choices[0]?.delta.content ?? '')
      .join('');
    expect(text).toContain('You said: "Hello"');
    await stop(server.child);

    // Without HERMES_HOME: ~/.hermes, as the README says.
    const { HERMES_HOME: _unset, ...withoutHome } = environment;
    const defaultHome = join(environment.HOME as string, '.hermes');
    const second = await startServer(start as string, { ...withoutHome, API_SERVER_PORT: '0' });
    expect(second.stderr).toContain(`saved it to ${defaultHome}/.env`);
    expect(existsSync(join(defaultHome, 'state.db'))).toBe(true);
    await stop(second.child);
  });

  it('2. the CLI runs from the checkout, packs, installs as `hermes` and runs from PATH', async () => {
    const result = await runBlock('cli', root);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('You said: "Hello"');
    const version = JSON.parse(readFileSync(join(root, 'apps/cli/package.json'), 'utf8')).version as string;
    expect(result.stdout.trimEnd().split('\n').at(-1)).toBe(version);
    expect(readdirSync(packs).sort()).toEqual([
      'hermes-cli-0.1.0.tgz',
      'hermes-client-sdk-0.1.0.tgz',
      'hermes-core-0.1.0.tgz',
      'hermes-protocol-acp-0.1.0.tgz',
      'hermes-protocol-openai-0.1.0.tgz',
      'hermes-protocol-tui-0.1.0.tgz',
    ]);
    // The command on PATH is the installed package, not the checkout.
    const installed = execFileSync('bash', ['-c', 'readlink -f "$(command -v hermes)"'], {
      encoding: 'utf8',
      env: environment,
    }).trim();
    expect(installed).toBe(join(environment.npm_config_prefix as string, 'lib/node_modules/@hermes/cli/dist/bin.js'));
  });

  it('2b. the checkout linked as `hermes` runs, and `hermes model` links the providers guide where npm users can read it', async () => {
    // A PATH without the npm prefix, so `hermes` is the link the block makes.
    const path = (environment.PATH as string)
      .split(':')
      .filter((folder) => folder !== join(environment.npm_config_prefix as string, 'bin'))
      .join(':');
    const result = await runBlock('cli-link', root, { PATH: path });
    expect(result.code, result.stderr).toBe(0);
    const guide = `${REPOSITORY_URL}/blob/main/docs/providers.md`;
    expect(result.stdout).toContain(guide);
    expect(result.stdout).not.toMatch(/(?<!main\/)docs\/providers\.md/);
    expect(existsSync(join(root, 'docs/providers.md'))).toBe(true);
  });

  it('3. a program embeds the core from the packed tarball and runs a turn on the demo model', async () => {
    const result = await runBlock('embed', work);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('You said: "Hello from my program"');
    expect(result.stdout).toContain('[approve? rm -rf');
    expect(result.stdout.trimEnd().endsWith('[completed]')).toBe(true);
    const project = JSON.parse(readFileSync(join(work, 'hermes-embed/package.json'), 'utf8'));
    expect(Object.keys(project.dependencies)).toEqual(['@hermes/core']);
  });

  it('4. a client host drives `hermes gateway` through the client SDK from the packed tarballs', async () => {
    const result = await runBlock('client', work);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('You said: "Hello from my host"');
    expect(result.stdout).toContain('[approve? rm -rf');
    expect(result.stdout.trimEnd().endsWith('[turn complete]')).toBe(true);
  });
});

describe('links in the README', () => {
  it('every relative link names a file or folder of the repository', () => {
    const targets = [...readme.matchAll(/\]\(([^)]+)\)/g)]
      .map((match) => (match[1] as string).replace(/#.*$/, ''))
      .filter((target) => target !== '' && !/^https?:/.test(target));
    expect(targets.length).toBeGreaterThan(5);
    expect(targets.filter((target) => !existsSync(join(root, target)))).toEqual([]);
  });
});

describe('links in what npm users get', () => {
  const published = [
    'packages/core',
    'packages/protocol-acp',
    'packages/protocol-tui',
    'packages/protocol-openai',
    'packages/client-sdk',
    'apps/cli',
  ];

  it.each(published)('%s: its README links only what the package ships or the repository', (folder) => {
    const text = readFileSync(join(root, folder, 'README.md'), 'utf8');
    const relativeLinks = [...text.matchAll(/\]\(([^)]+)\)/g)]
      .map((match) => match[1] as string)
      .filter((target) => !/^(https?:|#)/.test(target));
    expect(relativeLinks).toEqual([]);
    // A path of the repository (docs/…, examples/…) must be a link to it, not a bare path.
    const withoutLinks = text.replace(/\[[^\]]*\]\(https?:[^)]+\)/g, '');
    const barePaths = [...withoutLinks.matchAll(/(?<![\w./-])((?:\.\.\/)*(?:docs|spec|examples|test)\/[\w./-]+)/g)].map(
      (match) => match[1],
    );
    expect(barePaths).toEqual([]);
    for (const match of text.matchAll(
      /https:\/\/github\.com\/hermes-ts\/hermes-ts\/(?:blob|tree)\/main\/([\w./-]+)/g,
    )) {
      expect(existsSync(join(root, match[1] as string)), match[0]).toBe(true);
    }
    const manifest = JSON.parse(readFileSync(join(root, folder, 'package.json'), 'utf8'));
    expect(manifest.repository.url).toBe(`git+${REPOSITORY_URL}.git`);
  });
});
