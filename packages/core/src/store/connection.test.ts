import { describe, expect, it } from 'vitest';
import { isLockError, retryDelay } from './connection.js';

describe('lock errors and retry delays', () => {
  it('recognizes SQLITE_BUSY and SQLITE_LOCKED by result code, extended codes included, never by message', () => {
    for (const code of ['SQLITE_BUSY', 'SQLITE_BUSY_SNAPSHOT', 'SQLITE_LOCKED', 'SQLITE_LOCKED_SHAREDCACHE']) {
      expect(isLockError({ code })).toBe(true);
    }
    for (const value of [
      { code: 'SQLITE_CONSTRAINT' },
      new Error('database is locked'),
      { code: 5 },
      null,
      'SQLITE_BUSY',
    ]) {
      expect(isLockError(value)).toBe(false);
    }
  });

  it('grows from 50 ms to at most 1 s, jittered between half and all of the step', () => {
    expect(retryDelay(0, () => 0)).toBe(25);
    expect(retryDelay(0, () => 1)).toBe(50);
    expect(retryDelay(1, () => 1)).toBe(100);
    expect(retryDelay(4, () => 1)).toBe(800);
    expect(retryDelay(5, () => 1)).toBe(1_000);
    expect(retryDelay(60, () => 1)).toBe(1_000);
    expect(retryDelay(60, () => 0)).toBe(500);
  });
});
