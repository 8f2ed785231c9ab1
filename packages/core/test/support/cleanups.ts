import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';

/**
 * Cleanups run after each test, last registered first, and temporary folders that are removed
 * with them. Call once at the top of a test file.
 */
export function useCleanups(): { cleanups: (() => Promise<void> | void)[]; temp: (prefix: string) => string } {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  const temp = (prefix: string) => {
    const dir = mkdtempSync(join(tmpdir(), prefix));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    return dir;
  };
  return { cleanups, temp };
}
