import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { createAgentHost } from '../../src/agent/host.js';
import { HermesError } from '../../src/errors.js';
import { silentLogger } from '../../src/logger.js';
import { openPostgresStore, openSessionStore } from '../../src/store/index.js';
import { resolvePgMigrationsFolder } from '../../src/store/pg-connection.js';
import { PostgresSessionStore } from '../../src/store/pg-store.js';
import { createTestDatabase } from '../support/postgres.js';
import { onCleanup, sessionId, steppingClock, temporaryDirectory, user } from './helpers.js';

/** The number of PostgreSQL migrations this build ships (drizzle's journal). */
function shippedPgMigrations(): number {
  const journal = JSON.parse(readFileSync(join(resolvePgMigrationsFolder(), 'meta', '_journal.json'), 'utf8')) as {
    entries: unknown[];
  };
  return journal.entries.length;
}

async function freshDatabase(): Promise<string> {
  const database = await createTestDatabase();
  onCleanup(database.drop);
  return database.url;
}

async function query<T extends pg.QueryResultRow>(url: string, text: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(text, values)).rows;
  } finally {
    await client.end();
  }
}

async function caught(promise: Promise<unknown>): Promise<HermesError> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  if (!HermesError.isInstance(error)) throw new Error(`expected a HermesError, got ${String(error)}`);
  return error;
}

describe('opening the PostgreSQL store', () => {
  it('applies the checked-in migrations once, with the search vector under a GIN index', async () => {
    const url = await freshDatabase();
    const first = await openPostgresStore({ url });
    await first.close();
    const second = await openPostgresStore({ url });
    onCleanup(() => second.close());
    const applied = await query<{ count: string }>(url, 'SELECT count(*) AS count FROM drizzle.__drizzle_migrations');
    expect(Number(applied[0]?.count)).toBeGreaterThanOrEqual(1);
    const indexes = await query<{ indexdef: string }>(
      url,
      "SELECT indexdef FROM pg_indexes WHERE tablename = 'messages' AND indexname = 'messages_search_vector_idx'",
    );
    expect(indexes[0]?.indexdef).toContain('USING gin (search_vector)');
  });

  it('instances opening one fresh database together migrate it once and all work', async () => {
    const url = await freshDatabase();
    const stores = await Promise.all([1, 2, 3].map(() => openPostgresStore({ url, poolSize: 2 })));
    for (const store of stores) onCleanup(() => store.close());
    const id = sessionId();
    await stores[0]?.createSession({ id });
    // Appends from three instances interleave; row ids still follow the order each append committed.
    const ids = (
      await Promise.all(stores.map((store, index) => store.appendMessages(id, [user(`from ${index}`)])))
    ).flat();
    const rows = await stores[2]?.loadConversation(id);
    expect(rows?.map((row) => row.rowId)).toEqual([...ids].sort((a, b) => a - b));
    expect((await stores[1]?.getSession(id))?.messageCount).toBe(3);
    const applied = await query<{ count: string }>(url, 'SELECT count(*) AS count FROM drizzle.__drizzle_migrations');
    // Each shipped migration applied exactly once, whatever their number.
    expect(Number(applied[0]?.count)).toBe(shippedPgMigrations());
  });

  it('refuses a database migrated by a newer version with schema_too_new and drops nothing', async () => {
    const url = await freshDatabase();
    const store = await openPostgresStore({ url });
    const id = sessionId();
    await store.createSession({ id, title: 'Kept' });
    await store.close();
    await query(url, 'INSERT INTO drizzle.__drizzle_migrations (hash, created_at) VALUES ($1, $2)', [
      'from-the-future',
      Date.now() + 365 * 24 * 3_600_000 * 100,
    ]);
    const error = await caught(openPostgresStore({ url }));
    expect(error.code).toBe('schema_too_new');
    expect(error.message).toContain('newer version');
    const rows = await query<{ title: string }>(url, 'SELECT title FROM sessions WHERE id = $1', [id]);
    expect(rows).toEqual([{ title: 'Kept' }]);
  });

  it('a malformed URL fails at once with config_invalid naming the variable', async () => {
    for (const url of ['postgres://', 'not a url', 'mysql://user@127.0.0.1/db']) {
      const error = await caught(openSessionStore({ location: url, source: 'HERMES_DATABASE_URL', urlOnly: true }));
      expect(error.code, url).toBe('config_invalid');
      expect(error.message, url).toContain('HERMES_DATABASE_URL');
    }
  });

  it('an unreachable server fails with store_unavailable naming the variable after a bounded retry, without the password', async () => {
    const clock = steppingClock();
    const error = await caught(
      openSessionStore({
        location: 'postgres://hermes:secret-password@127.0.0.1:1/hermes',
        source: 'HERMES_DATABASE_URL',
        clock,
        connectBudgetMs: 5_000,
      }),
    );
    expect(error.code).toBe('store_unavailable');
    expect(error.message).toContain('HERMES_DATABASE_URL');
    expect(error.message).not.toContain('secret-password');
    expect((error.details as { attempts: number }).attempts).toBeGreaterThan(1);
    expect(clock.sleeps.reduce((total, ms) => total + ms, 0)).toBeLessThanOrEqual(5_000);
  });

  it('a wrong password fails at once with store_unavailable naming the variable, without retrying', async () => {
    const url = new URL(await freshDatabase());
    url.password = 'wrong-password';
    const clock = steppingClock();
    const error = await caught(
      openSessionStore({ location: url.toString(), source: 'HERMES_DATABASE_URL', clock, connectBudgetMs: 5_000 }),
    );
    expect(error.code).toBe('store_unavailable');
    expect(error.message).toContain('HERMES_DATABASE_URL');
    expect(error.message).not.toContain('wrong-password');
    expect(clock.sleeps).toEqual([]);
  });

  it('a host opens the PostgreSQL store from HERMES_DATABASE_URL (environment or .env), and from the config key database.url', async () => {
    for (const source of ['environment', 'dotenv', 'config'] as const) {
      const url = await freshDatabase();
      const homeDir = temporaryDirectory();
      if (source === 'dotenv') writeFileSync(join(homeDir, '.env'), `HERMES_DATABASE_URL=${url}\n`);
      const host = await createAgentHost({
        homeDir,
        env: source === 'environment' ? { HERMES_DATABASE_URL: url } : {},
        ...(source === 'config' ? { config: { database: { url } } } : {}),
        connectMcp: false,
        logger: silentLogger,
      });
      onCleanup(() => host.close());
      expect(host.store).toBeInstanceOf(PostgresSessionStore);
      const id = sessionId();
      await host.store.createSession({ id });
      expect(await query(url, 'SELECT id FROM sessions WHERE id = $1', [id])).toEqual([{ id }]);
    }
  });
});
