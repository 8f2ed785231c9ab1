import { describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../src/events.js';
import { collectTurn, createTestHost, fail, step, type TestHost, text } from '../../src/testing/index.js';
import { useCleanups } from '../support/cleanups.js';
import { until } from './helpers.js';

const { cleanups } = useCleanups();

async function testHost(options: Parameters<typeof createTestHost>[0]): Promise<TestHost> {
  const host = await createTestHost(options);
  cleanups.push(() => host.dispose());
  return host;
}

describe('auxiliary calls (spec/core.md §10.7)', () => {
  it('retry a retryable failure once, at once, without waiting on the clock', async () => {
    const host = await testHost({
      script: [step(text('Rome is lovely in spring.')), step(fail(503)), step(text('"Planning A Trip To Rome."'))],
    });
    const agent = await host.newSession();
    const titles: AgentEvent[] = [];
    agent.subscribe((event) => event.type === 'title' && titles.push(event));
    await collectTurn(agent.runTurn({ text: 'Help me plan a trip to Rome' }));
    await until(() => titles.length > 0);
    expect(titles[0]).toMatchObject({ title: 'Planning A Trip To Rome', source: 'llm' });
    expect(host.clock.sleeps).toEqual([]);
  });

  it('stream as turns do: an error after some text fails the call, and the retry answers whole (ADR 0080)', async () => {
    const host = await testHost({
      script: [
        step(text('Rome is lovely in spring.')),
        step(text('Half a ti'), fail(503)),
        step(text('Whole Title For Rome', 4)),
      ],
    });
    const agent = await host.newSession();
    const titles: AgentEvent[] = [];
    agent.subscribe((event) => event.type === 'title' && titles.push(event));
    await collectTurn(agent.runTurn({ text: 'Help me plan a trip to Rome' }));
    await until(() => titles.length > 0);
    // Not the half answer of the failed call, nor "Half a ti" joined to the retry's text.
    expect(titles[0]).toMatchObject({ title: 'Whole Title For Rome', source: 'llm' });
    expect(host.model.calls).toHaveLength(3);
    // The title call's usage is stored with its task, as a generate call's was.
    const usage = await host.store.usageByModel(agent.sessionId);
    expect(usage.map((row) => row.task).sort()).toEqual(['main', 'title']);
  });

  it('give up after the one retry, and never retry a failure that is not retryable', async () => {
    for (const failures of [[fail(503), fail(503)], [fail(400)]]) {
      const host = await testHost({
        script: [step(text('Rome is lovely in spring.')), ...failures.map((failure) => step(failure))],
      });
      const agent = await host.newSession();
      const titles: AgentEvent[] = [];
      agent.subscribe((event) => event.type === 'title' && titles.push(event));
      await collectTurn(agent.runTurn({ text: 'Help me plan a trip to Rome' }));
      // The title call failed for good: the title is derived from the prompt instead.
      await until(() => titles.length > 0);
      expect(titles[0]).toMatchObject({ source: 'derived' });
      // The turn's call, then one title call per scripted failure and no more.
      expect(host.model.calls).toHaveLength(1 + failures.length);
    }
  });
});
