import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { Logger } from '../types.js';

/** Write transactions between two checkpoint requests: about the 1,000 WAL pages of SQLite's own automatic checkpoint. */
export const CHECKPOINT_EVERY_WRITES = 128;

/**
 * The checkpointer's thread: its own connection to the file, one PASSIVE checkpoint per request
 * (requests that arrive during one are folded into it). CommonJS, evaluated: the package is bundled,
 * so there is no file of its own to point a worker at.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const database = new Database(workerData.path, { timeout: workerData.busyTimeoutMs });
parentPort.on('message', () => {
  try {
    database.pragma('wal_checkpoint(PASSIVE)');
  } catch (error) {
    parentPort.postMessage({ error: String(error && error.message || error) });
    return;
  }
  parentPort.postMessage({ done: true });
});
`;

/**
 * Runs the WAL checkpoints of a store's file on a thread of its own (ADR 0060). SQLite's automatic
 * checkpoint runs inside the commit that crosses 1,000 WAL pages and fsyncs the WAL and the database
 * there, which was half the wall time of a 4-row append. The store's connection turns its automatic
 * checkpoint off and asks this one every {@link CHECKPOINT_EVERY_WRITES} commits instead; the thread
 * starts on the first request, so a short-lived store never starts it. If the thread cannot start or
 * fails, the connection gets its automatic checkpoint back.
 */
export class WalCheckpointer {
  private worker: Worker | undefined;
  private writes = 0;
  private running = false;
  private requested = false;
  private failed = false;

  constructor(
    private readonly path: string,
    private readonly busyTimeoutMs: number,
    private readonly logger: Logger,
    /** Gives the connection its automatic checkpoint back. */
    private readonly fallBack: () => void,
  ) {}

  /** Counts a committed write; every {@link CHECKPOINT_EVERY_WRITES}th asks for a checkpoint. */
  committed(): void {
    this.writes += 1;
    if (this.writes < CHECKPOINT_EVERY_WRITES || this.failed) return;
    this.writes = 0;
    if (this.running) {
      this.requested = true;
      return;
    }
    this.start();
  }

  private start(): void {
    try {
      this.worker ??= this.spawn();
    } catch (error) {
      this.fail(error);
      return;
    }
    this.running = true;
    this.requested = false;
    this.worker.postMessage('checkpoint');
  }

  private spawn(): Worker {
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { driver, path: this.path, busyTimeoutMs: this.busyTimeoutMs },
    });
    // Never keeps the process alive; `close` ends it.
    worker.unref();
    worker.on('message', (message: { error?: string }) => {
      this.running = false;
      if (message.error !== undefined) this.logger.debug('WAL checkpoint failed', { error: message.error });
      if (this.requested) this.start();
    });
    worker.on('error', (error) => this.fail(error));
    return worker;
  }

  private fail(error: unknown): void {
    if (this.failed) return;
    this.failed = true;
    this.running = false;
    this.logger.warn('WAL checkpointer thread failed; SQLite checkpoints in the commit again', {
      error: error instanceof Error ? error.message : String(error),
    });
    this.fallBack();
  }

  /** Ends the thread (a checkpoint cut short leaves the WAL whole; SQLite checkpoints at the last close). */
  close(): void {
    this.failed = true;
    void this.worker?.terminate();
    this.worker = undefined;
  }
}
