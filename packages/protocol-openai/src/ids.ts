import { randomBytes, randomFillSync } from 'node:crypto';

/**
 * Random bytes for ids, from a pool refilled 4 KiB at a time (each byte handed out once), as the core's ids draw
 * theirs: a `randomBytes` call per request's completion id cost more than the id (issue 34).
 */
const POOL = Buffer.alloc(4096);
let poolOffset = POOL.length;

/** `count` random bytes of the pool, as lowercase hex. */
function pooledHex(count: number): string {
  if (count > POOL.length) return randomBytes(count).toString('hex');
  if (poolOffset + count > POOL.length) {
    randomFillSync(POOL);
    poolOffset = 0;
  }
  const hex = POOL.toString('hex', poolOffset, poolOffset + count);
  poolOffset += count;
  return hex;
}

/** `prefix` plus `length` lowercase hex characters (spec §0.5). */
export function hexId(prefix: string, length: number): string {
  return prefix + pooledHex(Math.ceil(length / 2)).slice(0, length);
}

/** Unix seconds with millisecond precision, for native objects (spec §0.5). */
export function nativeTime(milliseconds: number): number {
  return Math.round(milliseconds) / 1000;
}

/**
 * Prefix of the run id the runs API gives a turn that no run started (a gateway turn, a chat completion): `run_` and
 * the core's turn id (ADR 0076). A run's own id is `run_` and lowercase hex, so the two never meet.
 */
const TURN_RUN_PREFIX = 'run_turn_';

/** The run id of a core turn, as the runs API names a turn that no run started. */
export function turnRunId(turnId: string): string {
  return `run_${turnId}`;
}

/** The core turn id a run id names, when it names a turn that no run started; else null. */
export function turnIdOfRun(runId: string): string | null {
  return runId.startsWith(TURN_RUN_PREFIX) ? runId.slice('run_'.length) : null;
}
