import { accessSync, constants } from 'node:fs';
import { lazyDependency } from '../util/import-on-first-use.js';
import { findExecutable } from './executables.js';

/**
 * The ripgrep binary shipped with the core: `@vscode/ripgrep` pulls in the npm package built for
 * this platform (the binary is inside the tarball, nothing is downloaded at install). Null when no
 * such package exists for this platform or it was not installed (optional dependencies skipped).
 */
const loadBundledRipgrep = lazyDependency(async (): Promise<string | null> => {
  try {
    const { rgPath } = await import('@vscode/ripgrep');
    accessSync(rgPath, constants.X_OK);
    return rgPath;
  } catch {
    return null;
  }
});

/**
 * The ripgrep executable `search_files` runs in `'auto'` mode: the one shipped with the core, else
 * `rg` on `pathVariable` (a PATH value), else null (the built-in walker is used).
 */
export async function findRipgrep(pathVariable: string | undefined): Promise<string | null> {
  return (await loadBundledRipgrep()) ?? findExecutable('rg', pathVariable);
}
