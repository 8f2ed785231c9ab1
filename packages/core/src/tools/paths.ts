import { lstat, readlink, realpath } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { loadPicomatch } from './glob-match.js';

/** Expands a leading `~` or `~/` to the home directory. */
export function expandHome(input: string, homeDir: string): string {
  if (input === '~') return homeDir;
  if (input.startsWith('~/')) return join(homeDir, input.slice(2));
  return input;
}

/**
 * Resolves a path argument of a tool: `~` expands to the home directory and relative paths
 * resolve against the session cwd (spec/core.md §11.1). No sandbox: paths outside the cwd are
 * allowed (v1).
 */
export function resolveToolPath(input: string, cwd: string, homeDir: string): string {
  return resolve(cwd, expandHome(input.trim(), homeDir));
}

/** True when `absolutePath` is `directory` or lies below it (lexically). */
export function isInside(absolutePath: string, directory: string): boolean {
  const path = relative(directory, absolutePath);
  return path === '' || (!path.startsWith(`..${sep}`) && path !== '..' && !isAbsolute(path));
}

/** How results show a path: relative to the cwd when inside it, absolute otherwise. */
export function displayPath(absolutePath: string, cwd: string): string {
  if (!isInside(absolutePath, cwd)) return absolutePath;
  const path = relative(cwd, absolutePath);
  return path === '' ? '.' : path.split(sep).join('/');
}

/**
 * The real path of `absolutePath` with every symbolic link resolved, also when the file (or some
 * of its parents) does not exist yet: the existing part is resolved and the rest appended. A
 * dangling symbolic link resolves to its target, so writing through it is checked against where
 * the data would land.
 */
export async function resolveRealPath(absolutePath: string, depth = 0): Promise<string> {
  try {
    return await realpath(absolutePath);
  } catch {
    // Fall through: the path (or a parent) does not exist, or a link dangles.
  }
  if (depth > 40) return absolutePath;
  try {
    const stats = await lstat(absolutePath);
    if (stats.isSymbolicLink()) {
      const target = await readlink(absolutePath);
      return resolveRealPath(resolve(dirname(absolutePath), target), depth + 1);
    }
  } catch {
    // Does not exist: resolve the parent.
  }
  const parent = dirname(absolutePath);
  if (parent === absolutePath) return absolutePath;
  const base = absolutePath.slice(parent.length).replace(/^[/\\]+/, '');
  return join(await resolveRealPath(parent, depth + 1), base);
}

/**
 * Returns the first `file.write_denylist` glob that `absolutePath` matches, or null. Globs expand
 * `~`; relative globs are anchored at the cwd (except those starting with `**`). The path is
 * matched as given and with its symbolic links resolved, and each glob also with its own fixed
 * prefix resolved, so neither a link in the path nor a linked denied directory bypasses the list.
 */
export async function matchWriteDenylist(
  absolutePath: string,
  options: { denylist: readonly string[]; cwd: string; homeDir: string },
): Promise<string | null> {
  if (options.denylist.length === 0) return null;
  const candidates = new Set([absolutePath, await resolveRealPath(absolutePath)]);
  const picomatch = await loadPicomatch();
  for (const glob of options.denylist) {
    for (const pattern of await expandDenyGlob(glob, options.cwd, options.homeDir)) {
      const matcher = picomatch(pattern, { dot: true });
      for (const candidate of candidates) {
        if (matcher(candidate.split(sep).join('/'))) return glob;
      }
    }
  }
  return null;
}

async function expandDenyGlob(glob: string, cwd: string, homeDir: string): Promise<string[]> {
  let pattern = expandHome(glob, homeDir);
  if (!pattern.startsWith('/') && !pattern.startsWith('**')) pattern = `${cwd.split(sep).join('/')}/${pattern}`;
  const patterns = [pattern];
  const scan = (await loadPicomatch()).scan(pattern);
  if (scan.base !== '' && scan.base !== '/') {
    const realBase = await resolveRealPath(scan.base);
    if (realBase !== scan.base) {
      const rest = pattern.slice(scan.base.length);
      patterns.push(`${realBase.split(sep).join('/')}${rest}`);
    }
  }
  return patterns;
}
