import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { createTestDatabase } from '../support/postgres.js';

describe('test PostgreSQL server', () => {
  it('is reachable and gives each test a database of its own that can be dropped', async () => {
    const first = await createTestDatabase();
    const second = await createTestDatabase();
    expect(first.url).not.toBe(second.url);
    const client = new pg.Client({ connectionString: first.url });
    await client.connect();
    const { rows } = await client.query<{ major: number }>(
      "SELECT current_setting('server_version_num')::int / 10000 AS major",
    );
    await client.end();
    expect(rows[0]?.major).toBeGreaterThanOrEqual(15);
    await first.drop();
    await second.drop();
  });
});
