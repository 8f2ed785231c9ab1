import { setImmediate as nextLoopTurn } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { TurnAdmission } from './turn-admission.js';

describe('TurnAdmission.paceStart', () => {
  it('lets a lone turn begin at once', async () => {
    const admission = new TurnAdmission(() => 0);
    expect(admission.paceStart()).toBeNull();
    await nextLoopTurn();
    // The next turn of the loop has nothing begun yet.
    expect(admission.paceStart()).toBeNull();
  });

  it('begins one turn per turn of the event loop in a burst, in arrival order', async () => {
    const admission = new TurnAdmission(() => 0);
    const begun: number[] = [];
    const burst = Array.from({ length: 5 }, (_, index) => {
      const waiting = admission.paceStart();
      if (waiting === null) {
        begun.push(index);
        return Promise.resolve();
      }
      return waiting.then(() => {
        begun.push(index);
      });
    });
    expect(begun).toEqual([0]);
    for (let turn = 1; turn < 5; turn += 1) {
      await nextLoopTurn();
      // Each turn of the loop lets exactly one more through (I/O callbacks run between them).
      expect(begun).toEqual(Array.from({ length: turn + 1 }, (_, index) => index));
    }
    await Promise.all(burst);
    // The last of the burst began in this turn of the loop; the next turn is free again.
    expect(admission.paceStart()).not.toBeNull();
    await nextLoopTurn();
    await nextLoopTurn();
    expect(admission.paceStart()).toBeNull();
  });

  it('queues a request behind waiting ones even when its turn of the loop has begun nothing', async () => {
    const admission = new TurnAdmission(() => 0);
    expect(admission.paceStart()).toBeNull();
    const second = admission.paceStart();
    const third = admission.paceStart();
    expect(second).not.toBeNull();
    const order: string[] = [];
    void second?.then(() => order.push('second'));
    void third?.then(() => order.push('third'));
    await nextLoopTurn();
    expect(order).toEqual(['second']);
    // The second began in this turn of the loop; a newcomer waits behind the third.
    const fourth = admission.paceStart();
    expect(fourth).not.toBeNull();
    void fourth?.then(() => order.push('fourth'));
    await nextLoopTurn();
    await nextLoopTurn();
    expect(order).toEqual(['second', 'third', 'fourth']);
  });
});

describe('TurnAdmission slots', () => {
  it('gives the slot and the session claim back on every path out, once', async () => {
    const admission = new TurnAdmission(() => 2);
    let leases = 0;
    const failing = admission.admit('s1', 'a', 'chat', () => {
      leases += 1;
    });
    await expect(
      failing.guard(async () => {
        throw new Error('setup failed');
      }),
    ).rejects.toThrow('setup failed');
    expect([admission.active, admission.turns.size, leases]).toEqual([0, 0, 1]);
    failing.release();
    expect([admission.active, leases]).toEqual([0, 1]);

    const settled = admission.admit('s1', 'b', 'chat');
    expect(await settled.guard(() => 'the turn')).toBe('the turn');
    expect(admission.active).toBe(1);
    settled.releaseWhen(Promise.reject(new Error('rejected settle')));
    await Promise.resolve();
    await Promise.resolve();
    expect([admission.active, admission.turns.size]).toEqual([0, 0]);
  });

  it('hands the session of each slot given back to afterTurn once, after its claim is free', () => {
    const afterTurn: string[] = [];
    const admission = new TurnAdmission(
      () => 0,
      undefined,
      (sessionId) => afterTurn.push(`${sessionId}:${admission.turns.holder(sessionId) === undefined}`),
    );
    const slot = admission.admit('s1', 'a', 'responses');
    const free = admission.admit(null, 'b');
    slot.release();
    slot.release();
    free.release();
    expect(afterTurn).toEqual(['s1:true']);
  });

  it('refuses a session another surface holds with 409 session_busy and takes nothing', () => {
    const admission = new TurnAdmission(() => 10);
    const gateway = admission.turns.claim('s1', { surface: 'gateway', id: 'runtime' });
    expect(() => admission.admit('s1', 'c', 'chat')).toThrow(
      expect.objectContaining({ status: 409, code: 'session_busy' }),
    );
    expect(admission.active).toBe(0);
    gateway?.release();
    const slot = admission.admit('s1', 'c', 'chat');
    expect(admission.busyWith('s1')).toBe('c');
    expect(admission.activeRunId('s1')).toBeUndefined();
    slot.release();
  });
});
