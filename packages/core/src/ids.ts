import { randomFillSync } from 'node:crypto';

/**
 * Random bytes from a pool refilled 4 KiB at a time, each byte handed out once: a `randomBytes`
 * call per id cost more than the id (issue 18, ADR 0021); node's own `randomUUID` pools the same way.
 * The ids are read straight from the pool, without a Buffer per id (ADR 0098).
 */
const POOL = Buffer.alloc(4096);
let poolOffset = POOL.length;

/** Hands out `count` unused bytes of the pool (`count` at most its size): returns where they start. */
function takeFromPool(count: number): number {
  if (poolOffset + count > POOL.length) {
    randomFillSync(POOL);
    poolOffset = 0;
  }
  const start = poolOffset;
  poolOffset += count;
  return start;
}

const ALPHANUMERIC = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

/** `length` random characters from [A-Za-z0-9]. */
export function randomToken(length: number): string {
  const count = length * 2;
  let bytes: Buffer = POOL;
  let start = 0;
  if (count > POOL.length) bytes = randomFillSync(Buffer.alloc(count));
  else start = takeFromPool(count);
  let out = '';
  for (let index = 0; out.length < length; index += 1) {
    const byte = bytes[start + (index % count)] as number;
    // Rejection sampling keeps the distribution uniform over 62 characters.
    if (byte < 248) out += ALPHANUMERIC[byte % 62];
    if (index >= count - 1 && out.length < length) return out + randomToken(length - out.length);
  }
  return out;
}

/** Session id `YYYYMMDD_HHMMSS_xxxxxx` (UTC creation time + 6 lowercase hex characters). */
export function newSessionId(now: number): string {
  const iso = new Date(now).toISOString(); // 2026-11-30T02:45:53.123Z
  const stamp = `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}_${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}`;
  const start = takeFromPool(3);
  return `${stamp}_${POOL.toString('hex', start, start + 3)}`;
}

/** Prefixed random id, e.g. `turn_` + 16 characters. */
export function newId(prefix: string, length: number): string {
  return `${prefix}${randomToken(length)}`;
}
