import { statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** A regular file that always exists: the module that holds this function. */
const OWN_FILE = fileURLToPath(import.meta.url);

/**
 * Runs `load`, a dynamic `import()` of a dependency that is loaded on first use instead of at
 * start-up, so that the import resolves the dependency's real path whatever the process did before.
 *
 * Why: Node's module resolvers (ESM and CommonJS) turn each resolved path into its real path with
 * a cached `fs.realpathSync`, and when a path component is already in that cache, that function
 * checks whether the file type of the process's last synchronous, non-bigint stat was a pipe or a
 * socket, and stops resolving symbolic links if so. A process that ran `fstatSync(1)` on its stdout
 * pipe (a stdio server) therefore loads the next package reached through a pnpm symlink from the
 * link's path, where the package's own dependencies are not visible (`Cannot find package
 * 'eventsource-parser'`), and the wrong path stays cached. Statically imported packages are
 * resolved before any such stat; a package imported on first use is not. A stat of a regular file
 * right before the import leaves the right file type in that buffer.
 */
export function importOnFirstUse<T>(load: () => Promise<T>): Promise<T> {
  try {
    statSync(OWN_FILE);
  } catch {
    // A bundler may have moved this module; the import below still runs.
  }
  return load();
}

/**
 * A getter for a dependency that is imported by the getter's first call (through
 * {@link importOnFirstUse}) and reused afterwards. For modules the core needs only inside some
 * tools, so that importing the core does not load them.
 */
export function lazyDependency<T>(load: () => Promise<T>): () => Promise<T> {
  let loading: Promise<T> | undefined;
  return () => {
    loading ??= importOnFirstUse(load);
    return loading;
  };
}
