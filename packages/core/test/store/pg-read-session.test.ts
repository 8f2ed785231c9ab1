import { describe, expect, it } from 'vitest';
import { openPostgresStore } from '../../src/store/index.js';
import type { PgRunBus } from '../../src/store/pg-bus.js';
import { createRunBus } from '../../src/store/run-bus.js';
import { createTestDatabase } from '../support/postgres.js';
import { onCleanup, sessionId } from './helpers.js';

describe('readSession on PostgreSQL with the listening instances (ADR 0065)', () => {
  it('lists the other run buses listening on the database in the same read, as RunBus.listening does', async () => {
    const database = await createTestDatabase();
    onCleanup(database.drop);
    const stores = await Promise.all([1, 2].map(() => openPostgresStore({ url: database.url, poolSize: 2 })));
    const buses = stores.map((store, index) => createRunBus(store, `instance-${index}`) as PgRunBus);
    onCleanup(async () => {
      for (const bus of buses) await bus.close();
      for (const store of stores) await store.close();
    });
    await Promise.all(buses.map((bus) => bus.ready()));
    const [first, second] = stores;
    const id = sessionId();
    await first?.createSession({ id, title: 'Listened' });

    const byFirst = await first?.readSession(id, { listeningBesides: 'instance-0' });
    expect(byFirst?.session.id).toBe(id);
    expect(byFirst?.listening?.size).toBe(1);
    expect(byFirst?.listening?.covers([])).toBe(false);
    expect(byFirst?.listening?.covers(['instance-1'])).toBe(true);
    expect((await buses[0]?.listening())?.covers(['instance-1'])).toBe(true);
    // By title too, and from the other instance's store.
    const bySecond = await second?.readSession('listened', { listeningBesides: 'instance-1' });
    expect(bySecond?.session.id).toBe(id);
    expect(bySecond?.listening?.covers(['instance-0'])).toBe(true);
    // An instance not listening itself sees both.
    expect((await first?.readSession(id, { listeningBesides: 'instance-9' }))?.listening?.size).toBe(2);
    // Not asked, not listed.
    expect((await first?.readSession(id))?.listening).toBeUndefined();

    // A bus that stopped listening is no longer listed once its connection is gone.
    await buses[1]?.close();
    await expect
      .poll(async () => (await first?.readSession(id, { listeningBesides: 'instance-0' }))?.listening?.size, {
        timeout: 30_000,
      })
      .toBe(0);
  }, 120_000);
});
