import { randomBytes } from 'node:crypto';

/** Random lowercase hex of `length` characters. */
export function randomHex(length: number): string {
  return randomBytes(Math.ceil(length / 2))
    .toString('hex')
    .slice(0, length);
}

const issuedRuntimeIds = new Set<string>();

/** A runtime id (§3.1): 8 lowercase hex, never reused within the process so stale ids always give 4001. */
export function newRuntimeId(): string {
  for (;;) {
    const id = randomHex(8);
    if (!issuedRuntimeIds.has(id)) {
      issuedRuntimeIds.add(id);
      return id;
    }
  }
}

/** A server-request id: `srq-` plus 12 lowercase hex (§6.1). */
export function newServerRequestId(): string {
  return `srq-${randomHex(12)}`;
}
