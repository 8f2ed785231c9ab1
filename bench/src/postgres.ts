/**
 * PostgreSQL for the benchmarks that need it (scale, session resume): `HERMES_BENCH_DATABASE_URL` (a server whose user
 * may create databases), else the embedded server the core tests use, started in the harness's process group (so, when
 * isolated, in the load group, cgroups.ts).
 */
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/** Whether the database server is one the harness started (and so runs in its load group), or one it was given. */
export function databaseIsGiven(): boolean {
  return Boolean(process.env.HERMES_BENCH_DATABASE_URL?.trim());
}

/** Runs `body` with the URL of a PostgreSQL server, started for it and stopped after it unless one was given. */
export async function withDatabase<T>(body: (serverUrl: string) => Promise<T>): Promise<T> {
  const given = process.env.HERMES_BENCH_DATABASE_URL?.trim();
  if (given) return body(given);
  // The core tests' embedded PostgreSQL (binaries from npm), started once for this run.
  const here = dirname(new URL(import.meta.url).pathname);
  const { default: setup } = (await import(
    join(here, '..', '..', 'packages', 'core', 'test', 'support', 'postgres-global-setup.ts')
  )) as { default: (project: { provide(key: string, value: string): void }) => Promise<() => Promise<void>> };
  let url = '';
  const teardown = await setup({ provide: (_key, value) => (url = value) });
  try {
    return await body(url);
  } finally {
    await teardown();
  }
}

/** Creates a new, empty database on `serverUrl` and returns its URL. */
export async function createDatabase(serverUrl: string): Promise<string> {
  // `pg` comes with @hermes/core; it is loaded from there rather than declared again here.
  const pgPath = createRequire(createRequire(import.meta.url).resolve('@hermes/core')).resolve('pg');
  const { default: pg } = (await import(pgPath)) as {
    default: {
      Client: new (options: {
        connectionString: string;
      }) => {
        connect(): Promise<void>;
        query(text: string): Promise<unknown>;
        end(): Promise<void>;
      };
    };
  };
  const name = `hermes_bench_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}
