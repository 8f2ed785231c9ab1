import { expect } from 'vitest';
import type { AgentEvent } from '../../src/events.js';
import type { FileAccess } from '../../src/tools/types.js';

/** Event types in order, leaving out `status`. */
export function typesOf(events: AgentEvent[]): string[] {
  return events.filter((event) => event.type !== 'status').map((event) => event.type);
}

/** Checklist item 4: the invariants every scenario must keep. */
export function assertTurnInvariants(events: AgentEvent[]): void {
  for (let index = 1; index < events.length; index += 1) {
    expect(events[index]!.seq).toBeGreaterThan(events[index - 1]!.seq);
  }
  expect(events[0]?.type).toBe('turn.start');
  expect(events[events.length - 1]?.type).toBe('turn.end');
  const starts = new Map<string, number>();
  const ends = new Map<string, number>();
  for (const event of events) {
    if (event.type === 'tool.start') starts.set(event.callId, (starts.get(event.callId) ?? 0) + 1);
    if (event.type === 'tool.end') ends.set(event.callId, (ends.get(event.callId) ?? 0) + 1);
  }
  expect([...starts.keys()].sort()).toEqual([...ends.keys()].sort());
  for (const count of [...starts.values(), ...ends.values()]) expect(count).toBe(1);
}

/** Waits until `predicate` holds, checking after each macrotask (no timing assertion: bounded by count). */
export async function until(predicate: () => boolean, attempts = 2000): Promise<void> {
  for (let attempt = 0; attempt < attempts; attempt += 1) {
    if (predicate()) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error('condition not reached');
}

/**
 * A file access whose reads wait until the test releases them, to hold a turn inside its tool
 * batch (for steer and redirect tests).
 */
export function heldReads(content: string): {
  fileAccess: FileAccess;
  started: () => Promise<void>;
  release: () => void;
} {
  let release: (() => void) | null = null;
  return {
    fileAccess: {
      readText: () =>
        new Promise((resolve) => {
          release = () => resolve(content);
        }),
      async writeText() {},
    },
    started: () => until(() => release !== null),
    release: () => release?.(),
  };
}
