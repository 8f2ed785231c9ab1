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
