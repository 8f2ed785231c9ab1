import { execFile } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ErrorCode } from '../wire/index.js';
import { fail, integerParam, type MethodContext, requireSession, stringParam } from './context.js';

/**
 * Methods the Hermes TUI polls for its status bar, footer and search overlay (issue 16.1): the
 * host battery, the provider's account quota, the git state of the working folder and a search
 * over stored sessions. Each answers what this host really knows; what it cannot know is said in
 * the shape the TUI reads (`available: false`, empty fields), never invented.
 */

const POWER_SUPPLY = '/sys/class/power_supply';

/** The colour bucket the TUI paints the battery with. */
function batteryCategory(percent: number | null, plugged: boolean | null): string {
  if (percent === null) return 'dim';
  if (plugged === true || percent >= 50) return 'good';
  if (percent >= 20) return 'warn';
  if (percent >= 10) return 'bad';
  return 'critical';
}

/** The first battery under a sysfs `power_supply` folder; `available: false` without one. */
export async function readBattery(root: string): Promise<Record<string, unknown>> {
  const none = { available: false, percent: null, plugged: null, category: 'dim' };
  let entries: string[];
  try {
    entries = await readdir(root);
  } catch {
    return none;
  }
  for (const name of entries.sort()) {
    const dir = join(root, name);
    const type = await readFile(join(dir, 'type'), 'utf8').catch(() => '');
    if (type.trim() !== 'Battery') continue;
    const capacity = Number.parseInt(await readFile(join(dir, 'capacity'), 'utf8').catch(() => ''), 10);
    if (!Number.isFinite(capacity)) continue;
    const status = (await readFile(join(dir, 'status'), 'utf8').catch(() => '')).trim();
    const plugged = status === '' ? null : status !== 'Discharging';
    const percent = Math.max(0, Math.min(100, capacity));
    return { available: true, percent, plugged, category: batteryCategory(percent, plugged) };
  }
  return none;
}

/** `system.battery`: the host battery the Linux kernel reports, for the status bar. */
export function systemBattery(): Promise<Record<string, unknown>> {
  return readBattery(POWER_SUPPLY);
}

/** `account.usage`: this host reads no provider's quota windows, so the TUI hides its quota read-out. */
export function accountUsage(context: MethodContext): Record<string, unknown> {
  if (typeof context.params.session_id === 'string') requireSession(context);
  return {
    available: false,
    windows: [],
    unavailable_reason: 'provider quota windows are not available on this host',
  };
}

/** Runs git with a short timeout; null when git is missing, fails, or the folder is not a repository. */
function git(cwd: string, args: string[]): Promise<string | null> {
  return new Promise((resolve) => {
    execFile('git', ['-C', cwd, ...args], { timeout: 2000, maxBuffer: 1024 * 1024 }, (error, stdout) => {
      resolve(error ? null : stdout);
    });
  });
}

/** `owner`/`repo` of a GitHub remote URL (https, ssh or scp form), or null. */
export function githubRepository(remote: string): { owner: string; repo: string } | null {
  const match =
    /^(?:git@github\.com:|(?:https?|ssh|git):\/\/(?:[^@/]+@)?(?:www\.)?github\.com(?::\d+)?\/)([^/]+)\/([^/]+?)(?:\.git)?\/?$/i.exec(
      remote.trim(),
    );
  return match?.[1] && match[2] ? { owner: match[1], repo: match[2] } : null;
}

/** `workspace.info {cwd}`: branch, dirty state, repository root, upstream counts and GitHub remote of `cwd`. */
export async function workspaceInfo(context: MethodContext): Promise<Record<string, unknown>> {
  const cwd = stringParam(context.params, 'cwd')?.trim();
  if (!cwd) fail(ErrorCode.pathRequired, 'cwd is required');
  const empty = { branch: null, dirty: null, git_root: null, github: null, pull_request: null, upstream: null };
  const status = await git(cwd, ['status', '--porcelain=v2', '--branch']);
  if (status === null) return empty;
  let branch: string | null = null;
  let upstream: { ahead: number; behind: number } | null = null;
  let dirty = false;
  for (const line of status.split('\n')) {
    if (line.startsWith('# branch.head ')) {
      const head = line.slice('# branch.head '.length).trim();
      branch = head === '(detached)' ? null : head;
    } else if (line.startsWith('# branch.ab ')) {
      const counts = /\+(\d+) -(\d+)/.exec(line);
      if (counts) upstream = { ahead: Number(counts[1]), behind: Number(counts[2]) };
    } else if (line.trim() !== '' && !line.startsWith('#')) dirty = true;
  }
  const root = (await git(cwd, ['rev-parse', '--show-toplevel']))?.trim() || null;
  const remote = await git(cwd, ['config', '--get', 'remote.origin.url']);
  return {
    branch,
    dirty,
    git_root: root,
    github: remote ? githubRepository(remote) : null,
    // Pull requests would need the GitHub API; this host does not call it.
    pull_request: null,
    upstream,
  };
}

const SEARCH_EXCLUDED_SOURCES = ['tool', 'kanban', 'subagent'];

/** `session.search {query, limit}`: stored sessions whose messages match, best hit per session. */
export async function sessionSearch(context: MethodContext): Promise<Record<string, unknown>> {
  const query = stringParam(context.params, 'query')?.trim() ?? '';
  if (query === '') fail(ErrorCode.textRequired, 'query is required');
  const requested = integerParam(context.params, 'limit');
  const limit = requested !== undefined && requested >= 1 ? Math.min(requested, 100) : 20;
  let hits: Awaited<ReturnType<MethodContext['gateway']['host']['store']['search']>>;
  try {
    hits = await context.gateway.host.store.search(query, {
      excludeSources: SEARCH_EXCLUDED_SOURCES,
      limit: limit * 5,
    });
  } catch (error) {
    fail(ErrorCode.genericFailure, `session search failed: ${error instanceof Error ? error.message : String(error)}`);
  }
  const results: Record<string, unknown>[] = [];
  const seen = new Set<string>();
  for (const hit of hits) {
    if (seen.has(hit.sessionId)) continue;
    seen.add(hit.sessionId);
    results.push({
      id: hit.sessionId,
      title: hit.session.title,
      snippet: hit.snippet,
      source: hit.session.source,
      started_at: hit.session.startedAt / 1000,
    });
    if (results.length >= limit) break;
  }
  return { results };
}
