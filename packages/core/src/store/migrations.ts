import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type Database from 'better-sqlite3';
import type { BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import { migrate } from 'drizzle-orm/better-sqlite3/migrator';
import { readMigrationFiles } from 'drizzle-orm/migrator';
import { HermesError } from '../errors.js';

const PACKAGE_NAME = '@hermes/core';
const MIGRATIONS_TABLE = '__drizzle_migrations';

function isCorePackageDirectory(directory: string): boolean {
  const manifest = join(directory, 'package.json');
  if (!existsSync(manifest)) return false;
  try {
    return (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: unknown }).name === PACKAGE_NAME;
  } catch {
    return false;
  }
}

/**
 * The `drizzle/` folder shipped with `@hermes/core`. It is found by walking up from this module to
 * the package root, which works from `src/store/` (tests), from `dist/` and its chunk files (the
 * bundle), and from an installed copy under `node_modules`.
 */
export function resolveMigrationsFolder(): string {
  let directory = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (isCorePackageDirectory(directory)) {
      const folder = join(directory, 'drizzle');
      if (existsSync(join(folder, 'meta', '_journal.json'))) return folder;
    }
    const parent = dirname(directory);
    if (parent === directory) break;
    directory = parent;
  }
  // A host that bundled the core into its own file still has the package installed beside it.
  try {
    const manifest = createRequire(import.meta.url).resolve(`${PACKAGE_NAME}/package.json`);
    const folder = join(dirname(manifest), 'drizzle');
    if (existsSync(join(folder, 'meta', '_journal.json'))) return folder;
  } catch {
    // Fall through to the error below.
  }
  throw new HermesError('store_migrations_missing', `Cannot find the migrations folder of ${PACKAGE_NAME}`);
}

/** True when the SQLite build has the FTS5 extension. */
export function hasFts5(sqlite: Database.Database): boolean {
  const options = sqlite.pragma('compile_options') as { compile_options: string }[];
  if (options.some((option) => option.compile_options === 'ENABLE_FTS5')) return true;
  // FTS5 may also be loaded as an extension; a throwaway temp table tells for sure.
  try {
    sqlite.exec('CREATE VIRTUAL TABLE temp.hermes_fts5_probe USING fts5(probe); DROP TABLE temp.hermes_fts5_probe;');
    return true;
  } catch {
    return false;
  }
}

function appliedMigrationTimes(sqlite: Database.Database): number[] {
  const table = sqlite
    .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name = ?")
    .get(MIGRATIONS_TABLE) as { name: string } | undefined;
  if (!table) return [];
  const rows = sqlite.prepare(`SELECT created_at AS createdAt FROM "${MIGRATIONS_TABLE}"`).all() as {
    createdAt: number | string;
  }[];
  return rows.map((row) => Number(row.createdAt));
}

/**
 * Brings the database to this build's schema. A database already migrated by a newer build fails
 * with `schema_too_new` rather than being used with columns this build does not know about.
 *
 * drizzle's `migrate()` reads the applied set before its own transaction, so two processes opening
 * a fresh file together can both try to apply a migration; the loser's transaction rolls back and
 * the re-check below finds nothing left to do.
 */
export function applyMigrations(
  sqlite: Database.Database,
  db: BetterSQLite3Database<Record<string, unknown>>,
  options: { migrationsFolder: string; path: string },
): void {
  const known = readMigrationFiles({ migrationsFolder: options.migrationsFolder });
  const newestKnown = Math.max(0, ...known.map((migration) => migration.folderMillis));
  const pending = (): number => {
    const applied = appliedMigrationTimes(sqlite);
    const newestApplied = Math.max(0, ...applied);
    if (newestApplied > newestKnown) {
      throw new HermesError(
        'schema_too_new',
        `The database ${options.path} was written by a newer version of ${PACKAGE_NAME}; upgrade to open it`,
        { details: { path: options.path, newestApplied, newestKnown } },
      );
    }
    return known.filter((migration) => migration.folderMillis > newestApplied).length;
  };
  if (pending() === 0) return;
  try {
    migrate(db, { migrationsFolder: options.migrationsFolder, migrationsTable: MIGRATIONS_TABLE });
  } catch (error) {
    if (pending() === 0) return;
    throw error;
  }
}
