import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/** The git branch of a working directory, read from `.git/HEAD` (no subprocess: inline handlers stay immediate). */
export function gitBranch(cwd: string): string | null {
  let directory = resolve(cwd);
  for (;;) {
    const head = join(directory, '.git', 'HEAD');
    if (existsSync(head)) {
      try {
        const match = /^ref: refs\/heads\/(.+)$/m.exec(readFileSync(head, 'utf8'));
        return match?.[1]?.trim() ?? null;
      } catch {
        return null;
      }
    }
    const parent = dirname(directory);
    if (parent === directory) return null;
    directory = parent;
  }
}
