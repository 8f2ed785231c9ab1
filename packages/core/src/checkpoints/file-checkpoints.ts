import { randomBytes } from 'node:crypto';
import { mkdir, readFile, unlink, writeFile } from 'node:fs/promises';
import { dirname, relative } from 'node:path';
import { isNotFoundError } from '../tools/file-access.js';
import { unifiedDiff } from '../tools/file-diff.js';
import type { FileAccess } from '../tools/types.js';

/** One checkpoint: the content a file had right before a file tool wrote it. */
export interface FileCheckpoint {
  /** 12 hex characters; unique within the host. */
  id: string;
  sessionId: string;
  /** Absolute path of the file that was about to be written. */
  path: string;
  /** Whether the file existed before the write (restoring a new file deletes it). */
  existed: boolean;
  /** Milliseconds since the epoch. */
  createdAt: number;
  /** Human-readable summary, e.g. `before writing src/app.ts`. */
  message: string;
}

/** A file's state at a checkpoint next to its state now. */
export interface CheckpointFileChange {
  path: string;
  /** The content at the checkpoint; null when the file did not exist then. */
  before: string | null;
  /** The content now; null when the file does not exist now. */
  after: string | null;
  /** Unified diff from `before` to `after` (empty when equal). */
  diff: string;
}

/** Options of {@link FileCheckpointStore}. */
export interface FileCheckpointStoreOptions {
  /** Files larger than this (bytes, UTF-8) are written without a checkpoint. Default 8 MiB. */
  maxFileBytes?: number;
  /** Checkpoints kept per session; the oldest are dropped first. Default 500. */
  maxPerSession?: number;
  /** Milliseconds since the epoch; injectable for tests. */
  now?: () => number;
}

interface StoredCheckpoint extends FileCheckpoint {
  content: string | null;
}

/**
 * File checkpoints for rollback: every write a file tool makes through a wrapped {@link FileAccess}
 * first records the file's previous content. Restoring a checkpoint puts every file written since
 * then back to its content at that checkpoint, newest write undone first. Checkpoints live in
 * memory for the life of the host (ADR 0006).
 */
export class FileCheckpointStore {
  private readonly bySession = new Map<string, StoredCheckpoint[]>();
  private readonly maxFileBytes: number;
  private readonly maxPerSession: number;
  private readonly now: () => number;

  constructor(options: FileCheckpointStoreOptions = {}) {
    this.maxFileBytes = options.maxFileBytes ?? 8 * 1024 * 1024;
    this.maxPerSession = options.maxPerSession ?? 500;
    this.now = options.now ?? Date.now;
  }

  /**
   * A file access that records a checkpoint before each `writeText`. `cwd` makes the message's
   * path relative when the file lies below it.
   */
  wrap(access: FileAccess, cwd: () => string): FileAccess {
    return {
      readText: (input) => access.readText(input),
      writeText: async (input) => {
        await this.record(access, input.sessionId, input.callId, input.path, cwd());
        await access.writeText(input);
      },
    };
  }

  /** The checkpoints of a session, newest first, without their contents. */
  list(sessionId: string): FileCheckpoint[] {
    return [...(this.bySession.get(sessionId) ?? [])].reverse().map(strip);
  }

  /** The checkpoint with this id (a unique prefix of at least 4 characters also matches). */
  find(sessionId: string, id: string): FileCheckpoint | undefined {
    const found = this.locate(sessionId, id);
    return found ? strip(found.checkpoint) : undefined;
  }

  /**
   * What changed since a checkpoint: for every file written at or after it, its content at the
   * checkpoint next to its content now. Throws when the id is unknown.
   */
  async diff(sessionId: string, id: string): Promise<CheckpointFileChange[]> {
    const located = this.locate(sessionId, id);
    if (!located) throw new Error(`no checkpoint ${id}`);
    const changes: CheckpointFileChange[] = [];
    for (const [path, before] of this.statesAt(located.list, located.index)) {
      const after = await readOrNull(path);
      changes.push({ path, before, after, diff: await unifiedDiff(path, before, after ?? '') });
    }
    return changes;
  }

  /**
   * Puts files back to their content at a checkpoint: every file written at or after it, or only
   * `path` when given. The checkpoints that were undone are dropped (all of them, or those of
   * `path`). Returns the paths restored. Throws when the id is unknown or `path` was not written
   * since the checkpoint.
   */
  async restore(sessionId: string, id: string, options: { path?: string } = {}): Promise<string[]> {
    const located = this.locate(sessionId, id);
    if (!located) throw new Error(`no checkpoint ${id}`);
    const states = this.statesAt(located.list, located.index);
    const targets = options.path === undefined ? [...states.keys()] : [options.path];
    for (const path of targets) {
      if (!states.has(path)) throw new Error(`${path} was not written since checkpoint ${located.checkpoint.id}`);
    }
    const restored: string[] = [];
    for (const path of targets) {
      const before = states.get(path) ?? null;
      if (before === null) {
        await unlink(path).catch((error: unknown) => {
          if (!isNotFoundError(error)) throw error;
        });
      } else {
        await mkdir(dirname(path), { recursive: true });
        await writeFile(path, before, 'utf8');
      }
      restored.push(path);
    }
    const undone = new Set(targets);
    const kept = located.list.filter((entry, index) => index < located.index || !undone.has(entry.path));
    this.bySession.set(sessionId, kept);
    return restored;
  }

  /** Drops a session's checkpoints (its contents are no longer kept). */
  forget(sessionId: string): void {
    this.bySession.delete(sessionId);
  }

  private async record(access: FileAccess, sessionId: string, callId: string, path: string, cwd: string) {
    let content: string | null;
    try {
      content = await access.readText({ sessionId, callId, path });
    } catch (error) {
      if (!isNotFoundError(error)) return;
      content = null;
    }
    if (content !== null && Buffer.byteLength(content, 'utf8') > this.maxFileBytes) return;
    const list = this.bySession.get(sessionId) ?? [];
    const shown = relative(cwd, path);
    const display = shown && !shown.startsWith('..') ? shown : path;
    list.push({
      id: randomBytes(6).toString('hex'),
      sessionId,
      path,
      existed: content !== null,
      createdAt: this.now(),
      message: `before ${content === null ? 'creating' : 'writing'} ${display}`,
      content,
    });
    if (list.length > this.maxPerSession) list.splice(0, list.length - this.maxPerSession);
    this.bySession.set(sessionId, list);
  }

  private locate(sessionId: string, id: string) {
    const list = this.bySession.get(sessionId) ?? [];
    const wanted = id.trim().toLowerCase();
    if (wanted.length < 4) return undefined;
    const matches = list
      .map((checkpoint, index) => ({ checkpoint, index }))
      .filter(({ checkpoint }) => checkpoint.id.startsWith(wanted));
    if (matches.length !== 1) return undefined;
    const [match] = matches as [{ checkpoint: StoredCheckpoint; index: number }];
    return { ...match, list };
  }

  /** Each file written at or after `index`, with its content at that point (its earliest pre-image). */
  private statesAt(list: StoredCheckpoint[], index: number): Map<string, string | null> {
    const states = new Map<string, string | null>();
    for (const entry of list.slice(index)) if (!states.has(entry.path)) states.set(entry.path, entry.content);
    return states;
  }
}

function strip(checkpoint: StoredCheckpoint): FileCheckpoint {
  const { content: _content, ...rest } = checkpoint;
  return rest;
}

async function readOrNull(path: string): Promise<string | null> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    if (isNotFoundError(error)) return null;
    throw error;
  }
}
