import { randomFillSync } from 'node:crypto';

/**
 * Random bytes from a pool refilled 4 KiB at a time, each byte handed out once: a `randomBytes`
 * call per id cost more than the id (issue 18, ADR 0021); node's own `randomUUID` pools the same way.
 */
const POOL = Buffer.alloc(4096);
let poolOffset = POOL.length;

function randomBytes(count: number): Buffer {
  if (count > POOL.length) return randomFillSync(Buffer.alloc(count));
  if (poolOffset + count > POOL.length) {
    randomFillSync(POOL);
    poolOffset = 0;
  }
  const bytes = Buffer.from(POOL.subarray(poolOffset, poolOffset + count));
  poolOffset += count;
  return bytes;
}

const ALPHANUMERIC = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

/** `length` random characters from [A-Za-z0-9]. */
export function randomToken(length: number): string {
  const bytes = randomBytes(length * 2);
  let out = '';
  for (let index = 0; out.length < length; index += 1) {
    const byte = bytes[index % bytes.length] as number;
    // Rejection sampling keeps the distribution uniform over 62 characters.
    if (byte < 248) out += ALPHANUMERIC[byte % 62];
    if (index >= bytes.length - 1 && out.length < length) return out + randomToken(length - out.length);
  }
  return out;
}

/** Session id `YYYYMMDD_HHMMSS_xxxxxx` (UTC creation time + 6 lowercase hex characters). */
export function newSessionId(now: number): string {
  const iso = new Date(now).toISOString(); // 2026-11-30T02:45:53.123Z
  const stamp = `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}_${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}`;
  return `${stamp}_${randomBytes(3).toString('hex')}`;
}

/** Prefixed random id, e.g. `turn_` + 16 characters. */
export function newId(prefix: string, length: number): string {
  return `${prefix}${randomToken(length)}`;
}
