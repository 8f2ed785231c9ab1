import { readdir, stat } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { loadPicomatch } from './glob-match.js';
import { displayPath, isInside, matchWriteDenylist, resolveRealPath } from './paths.js';
import type { ApprovalOutcome, ToolContext, ToolResult } from './types.js';

/** Placeholder for the home directory of Hermes in `file.protected_paths` globs. */
export const HERMES_HOME_PLACEHOLDER = '$HERMES_HOME';

/**
 * Files whose change alters the agent's own policy: its configuration (approval mode, allowlist,
 * tool settings), the `.env` it reads, and skills (instructions the agent follows), in HERMES_HOME
 * and in a project's `.hermes` folder. A write to one asks the user whatever the approval mode.
 */
export const POLICY_PATHS: readonly string[] = [
  '$HERMES_HOME/config.yaml',
  '$HERMES_HOME/config.yml',
  '$HERMES_HOME/.env',
  '$HERMES_HOME/skills/**',
  '**/.hermes/**',
];

/** Expands `$HERMES_HOME` at the start of each glob to the (absolute) home directory of Hermes. */
export function expandHermesHome(globs: readonly string[], hermesHome: string): string[] {
  const home = hermesHome.split(sep).join('/').replace(/\/+$/, '');
  return globs.map((glob) =>
    glob === HERMES_HOME_PLACEHOLDER
      ? home
      : glob.startsWith(`${HERMES_HOME_PLACEHOLDER}/`)
        ? `${home}${glob.slice(HERMES_HOME_PLACEHOLDER.length)}`
        : glob,
  );
}

/** How deep and how wide the search for protected files (for the same-file check) may go. */
const EXPANSION_DEPTH = 4;
const EXPANSION_ENTRIES = 5000;

/**
 * Device and inode of every existing file the globs cover, found below each glob's fixed base
 * (bounded). A hard link or a symbolic link to a protected file is the same file, under any name.
 */
async function protectedIdentities(globs: readonly string[]): Promise<Set<string>> {
  const picomatch = await loadPicomatch();
  const identities = new Set<string>();
  let budget = EXPANSION_ENTRIES;
  for (const glob of globs) {
    if (!glob.startsWith('/')) continue;
    const scan = picomatch.scan(glob);
    const base = scan.base === '' ? '/' : scan.base;
    if (base === '/') continue;
    const matcher = picomatch(glob, { dot: true });
    // Only as deep as the glob reaches: `state.db*` needs the base folder, `**/*.key` its whole tree (bounded).
    const maxDepth = scan.glob.includes('**') ? EXPANSION_DEPTH : scan.glob.split('/').length;
    const visit = async (path: string, depth: number): Promise<void> => {
      if (budget <= 0) return;
      budget -= 1;
      let stats: Awaited<ReturnType<typeof stat>>;
      try {
        stats = await stat(path);
      } catch {
        return;
      }
      if (stats.isFile() && matcher(path.split(sep).join('/'))) identities.add(`${stats.dev}:${stats.ino}`);
      if (!stats.isDirectory() || depth >= maxDepth || !scan.isGlob) return;
      let names: string[];
      try {
        names = await readdir(path);
      } catch {
        return;
      }
      for (const name of names) await visit(join(path, name), depth + 1);
    };
    await visit(base, 0);
  }
  return identities;
}

/** Checks paths against `file.protected_paths`. */
export interface ProtectedPathChecker {
  /** The glob that covers the path (as given, resolved, or as the same file under another name), or null. */
  match(absolutePath: string): Promise<string | null>;
}

/**
 * A checker for many paths (search results): globs compiled once, the protected files' identities
 * found once, when a file with several hard links first needs them. Each path is matched lexically
 * (`..` already resolved by the caller), with `rootReal` substituted for `root` (a linked search
 * root), and by device and inode. A symbolic link is followed by `stat`, so a linked file is
 * matched too when it has several links; single links are resolved by the callers' real-path check
 * (the search engines do not follow links).
 */
