import { describe, expect, it } from 'vitest';
import type { ApprovalDecision, ClarifyAnswer } from '../types.js';
import { collectTurn } from './collect-turn.js';
import { createFakeClock } from './fake-clock.js';
import { createScriptedAnswers } from './scripted-answers.js';

describe('createScriptedAnswers', () => {
  it('hands out queued answers in order, then the default, and records every request', async () => {
    const approvals = createScriptedAnswers<ApprovalDecision>('deny');
    approvals.answer('once', { choice: 'session', comment: 'fine' });
    expect(approvals.remaining).toBe(2);
    const signal = new AbortController().signal;
    await expect(approvals.callback({ requestId: 'a' }, signal)).resolves.toBe('once');
    await expect(approvals.callback({ requestId: 'b' }, signal)).resolves.toEqual({
      choice: 'session',
      comment: 'fine',
    });
    await expect(approvals.callback({ requestId: 'c' }, signal)).resolves.toBe('deny');
    expect(approvals.requests).toEqual([{ requestId: 'a' }, { requestId: 'b' }, { requestId: 'c' }]);
    expect(approvals.remaining).toBe(0);
  });

  it('delays an answer on the injected clock', async () => {
    const clock = createFakeClock(0);
    const clarifications = createScriptedAnswers<ClarifyAnswer>(null, { clock });
    clarifications.answer({ delayMs: 5_000, value: 'blue' });
    let answer: ClarifyAnswer | undefined;
    const pending = clarifications.callback({ question: 'Colour?' }).then((value) => {
      answer = value;
    });
    await clock.advance(4_999);
    expect(answer).toBeUndefined();
    await clock.advance(1);
    await pending;
    expect(answer).toBe('blue');
    expect(clock.sleeps).toEqual([5_000]);
  });

  it("'never' stays pending until the signal aborts, then rejects with its reason", async () => {
    const clarifications = createScriptedAnswers<ClarifyAnswer>(null);
    clarifications.answer('never', { delayMs: 0, value: 'never' });
    const abort = new AbortController();
    let settled = false;
    const pending = clarifications.callback({ question: 'q' }, abort.signal).finally(() => {
      settled = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(settled).toBe(false);
    const reason = new Error('timed out');
    abort.abort(reason);
    await expect(pending).rejects.toBe(reason);
    await expect(clarifications.callback({ question: 'again' })).resolves.toBe('never');
  });

  it('a delayed answer is cut short by an abort', async () => {
    const clock = createFakeClock(0);
    const approvals = createScriptedAnswers<ApprovalDecision>('deny', { clock });
    approvals.answer({ delayMs: 60_000, value: 'once' });
    const abort = new AbortController();
    const pending = approvals.callback({}, abort.signal);
    abort.abort('expired');
    await expect(pending).rejects.toBe('expired');
    expect(clock.pendingCount).toBe(0);
  });
});

describe('collectTurn', () => {
  it('collects every event, then the result', async () => {
    const order: string[] = [];
    const run = Object.assign(
      (async function* () {
        yield { type: 'turn.start', seq: 1 };
        yield { type: 'turn.end', seq: 2 };
        order.push('events done');
      })(),
      {
        result: new Promise<{ outcome: string }>((resolve) => setTimeout(() => resolve({ outcome: 'completed' }), 5)),
      },
    );
    const collected = await collectTurn(run);
    expect(collected.events).toEqual([
      { type: 'turn.start', seq: 1 },
      { type: 'turn.end', seq: 2 },
    ]);
    expect(collected.result).toEqual({ outcome: 'completed' });
    expect(order).toEqual(['events done']);
  });

  it('rethrows a failing iteration without leaving the result rejection unhandled', async () => {
    const failure = new Error('iteration broke');
    const run = Object.assign(
      (async function* () {
        yield 1;
        throw failure;
      })(),
      { result: Promise.reject(new Error('result broke')) },
    );
    await expect(collectTurn(run)).rejects.toBe(failure);
  });
});
