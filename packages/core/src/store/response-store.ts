import { asc, count, desc, eq, getTableColumns, lt, type SQL, sql } from 'drizzle-orm';
import type { StoreConnection } from './connection.js';
import { responses, sessions } from './schema.js';
import { sessionNotFound } from './store-common.js';
import type { ResponseRecord, ResponseStore } from './types.js';

/**
 * The update half of {@link SqliteResponseStore.put}'s upsert: every column but the key takes the value the insert
 * half was given (`excluded`), so each JSON column is encoded and bound once. A stored response holds its whole answer
 * twice (its output, and the object in its request); giving the values to `set` as well encoded and bound them twice
 * more, four copies of the answer as it ended (ADR 0091).
 */
const REPLACE_WITH_INSERTED: Record<string, SQL> = Object.fromEntries(
  Object.entries(getTableColumns(responses))
    .filter(([key]) => key !== 'id')
    .map(([key, column]) => [key, sql.raw(`excluded."${column.name}"`)]),
);

/**
 * Stored objects of the HTTP Responses API (spec/core.md §9.2.4, §9.4.12), so that
 * `previous_response_id` and named conversations survive restarts and work across processes.
 */
export class SqliteResponseStore implements ResponseStore {
  /** @internal Built by the store that owns the connection. */
  constructor(private readonly connection: StoreConnection) {}

  /** Inserts the record, or replaces the stored one with the same id. */
  async put(record: ResponseRecord): Promise<void> {
    const { id, ...rest } = record;
    // drizzle writes a JS null as SQL NULL; a JSON null request is stored as the JSON text instead.
    const fields = { ...rest, request: rest.request === null ? sql`'null'` : rest.request };
    await this.connection.write('other', () => {
      const session = this.connection.db
        .select({ id: sessions.id })
        .from(sessions)
        .where(eq(sessions.id, record.sessionId))
        .get();
      if (!session) throw sessionNotFound(record.sessionId);
      this.connection.db
        .insert(responses)
        .values({ id, ...fields })
        .onConflictDoUpdate({ target: responses.id, set: REPLACE_WITH_INSERTED })
        .run();
    });
  }

  async get(id: string): Promise<ResponseRecord | null> {
    return this.connection.read(
      () => this.connection.db.select().from(responses).where(eq(responses.id, id)).get() ?? null,
    );
  }

  async count(): Promise<number> {
    return this.connection.read(() => this.connection.db.select({ value: count() }).from(responses).get()?.value ?? 0);
  }

  /** Deletes the record only; the session and its messages stay. */
  async delete(id: string): Promise<boolean> {
    return this.connection.write(
      'other',
      () => this.connection.db.delete(responses).where(eq(responses.id, id)).run().changes > 0,
    );
  }

  async latestForConversation(name: string): Promise<ResponseRecord | null> {
    return this.connection.read(
      () =>
        this.connection.db
          .select()
          .from(responses)
          .where(eq(responses.conversation, name))
          .orderBy(desc(responses.createdAt), desc(responses.id))
          .limit(1)
          .get() ?? null,
    );
  }

  async withOutputItems(itemIds: readonly string[]): Promise<ResponseRecord[]> {
    if (itemIds.length === 0) return [];
    const list = sql.join(
      itemIds.map((id) => sql`${id}`),
      sql`, `,
    );
    // A scan of the stored outputs: references are rare (one request per client turn) and records are pruned.
    return this.connection.read(() =>
      this.connection.db
        .select()
        .from(responses)
        .where(
          // CASE rather than AND: SQLite does not promise to test the type before it parses the value.
          sql`exists (select 1 from json_each(case when json_type(${responses.output}) = 'array' then ${responses.output} else '[]' end) as item where (case when item.type = 'object' then json_extract(item.value, '$.id') end) in (${list}))`,
        )
        .orderBy(asc(responses.createdAt), asc(responses.id))
        .all(),
    );
  }

  /** Deletes records created more than `olderThanMs` milliseconds ago; returns how many. */
  async prune(olderThanMs: number): Promise<number> {
    return this.connection.write('other', () => {
      const cutoff = this.connection.clock.now() - olderThanMs;
      return this.connection.db.delete(responses).where(lt(responses.createdAt, cutoff)).run().changes;
    });
  }
}
