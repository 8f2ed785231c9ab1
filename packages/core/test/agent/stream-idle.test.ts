import { afterEach, describe, expect, it } from 'vitest';
import { collectTurn, createTestHost, delay, hang, step, type TestHost, text } from '../../src/testing/index.js';

let host: TestHost | null = null;
afterEach(async () => {
  await host?.dispose();
  host = null;
});

const IDLE_MS = 120_000; // agent.stream_idle_timeout's default, 120 s (spec/core.md §7.6 item 4).

describe('the model stream idle timeout (agent.stream_idle_timeout)', () => {
  it('a stream silent for the timeout is aborted as timeout and retried; the partial text is discarded', async () => {
    host = await createTestHost({
      autoAdvance: true,
      script: [step(text('partial'), hang()), step(text('after the retry'))],
    });
    const agent = await host.newSession();
    const { events, result } = await collectTurn(agent.runTurn({ text: 'x' }));
    expect(events.find((event) => event.type === 'retry')).toMatchObject({ reason: 'timeout' });
    expect(result.outcome).toBe('completed');
    expect(result.finalText).toBe('after the retry');
    expect(result.apiCalls).toBe(2);
  });

  it('parts that keep coming, each within the timeout, never trip it, however long the answer takes', async () => {
    host = await createTestHost({
      autoAdvance: true,
      script: [step(text('a'), delay(100_000), text('b'), delay(100_000), text('c'))],
    });
    const agent = await host.newSession();
    const { events, result } = await collectTurn(agent.runTurn({ text: 'x' }));
    expect(events.some((event) => event.type === 'retry')).toBe(false);
    expect(result.finalText).toBe('abc');
    expect(result.apiCalls).toBe(1);
  });

  it('a long answer sets one idle timer, not one per part', async () => {
    host = await createTestHost({ autoAdvance: true, script: [step(text('x'.repeat(500), 1))] });
    const agent = await host.newSession();
    const { result } = await collectTurn(agent.runTurn({ text: 'x' }));
    expect(result.finalText).toBe('x'.repeat(500));
    expect(host.clock.timers.filter((ms) => ms === IDLE_MS)).toHaveLength(1);
  });
});
