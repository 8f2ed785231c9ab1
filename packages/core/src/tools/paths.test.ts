import { mkdir, mkdtemp, realpath, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { displayPath, matchWriteDenylist, resolveRealPath, resolveToolPath } from './paths.js';

let root: string;

beforeAll(async () => {
  root = await realpath(await mkdtemp(join(tmpdir(), 'hermes-paths-')));
  await mkdir(join(root, 'real', 'deep'), { recursive: true });
  await symlink(join(root, 'real'), join(root, 'link'));
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('paths', () => {
  it('resolves relative, absolute and ~ paths', () => {
    expect(resolveToolPath('src/a.ts', '/w', '/h')).toBe('/w/src/a.ts');
    expect(resolveToolPath('../x', '/w/p', '/h')).toBe('/w/x');
    expect(resolveToolPath('/etc/hosts', '/w', '/h')).toBe('/etc/hosts');
    expect(resolveToolPath('~', '/w', '/h')).toBe('/h');
    expect(resolveToolPath('~/a', '/w', '/h')).toBe('/h/a');
    expect(resolveToolPath('~user/a', '/w', '/h')).toBe('/w/~user/a');
  });

  it('shows paths relative to the cwd when inside it, absolute otherwise', () => {
    expect(displayPath('/w/src/a.ts', '/w')).toBe('src/a.ts');
    expect(displayPath('/w', '/w')).toBe('.');
    expect(displayPath('/other/a.ts', '/w')).toBe('/other/a.ts');
    expect(displayPath('/w2/a.ts', '/w')).toBe('/w2/a.ts');
    expect(displayPath('/w/..file', '/w')).toBe('..file');
  });

  it('resolves symbolic links of the existing part of a path that does not exist yet', async () => {
    expect(await resolveRealPath(join(root, 'link', 'deep', 'new', 'file.txt'))).toBe(
      join(root, 'real', 'deep', 'new', 'file.txt'),
    );
  });

  it('matches denylist globs with ~, relative globs and linked directories', async () => {
    const options = { cwd: root, homeDir: '/home/me' };
    expect(await matchWriteDenylist('/home/me/.ssh/id_rsa', { ...options, denylist: ['~/.ssh/**'] })).toBe('~/.ssh/**');
    expect(await matchWriteDenylist('/home/me/ssh/id_rsa', { ...options, denylist: ['~/.ssh/**'] })).toBeNull();
    expect(await matchWriteDenylist(join(root, 'real', 'x.pem'), { ...options, denylist: ['real/*.pem'] })).toBe(
      'real/*.pem',
    );
    // The denied directory is reached through a link; the glob names the link.
    expect(
      await matchWriteDenylist(join(root, 'real', 'deep', 'f'), { ...options, denylist: [`${root}/link/**`] }),
    ).toBe(`${root}/link/**`);
    expect(
      await matchWriteDenylist(join(root, 'link', 'deep', 'f'), { ...options, denylist: [`${root}/real/**`] }),
    ).toBe(`${root}/real/**`);
    expect(await matchWriteDenylist(join(root, 'elsewhere'), { ...options, denylist: [] })).toBeNull();
  });
});
