import { hang, step, text } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually, openRun, prompt, type Run, teardown } from './conformance-helpers.js';

afterEach(async (context) => {
  await teardown(context.task.result?.state === 'fail');
});

/** Writes several JSON-RPC messages in one write, so the agent reads them in one chunk. */
function writeTogether(run: Run, ...messages: Record<string, unknown>[]): void {
  run.agent.writeRaw(messages.map((message) => JSON.stringify({ jsonrpc: '2.0', ...message })).join('\n'));
}

function promptMessage(run: Run, id: string, textValue: string) {
  return {
    id,
    method: 'session/prompt',
    params: { sessionId: run.sessionId, prompt: [{ type: 'text', text: textValue }] },
  };
}

function responseOf(run: Run, id: string) {
  return run.agent.waitFor((line) => line.from === 'agent' && line.message.id === id && !line.message.method);
}

describe('session/cancel applies in wire order, whatever order the SDK dispatches handlers in (issue 19.1, test 33)', () => {
  it('a prompt read in the same chunk just before a cancel is cancelled with the running one', async () => {
    const run = await openRun({ script: [step(hang())] });
    const running = prompt(run, 'A');
    await eventually(() => run.fixture.server.requests.length === 1);
    writeTogether(run, promptMessage(run, 'queued-b', 'B'), {
      method: 'session/cancel',
      params: { sessionId: run.sessionId },
    });
    expect((await running).stopReason).toBe('cancelled');
    expect((await responseOf(run, 'queued-b')).message.result).toEqual({ stopReason: 'cancelled' });
    expect(run.fixture.server.calls).toHaveLength(1);
  });

  it('a prompt read in the same chunk just after a cancel runs after the cancelled one', async () => {
    const run = await openRun({ script: [step(hang()), step(text('C answer'))] });
    const running = prompt(run, 'A');
    await eventually(() => run.fixture.server.requests.length === 1);
    writeTogether(
      run,
      { method: 'session/cancel', params: { sessionId: run.sessionId } },
      promptMessage(run, 'next-c', 'C'),
    );
    expect((await running).stopReason).toBe('cancelled');
    expect((await responseOf(run, 'next-c')).message.result).toEqual({ stopReason: 'end_turn' });
    expect(run.fixture.server.calls).toHaveLength(2);
  });

  it('with nothing running, a cancel followed by a prompt in one chunk leaves the prompt alone', async () => {
    const run = await openRun({ script: [step(text('D answer'))] });
    writeTogether(
      run,
      { method: 'session/cancel', params: { sessionId: run.sessionId } },
      promptMessage(run, 'idle-d', 'D'),
    );
    expect((await responseOf(run, 'idle-d')).message.result).toEqual({ stopReason: 'end_turn' });
  });
});
