import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import {
  openPostgresStore,
  openSqliteStore,
  type SqliteSessionStore,
  type SqliteStoreOptions,
} from '../../src/store/index.js';
import type { PgRunBus } from '../../src/store/pg-bus.js';
import { createRunBus } from '../../src/store/run-bus.js';
import type { NewMessage, SessionStore, UsageEntry } from '../../src/store/types.js';
import type { Clock } from '../../src/types.js';
import { createTestDatabase } from '../support/postgres.js';

const cleanups: (() => Promise<void> | void)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Registers work to undo after the current test. */
export function onCleanup(cleanup: () => Promise<void> | void): void {
  cleanups.push(cleanup);
}

/**
 * Two instances on one fresh PostgreSQL database: their stores and their run buses (`instance-0`, `instance-1`), both
 * listening; all closed and the database dropped after the test.
 */
export async function twoPostgresInstances() {
  const database = await createTestDatabase();
  onCleanup(database.drop);
  const stores = await Promise.all([1, 2].map(() => openPostgresStore({ url: database.url, poolSize: 2 })));
  const buses = stores.map((store, index) => createRunBus(store, `instance-${index}`) as PgRunBus);
  onCleanup(async () => {
    for (const bus of buses) await bus.close();
    for (const store of stores) await store.close();
  });
  await Promise.all(buses.map((bus) => bus.ready()));
  return { url: database.url, stores, buses };
}

/** A fresh temporary directory, removed after the test. */
export function temporaryDirectory(): string {
  const directory = mkdtempSync(join(tmpdir(), 'hermes-store-'));
  onCleanup(() => rmSync(directory, { recursive: true, force: true }));
  return directory;
}

/** Where a test's database lives: a real SQLite file in a temp dir, SQLite in memory, or PostgreSQL. */
export type StoreLocation = 'file' | 'memory' | 'postgres';

/** Every backend the store contract is checked on. */
export const STORE_LOCATIONS: StoreLocation[] = ['file', 'memory', 'postgres'];

/** Opens a store that is closed after the test (a PostgreSQL one on a fresh database, dropped after). */
export async function openTestStore(
  location?: 'file' | 'memory',
  options?: Partial<SqliteStoreOptions>,
): Promise<SqliteSessionStore>;
export async function openTestStore(
  location: StoreLocation,
  options?: Partial<SqliteStoreOptions>,
): Promise<SessionStore>;
export async function openTestStore(path: string, options?: Partial<SqliteStoreOptions>): Promise<SqliteSessionStore>;
export async function openTestStore(
  location: StoreLocation | string = 'file',
  options: Partial<SqliteStoreOptions> = {},
): Promise<SessionStore> {
  if (location === 'postgres') {
    const database = await createTestDatabase();
    onCleanup(database.drop);
    const store = await openPostgresStore({
      url: database.url,
      ...(options.clock ? { clock: options.clock } : {}),
      ...(options.retryBudgetsMs ? { retryBudgetsMs: options.retryBudgetsMs } : {}),
      poolSize: 4,
    });
    onCleanup(() => store.close());
    return store;
  }
  const path =
    location === 'memory' ? ':memory:' : location === 'file' ? join(temporaryDirectory(), 'state.db') : location;
  const store = await openSqliteStore({ path, ...options });
  onCleanup(() => store.close());
  return store;
}

/**
 * A clock whose time only moves when told; `sleep` advances it at once, so waits that go through
 * the clock cost no real time. Every sleep is recorded.
 */
export function steppingClock(start = 1_700_000_000_000): Clock & { sleeps: number[]; advance(ms: number): void } {
  let now = start;
  const sleeps: number[] = [];
  return {
    sleeps,
    now: () => now,
    advance(ms) {
      now += ms;
    },
    async sleep(ms, signal) {
      signal?.throwIfAborted();
      sleeps.push(ms);
      now += ms;
      await Promise.resolve();
      signal?.throwIfAborted();
    },
    setTimer(fn, ms) {
      const timer = setTimeout(fn, ms);
      return () => clearTimeout(timer);
    },
  };
}

/** A user row. */
export function user(content: string, extra: Partial<NewMessage> = {}): NewMessage {
  return { role: 'user', content, ...extra };
}

/** An assistant row. */
export function assistant(content: string, extra: Partial<NewMessage> = {}): NewMessage {
  return { role: 'assistant', content, ...extra };
}

/** One main-task model call of the scripted model: 10 tokens in, 5 out, no cost known. */
export const scriptedUsage: UsageEntry = {
  provider: 'scripted',
  model: 'fake',
  task: 'main',
  usage: {
    inputTokens: 10,
    outputTokens: 5,
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
    reasoningTokens: 0,
    totalTokens: 15,
    apiCalls: 1,
  },
  costUsd: 0,
  costStatus: 'unknown',
};

/** A tool row answering `toolCallId`. */
export function tool(toolCallId: string, toolName: string, content: string): NewMessage {
  return { role: 'tool', content, toolCallId, toolName };
}

let sessionCounter = 0;

/** A unique session id in the spec's shape. */
export function sessionId(): string {
  sessionCounter += 1;
  return `20260101_000000_${sessionCounter.toString(16).padStart(6, '0')}`;
}
