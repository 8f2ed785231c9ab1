import type { SqliteSessionStore } from '@hermes/core';
import { step, text } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { type Rig, startRig } from './harness.js';

let rig: Rig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

describe('the store writes of a chat completion naming its session (issue 34.2, ADR 0086)', () => {
  it('on SQLite, a new session named by X-Hermes-Session-Id is born with its turn lease: three write transactions', async () => {
    rig = await startRig({ script: [step(text('First.')), step(text('Second.'))] });
    const store = rig.host.store as SqliteSessionStore;
    const current = rig;
    const chat = async (content: string) => {
      const before = store.committedWrites;
      const response = await current.raw('/v1/chat/completions', {
        method: 'POST',
        headers: { 'X-Hermes-Session-Id': 'header-named-session' },
        body: JSON.stringify({ model: 'hermes-agent', messages: [{ role: 'user', content }] }),
      });
      expect(response.status).toBe(200);
      await response.json();
      return store.committedWrites - before;
    };
    // The session's row with the turn's lease, the prompt row, the answer with the lease's release. A create of its
    // own followed by the turn's own take would be 4.
    expect(await chat('hello')).toBe(3);
    // The stored session's next turn: opening it writes nothing, the turn takes its lease itself (ADR 0086).
    expect(await chat('again')).toBe(3);
    expect((await store.loadConversation('header-named-session')).map((row) => row.content)).toEqual([
      'hello',
      'First.',
      'again',
      'Second.',
    ]);
  }, 60_000);
});
