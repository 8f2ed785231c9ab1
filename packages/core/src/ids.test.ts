import { describe, expect, it } from 'vitest';
import { newId, newSessionId, randomToken } from './ids.js';

describe('ids', () => {
  it('random tokens have the asked length and charset, and do not repeat across pool refills', () => {
    const seen = new Set<string>();
    // 3,000 tokens of 16 characters draw ~96 KB: the 4 KiB pool is refilled many times.
    for (let index = 0; index < 3_000; index += 1) {
      const token = randomToken(16);
      expect(token).toMatch(/^[A-Za-z0-9]{16}$/);
      seen.add(token);
    }
    expect(seen.size).toBe(3_000);
    expect(randomToken(5_000)).toMatch(/^[A-Za-z0-9]{5000}$/);
  });

  it('session ids carry the UTC creation time and six hex characters; prefixed ids their prefix', () => {
    const id = newSessionId(Date.UTC(2026, 10, 30, 2, 45, 53));
    expect(id).toMatch(/^20261130_024553_[0-9a-f]{6}$/);
    expect(newId('turn_', 16)).toMatch(/^turn_[A-Za-z0-9]{16}$/);
  });
});
