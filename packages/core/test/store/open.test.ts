import { existsSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { HermesError } from '../../src/errors.js';
import { CHECKPOINT_EVERY_WRITES } from '../../src/store/checkpointer.js';
import { openSqliteStore, resolveMigrationsFolder } from '../../src/store/index.js';
import { openTestStore, sessionId, temporaryDirectory, user } from './helpers.js';

const packageRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

describe('opening the store', () => {
  it('creates the database file with mode 0600, in a directory created when missing', async () => {
    const path = join(temporaryDirectory(), 'nested', 'home', 'state.db');
    const store = await openTestStore(path);
    await store.createSession({ id: sessionId() }); // a write, so the WAL sidecars exist
    expect(statSync(path).mode & 0o777).toBe(0o600);
    for (const sidecar of [`${path}-wal`, `${path}-shm`]) {
      expect(existsSync(sidecar)).toBe(true);
      expect(statSync(sidecar).mode & 0o777).toBe(0o600);
    }
  });

  it('checkpoints the WAL on a thread of its own, not in the commits (ADR 0060)', async () => {
    const path = join(temporaryDirectory(), 'state.db');
    const warnings: string[] = [];
    const logger = { debug() {}, info() {}, warn: (message: string) => warnings.push(message), error() {} };
    const store = await openTestStore(path, { logger });
    const id = sessionId();
    await store.createSession({ id });
    const sizeBefore = statSync(path).size;
    for (let write = 0; write < CHECKPOINT_EVERY_WRITES; write += 1) {
      await store.appendMessages(id, [user(`row ${write}`)]);
    }
    // Fewer pages than SQLite's own automatic checkpoint would wait for: only the thread copies them into the file.
    const deadline = Date.now() + 60_000;
    while (statSync(path).size === sizeBefore && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(warnings).toEqual([]);
    expect(statSync(path).size).toBeGreaterThan(sizeBefore);
    expect(await store.loadConversation(id)).toHaveLength(CHECKPOINT_EVERY_WRITES);
  }, 90_000);

  it('sets the pragmas of §9.1 and records the applied migrations once', async () => {
    const path = join(temporaryDirectory(), 'state.db');
    const store = await openTestStore(path);
    await store.close();
    const reopened = await openTestStore(path);
    const id = sessionId();
    await reopened.createSession({ id });
    const raw = new Database(path, { readonly: true });
    expect(raw.pragma('journal_mode', { simple: true })).toBe('wal');
    const applied = raw.prepare('SELECT hash FROM __drizzle_migrations').all();
    expect(applied.length).toBe(4);
    const tables = raw.prepare("SELECT name FROM sqlite_master WHERE type IN ('table') ORDER BY name").all();
    expect(tables.map((row) => (row as { name: string }).name)).toEqual(
      expect.arrayContaining([
        'messages',
        'messages_fts',
        'messages_fts_indexed',
        'responses',
        'runs',
        'sessions',
        'turn_leases',
        'usage_by_model',
      ]),
    );
    raw.close();
  });

  it('enforces foreign keys on its connection', async () => {
    const store = await openTestStore('memory');
    const error = await store
      .createSession({ id: sessionId(), parentSessionId: 'no-such-parent' })
      .catch((caught: unknown) => caught);
    expect((error as { code?: string }).code).toBe('SQLITE_CONSTRAINT_FOREIGNKEY');
  });

  it('uses DELETE journaling when asked', async () => {
    const path = join(temporaryDirectory(), 'state.db');
    const store = await openTestStore(path, { journalMode: 'delete' });
    await store.createSession({ id: sessionId() });
    const raw = new Database(path, { readonly: true });
    expect(raw.pragma('journal_mode', { simple: true })).toBe('delete');
    raw.close();
  });

  it('refuses a database migrated by a newer version with schema_too_new naming the file', async () => {
    const path = join(temporaryDirectory(), 'state.db');
    const store = await openSqliteStore({ path });
    const id = sessionId();
    await store.createSession({ id });
    await store.appendMessages(id, [user('keep me')]);
    await store.close();
    const raw = new Database(path);
    raw
      .prepare('INSERT INTO __drizzle_migrations (hash, created_at) VALUES (?, ?)')
      .run('from-the-future', 99_999_999_999_999);
    raw.close();

    const error = await openSqliteStore({ path }).catch((caught: unknown) => caught);
    expect(HermesError.isInstance(error) && error.code).toBe('schema_too_new');
    expect((error as Error).message).toContain(path);

    const check = new Database(path, { readonly: true });
    expect(check.prepare('SELECT content FROM messages').all()).toEqual([{ content: 'keep me' }]);
    check.close();
  });

  it('finds the shipped migrations folder from the package root', () => {
    const folder = resolveMigrationsFolder();
    expect(folder).toBe(join(packageRoot, 'drizzle'));
    expect(existsSync(join(folder, 'meta', '_journal.json'))).toBe(true);
  });

  it('reports a missing migrations folder instead of opening an empty schema', async () => {
    const path = join(temporaryDirectory(), 'state.db');
    const error = await openSqliteStore({ path, migrationsFolder: join(temporaryDirectory(), 'nothing') }).catch(
      (caught: unknown) => caught,
    );
    expect((error as Error).message).toContain('_journal.json');
  });
});
