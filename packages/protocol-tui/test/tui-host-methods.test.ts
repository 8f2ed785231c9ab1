import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { step, text } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { githubRepository, readBattery } from '../src/methods/tui-host-methods.js';
import { createFixture, type GatewayFixture } from './support/client.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function fixture(options: Parameters<typeof createFixture>[0] = {}): Promise<GatewayFixture> {
  const created = await createFixture(options);
  cleanups.push(() => created.dispose());
  return created;
}

function folder(prefix: string): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, {
    cwd,
    encoding: 'utf8',
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: 't',
      GIT_AUTHOR_EMAIL: 't@example.invalid',
      GIT_COMMITTER_NAME: 't',
      GIT_COMMITTER_EMAIL: 't@example.invalid',
    },
  });
}

describe('the Hermes TUI status-bar, footer and search methods (issue 16.1)', () => {
  it('workspace.info reports the branch, dirty state, root, upstream counts and GitHub remote of a real repository', async () => {
    const upstream = folder('hermes-upstream-');
    git(upstream, 'init', '-q', '-b', 'main');
    writeFileSync(join(upstream, 'README.md'), 'one\n');
    git(upstream, 'add', 'README.md');
    git(upstream, 'commit', '-q', '-m', 'one');
    const parent = folder('hermes-clone-');
    git(parent, 'clone', '-q', upstream, 'repo');
    const repo = join(parent, 'repo');
    git(repo, 'checkout', '-q', '-b', 'feature', '--track', 'origin/main');
    writeFileSync(join(repo, 'two.txt'), 'two\n');
    git(repo, 'add', 'two.txt');
    git(repo, 'commit', '-q', '-m', 'two');
    git(repo, 'remote', 'set-url', 'origin', 'git@github.com:acme/widgets.git');
    mkdirSync(join(repo, 'sub'));
    const client = await (await fixture()).connect('stdio');

    const clean = await client.result('workspace.info', { cwd: join(repo, 'sub') });
    expect(clean).toEqual({
      branch: 'feature',
      dirty: false,
      git_root: repo,
      github: { owner: 'acme', repo: 'widgets' },
      pull_request: null,
      upstream: { ahead: 1, behind: 0 },
    });

    writeFileSync(join(repo, 'README.md'), 'changed\n');
    expect((await client.result('workspace.info', { cwd: repo })).dirty).toBe(true);

    const plain = folder('hermes-not-a-repo-');
    expect(await client.result('workspace.info', { cwd: plain })).toEqual({
      branch: null,
      dirty: null,
      git_root: null,
      github: null,
      pull_request: null,
      upstream: null,
    });
    expect((await client.call('workspace.info', {})).error?.code).not.toBe(-32601);
  });

  it('a GitHub remote is recognised in its https, ssh and scp forms; other hosts are not GitHub', () => {
    expect(githubRepository('https://github.com/acme/widgets.git')).toEqual({ owner: 'acme', repo: 'widgets' });
    expect(githubRepository('ssh://git@github.com/acme/widgets')).toEqual({ owner: 'acme', repo: 'widgets' });
    expect(githubRepository('git@github.com:acme/widgets.git\n')).toEqual({ owner: 'acme', repo: 'widgets' });
    expect(githubRepository('https://gitlab.com/acme/widgets.git')).toBeNull();
  });

  it('session.search finds a stored session by the words of its messages, one row per session', async () => {
    const gateway = await fixture({ script: [step(text('Aardvarks dig burrows at night.'))] });
    const client = await gateway.connect('stdio');
    const created = await client.result('session.create', {});
    await client.result('prompt.submit', { session_id: created.session_id, text: 'Tell me about aardvarks' });
    await client.event('message.complete', created.session_id);

    const found = await client.result('session.search', { query: 'aardvarks', limit: 15 });
    expect(found.results).toHaveLength(1);
    expect(found.results[0]).toMatchObject({ id: created.stored_session_id, source: expect.any(String) });
    expect(String(found.results[0].snippet).toLowerCase()).toContain('aardvark');
    expect(typeof found.results[0].started_at).toBe('number');

    expect((await client.result('session.search', { query: 'platypus' })).results).toEqual([]);
    expect((await client.call('session.search', { query: '   ' })).error?.code).toBe(4012);
  });

  it('system.battery reads a sysfs battery, and answers available:false where there is none', async () => {
    const root = folder('hermes-power-');
    mkdirSync(join(root, 'AC'));
    writeFileSync(join(root, 'AC', 'type'), 'Mains\n');
    mkdirSync(join(root, 'BAT0'));
    writeFileSync(join(root, 'BAT0', 'type'), 'Battery\n');
    writeFileSync(join(root, 'BAT0', 'capacity'), '15\n');
    writeFileSync(join(root, 'BAT0', 'status'), 'Discharging\n');
    expect(await readBattery(root)).toEqual({ available: true, percent: 15, plugged: false, category: 'bad' });
    writeFileSync(join(root, 'BAT0', 'status'), 'Charging\n');
    expect(await readBattery(root)).toMatchObject({ available: true, plugged: true, category: 'good' });
    expect(await readBattery(join(root, 'missing'))).toEqual({
      available: false,
      percent: null,
      plugged: null,
      category: 'dim',
    });

    const client = await (await fixture()).connect('stdio');
    const answer = await client.result('system.battery', {});
    expect(typeof answer.available).toBe('boolean');
    expect(['good', 'warn', 'bad', 'critical', 'dim']).toContain(answer.category);
  });

  it('account.usage says the quota read-out is unavailable instead of inventing windows', async () => {
    const client = await (await fixture()).connect('stdio');
    const created = await client.result('session.create', {});
    expect(await client.result('account.usage', { session_id: created.session_id })).toEqual({
      available: false,
      windows: [],
      unavailable_reason: 'provider quota windows are not available on this host',
    });
    expect((await client.call('account.usage', { session_id: 'nope' })).error?.code).toBe(4001);
  });
});
