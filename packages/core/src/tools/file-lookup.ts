import type { Stats } from 'node:fs';
import { open, readdir, stat } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import { displayPath } from './paths.js';

/** Bytes inspected for a NUL byte to call a file binary (spec/core.md §11.2). */
export const BINARY_SNIFF_BYTES = 8 * 1024;

/** `stat` that returns null when the path does not exist. */
export async function statOrNull(absolutePath: string): Promise<Stats | null> {
  try {
    return await stat(absolutePath);
  } catch (error) {
    if ((error as { code?: string }).code === 'ENOENT' || (error as { code?: string }).code === 'ENOTDIR') return null;
    throw error;
  }
}

/** True when the first 8 KiB of the file hold a NUL byte. */
export async function looksBinary(absolutePath: string): Promise<boolean> {
  const handle = await open(absolutePath, 'r');
  try {
    const buffer = Buffer.alloc(BINARY_SNIFF_BYTES);
    const { bytesRead } = await handle.read(buffer, 0, BINARY_SNIFF_BYTES, 0);
    return buffer.subarray(0, bytesRead).includes(0);
  } finally {
    await handle.close();
  }
}

/**
 * The "not found" message of the file tools, with up to three similar names from the same
 * directory so the model can correct a typo without another round trip.
 */
export async function describeMissingFile(absolutePath: string, cwd: string): Promise<string> {
  const shown = displayPath(absolutePath, cwd);
  const directory = dirname(absolutePath);
  let entries: string[];
  try {
    entries = await readdir(directory);
  } catch {
    return `File not found: ${shown} (the directory ${displayPath(directory, cwd)} does not exist).`;
  }
  const similar = similarNames(basename(absolutePath), entries, 3);
  if (similar.length === 0) return `File not found: ${shown}.`;
  const prefix = displayPath(directory, cwd);
  const shownNames = similar.map((name) => (prefix === '.' ? name : `${prefix}/${name}`));
  return `File not found: ${shown}. Similar names: ${shownNames.join(', ')}`;
}

/** Names close to `wanted` (edit distance, shared stem or containment), best first. */
export function similarNames(wanted: string, candidates: readonly string[], count: number): string[] {
  const target = wanted.toLowerCase();
  const stem = stemOf(target);
  const scored: { name: string; score: number }[] = [];
  for (const name of candidates) {
    const lower = name.toLowerCase();
    const distance = editDistance(target, lower);
    const longest = Math.max(target.length, lower.length, 1);
    let score = 1 - distance / longest;
    if (stem.length >= 2 && stemOf(lower) === stem) score = Math.max(score, 0.9);
    if (target.length >= 3 && (lower.includes(target) || target.includes(lower))) score = Math.max(score, 0.75);
    if (score >= 0.5) scored.push({ name, score });
  }
  scored.sort(
    (left, right) => right.score - left.score || (left.name < right.name ? -1 : left.name > right.name ? 1 : 0),
  );
  return scored.slice(0, count).map((entry) => entry.name);
}

function stemOf(name: string): string {
  const dot = name.lastIndexOf('.');
  return dot > 0 ? name.slice(0, dot) : name;
}

/** Levenshtein distance (two rows). */
export function editDistance(left: string, right: string): number {
  if (left === right) return 0;
  let previous = Array.from({ length: right.length + 1 }, (_, index) => index);
  let current = new Array<number>(right.length + 1).fill(0);
  for (let row = 1; row <= left.length; row += 1) {
    current[0] = row;
    for (let column = 1; column <= right.length; column += 1) {
      const cost = left[row - 1] === right[column - 1] ? 0 : 1;
      current[column] = Math.min(
        (previous[column] as number) + 1,
        (current[column - 1] as number) + 1,
        (previous[column - 1] as number) + cost,
      );
    }
    [previous, current] = [current, previous];
  }
  return previous[right.length] as number;
}
