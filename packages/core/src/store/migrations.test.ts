import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { hasFts5 } from './migrations.js';

describe('hasFts5', () => {
  it('is true for the bundled SQLite build', () => {
    const sqlite = new Database(':memory:');
    expect(hasFts5(sqlite)).toBe(true);
    sqlite.close();
  });

  it('is false for a build that neither lists FTS5 nor can create an fts5 table', () => {
    const withoutFts5 = {
      pragma: () => [{ compile_options: 'ENABLE_JSON1' }],
      exec: () => {
        throw Object.assign(new Error('no such module: fts5'), { code: 'SQLITE_ERROR' });
      },
    } as unknown as Database.Database;
    expect(hasFts5(withoutFts5)).toBe(false);
  });
});
