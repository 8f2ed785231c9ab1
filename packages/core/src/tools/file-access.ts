import { readFile, writeFile } from 'node:fs/promises';
import type { FileAccess } from './types.js';

/**
 * The default file-access seam (spec/core.md §24.1): reads and writes the local file system.
 * `readText` with `line` (1-based) and/or `limit` returns only that range of lines, each with its
 * original terminator. Errors keep Node's `code` (`ENOENT` for a missing file). `writeText`
 * writes in place, so an existing file keeps its mode and a symbolic link keeps pointing at the
 * file it names.
 */
export function createLocalFileAccess(): FileAccess {
  return {
    async readText(input) {
      const text = await readFile(input.path, 'utf8');
      if (input.line === undefined && input.limit === undefined) return text;
      return sliceLines(text, input.line ?? 1, input.limit);
    },
    async writeText(input) {
      await writeFile(input.path, input.content, 'utf8');
    },
  };
}

/** Lines `line … line + limit - 1` (1-based) of `text`, terminators kept. */
export function sliceLines(text: string, line: number, limit?: number): string {
  let start = 0;
  for (let current = 1; current < line; current += 1) {
    const next = text.indexOf('\n', start);
    if (next === -1) return '';
    start = next + 1;
  }
  if (limit === undefined) return text.slice(start);
  let end = start;
  for (let taken = 0; taken < limit; taken += 1) {
    const next = text.indexOf('\n', end);
    if (next === -1) return text.slice(start);
    end = next + 1;
  }
  return text.slice(start, end);
}

/** True for the "file does not exist" failure of a file-access seam. */
export function isNotFoundError(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 'ENOENT';
}

/** The message of an unknown thrown value. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
