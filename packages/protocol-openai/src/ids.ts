import { randomBytes } from 'node:crypto';

/** `prefix` plus `length` lowercase hex characters (spec §0.5). */
export function hexId(prefix: string, length: number): string {
  return (
    prefix +
    randomBytes(Math.ceil(length / 2))
      .toString('hex')
      .slice(0, length)
  );
}

/** A session id in the core's format `YYYYMMDD_HHMMSS_xxxxxx`, for sessions this package creates itself. */
export function newSessionId(now: number = Date.now()): string {
  const iso = new Date(now).toISOString();
  const stamp = `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}_${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}`;
  return `${stamp}_${randomBytes(3).toString('hex')}`;
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