export async function createProtectedPathChecker(
  globs: readonly string[],
  options: { root?: string } = {},
): Promise<ProtectedPathChecker | null> {
  if (globs.length === 0) return null;
  const picomatch = await loadPicomatch();
  const matchers = globs.map((glob) => ({ glob, matches: picomatch(glob, { dot: true }) }));
  // Found on first need: only a file with more than one link can be a protected file under another name.
  let identities: Promise<Set<string>> | null = null;
  const root = options.root;
  const rootReal = root === undefined ? undefined : await resolveRealPath(root);
  return {
    async match(absolutePath) {
      const candidates = [absolutePath];
      if (root !== undefined && rootReal !== undefined && rootReal !== root && isInside(absolutePath, root))
        candidates.push(join(rootReal, relative(root, absolutePath)));
      for (const candidate of candidates) {
        const posix = candidate.split(sep).join('/');
        for (const matcher of matchers) if (matcher.matches(posix)) return matcher.glob;
      }
      let stats: Awaited<ReturnType<typeof stat>>;
      try {
        stats = await stat(absolutePath);
      } catch {
        // A file that does not exist is no other file.
        return null;
      }
      if (!stats.isFile() || stats.nlink < 2) return null;
      identities ??= protectedIdentities(globs);
      return (await identities).has(`${stats.dev}:${stats.ino}`) ? 'the same file as a protected one' : null;
    },
  };
}

/**
 * The refusal text when `file.protected_paths` covers `absolutePath` for a file tool, else null.
 * The path is checked as given, with every symbolic link resolved (also in the globs' own
 * folders), and as the same file (device and inode) as a protected one, so neither a link, `..`
 * nor a hard link reaches a protected file.
 */
export async function protectedPathRefusal(
  absolutePath: string,
  ctx: ToolContext,
  access: 'read' | 'write' | 'search',
): Promise<string | null> {
  const globs = ctx.settings.protectedPaths ?? [];
  if (globs.length === 0) return null;
  let glob = await matchWriteDenylist(absolutePath, { denylist: globs, cwd: ctx.cwd, homeDir: ctx.settings.homeDir });
  if (glob === null) glob = (await (await createProtectedPathChecker(globs))?.match(absolutePath)) ?? null;
  if (glob === null) return null;
  const verb = access === 'read' ? 'read' : access === 'write' ? 'changed' : 'searched';
  return `Refused: ${displayPath(absolutePath, ctx.cwd)} is protected (file.protected_paths: ${glob}) and cannot be ${verb} by the agent: it holds the host's secrets or settings. Ask the user to do it.`;
}

/**
 * For a write to a file that changes the agent's own policy: asks the user (whatever the approval
 * mode, YOLO included) and returns the refusal when the answer is not yes; null lets the write go on.
 */
export async function policyChangeRefusal(
  absolutePath: string,
  ctx: ToolContext,
  toolName: string,
): Promise<ToolResult | null> {
  const globs = ctx.settings.policyPaths ?? [];
  if (globs.length === 0) return null;
  const glob = await matchWriteDenylist(absolutePath, { denylist: globs, cwd: ctx.cwd, homeDir: ctx.settings.homeDir });
  if (glob === null) return null;
  const outcome: ApprovalOutcome = await ctx.requestApproval({
    command: `${toolName} ${absolutePath}`,
    cwd: ctx.cwd,
    policyChange: { toolName, path: absolutePath },
  });
  if (outcome.approved) return null;
  const shown = displayPath(absolutePath, ctx.cwd);
  if (outcome.cancelled)
    return { content: `${shown} was not changed: cancelled while waiting for approval.`, status: 'cancelled' };
  return {
    content: `${shown} was not changed: it holds the agent's own settings or skills, and changing it needs the user's approval, which was not given (${outcome.reason ?? outcome.source}).`,
    status: 'denied',
  };
}
