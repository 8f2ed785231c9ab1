import { readFile } from 'node:fs/promises';
import { dirname, relative, sep } from 'node:path';
import type { Ignore } from 'ignore';
import { lazyDependency } from '../util/import-on-first-use.js';

/**
 * Ignore files in ripgrep's order of precedence: a decision from an earlier kind wins over any
 * later kind, whatever the directory depth; within a kind, the deepest directory whose file has
 * a matching rule decides (the ignore crate's `matched_ignore`).
 */
const IGNORE_FILE_KINDS = ['.rgignore', '.ignore', '.gitignore'] as const;

/** node-ignore, imported with the first ignore file a search reads: start-up never needs it. */
const loadIgnore = lazyDependency(async () => (await import('ignore')).default);

type Matchers = (Ignore | null)[];

interface RuleSet {
  test(path: string, mode: string): { ignored: boolean; unignored: boolean };
}

/**
 * Tests one path against one ignore file without inheriting a parent directory's exclusion.
 * ripgrep tests each path on its own (an excluded directory is simply not entered), so when a
 * `.ignore` re-includes a directory that `.gitignore` excludes, the files inside are not excluded
 * by `.gitignore` either. The package's public `test()` also reports a parent's exclusion, so the
 * single-path rule scan is used when the installed version has it.
 */
function testOnePath(matcher: Ignore, path: string): { ignored: boolean; unignored: boolean } {
  const rules = (matcher as unknown as { _rules?: RuleSet })._rules;
  if (rules !== undefined && typeof rules.test === 'function') return rules.test(path, 'regex');
  return matcher.test(path);
}

/**
 * `.gitignore`, `.ignore` and `.rgignore` semantics as ripgrep applies them with
 * `--no-require-git --no-ignore-global --no-ignore-exclude`: ignore files of every ancestor
 * directory apply, up to the file system root.
 */
export class IgnoreRules {
  private readonly cache = new Map<string, Promise<Matchers>>();

  /** True when the entry at `absolutePath` is excluded by the ignore files above it. */
  async isIgnored(absolutePath: string, isDirectory: boolean): Promise<boolean> {
    const directories: string[] = [];
    for (let directory = dirname(absolutePath); ; directory = dirname(directory)) {
      directories.push(directory);
      if (dirname(directory) === directory) break;
    }
    const matchers = await Promise.all(directories.map((directory) => this.matchersOf(directory)));
    for (let kind = 0; kind < IGNORE_FILE_KINDS.length; kind += 1) {
      for (let level = 0; level < directories.length; level += 1) {
        const matcher = (matchers[level] as Matchers)[kind];
        if (matcher === null || matcher === undefined) continue;
        let path = relative(directories[level] as string, absolutePath)
          .split(sep)
          .join('/');
        if (isDirectory) path += '/';
        const result = testOnePath(matcher, path);
        if (result.ignored) return true;
        if (result.unignored) return false;
      }
    }
    return false;
  }

  private matchersOf(directory: string): Promise<Matchers> {
    let matchers = this.cache.get(directory);
    if (matchers === undefined) {
      matchers = Promise.all(
        IGNORE_FILE_KINDS.map((name) => loadIgnoreFile(`${directory === sep ? '' : directory}${sep}${name}`)),
      );
      this.cache.set(directory, matchers);
    }
    return matchers;
  }
}

async function loadIgnoreFile(path: string): Promise<Ignore | null> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch {
    return null;
  }
  return (await loadIgnore())({ ignorecase: false }).add(text);
}
