import { createHash } from 'node:crypto';
import { appendFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Entries kept per project; older ones are dropped when the file is rewritten. */
export const HISTORY_LIMIT = 1000;

/**
 * The input history of one project (working directory), kept in
 * `HERMES_HOME/history/<hash of the directory>.jsonl`: one JSON string per line, so multi-line
 * entries survive. The file is private to the user (it may hold pasted secrets).
 */
export class InputHistory {
  readonly path: string;
  #entries: string[];

  constructor(homeDir: string, cwd: string) {
    const folder = join(homeDir, 'history');
    const key = createHash('sha256').update(cwd).digest('hex').slice(0, 16);
    this.path = join(folder, `${key}.jsonl`);
    this.#entries = readEntries(this.path);
    if (this.#entries.length > HISTORY_LIMIT * 2) {
      this.#entries = this.#entries.slice(-HISTORY_LIMIT);
      this.#rewrite();
    }
  }

  /** Entries, oldest first. */
  get entries(): readonly string[] {
    return this.#entries;
  }

  /** Records a submitted entry (a repeat of the last one is not recorded twice). */
  add(entry: string): void {
    if (entry.trim() === '' || this.#entries.at(-1) === entry) return;
    this.#entries.push(entry);
    try {
      mkdirSync(join(this.path, '..'), { recursive: true, mode: 0o700 });
      appendFileSync(this.path, `${JSON.stringify(entry)}\n`, { mode: 0o600 });
    } catch {
      // A read-only HERMES_HOME costs the persistence of history, never the chat.
    }
  }

  #rewrite(): void {
    try {
      writeFileSync(this.path, this.#entries.map((entry) => `${JSON.stringify(entry)}\n`).join(''), { mode: 0o600 });
    } catch {
      // As in add: history is a convenience.
    }
  }
}

function readEntries(path: string): string[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return [];
  }
  const entries: string[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    try {
      const entry = JSON.parse(line) as unknown;
      if (typeof entry === 'string') entries.push(entry);
    } catch {
      // A torn last line (a crash mid-write) is skipped.
    }
  }
  return entries;
}
