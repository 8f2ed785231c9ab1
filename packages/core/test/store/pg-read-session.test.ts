import { describe, expect, it } from 'vitest';
import { sessionId, twoPostgresInstances } from './helpers.js';

describe('readSession on PostgreSQL with the listening instances (ADR 0065)', () => {
  it('lists the other run buses listening on the database in the same read, as RunBus.listening does', async () => {
    const { stores, buses } = await twoPostgresInstances();
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
