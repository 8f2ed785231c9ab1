import { afterEach, describe, expect, it } from 'vitest';
import { collectTurn, createTestHost, hang, step, type TestHost, text } from '../../src/testing/index.js';
import { until } from './helpers.js';

let host: TestHost | null = null;
afterEach(async () => {
  await host?.dispose();
  host = null;
});

describe('slash commands', () => {
  it('46. /help lists the fifteen commands; /queue is ui; /stop cancels; /model calls switchModel; /undo while busy is session_busy; unknown is an error', async () => {
    host = await createTestHost({
      env: { OPENROUTER_API_KEY: 'sk-or-test-123456' },
      config: { session: { auto_title: false } },
      script: [step(text('working'), hang())],
    });
    const agent = await host.newSession();
    const help = await host.commands.execute(agent, '/help');
    expect(help.kind).toBe('text');
    expect(host.commands.list()).toHaveLength(16);
    for (const name of [
      'model',
      'new',
      'resume',
      'retry',
      'undo',
      'compress',
      'title',
      'usage',
      'steer',
      'stop',
      'tools',
      'help',
      'branch',
      'queue',
      'status',
    ]) {
      expect(help.text).toContain(`/${name}`);
    }
    expect(await host.commands.execute(agent, '/queue later please')).toEqual({
      kind: 'ui',
      ui: { name: 'queue', args: 'later please' },
    });
    expect(await host.commands.execute(agent, '/nope')).toMatchObject({
      kind: 'error',
      text: 'Unknown command /nope. Type /help for the list.',
    });

    const run = agent.runTurn({ text: 'long task' });
    await until(() => agent.status().phase === 'model');
    const undo = await host.commands.execute(agent, '/undo');
    expect(undo).toMatchObject({ kind: 'error', data: { code: 'session_busy' } });
    const model = await host.commands.execute(agent, '/MODEL openrouter:x');
    expect(model.kind).toBe('text');
    expect(agent.model?.spec).toBe('openrouter:x');
    const stop = await host.commands.execute(agent, '/stop');
    expect(stop.kind).toBe('text');
    const { result } = await collectTurn(run);
    expect(result.outcome).toBe('cancelled');
    expect(result.interruptedBy).toMatchObject({ issuer: 'user', reason: 'stop', hard: true });
  });

  it('/new ends the session and opens another with the same source, cwd and model', async () => {
    host = await createTestHost({ config: { session: { auto_title: false } }, script: [step(text('hi'))] });
    const agent = await host.newSession({ source: 'tui', cwd: '/tmp' });
    await collectTurn(agent.runTurn({ text: 'x' }));
    const result = await host.commands.execute(agent, '/new Fresh start');
    expect(result.kind).toBe('session');
    expect(result.agent?.cwd).toBe('/tmp');
    expect(result.agent?.title()).toBe('Fresh start');
    expect((await host.store.getSession(agent.sessionId))?.endReason).toBe('new_session');
  });
});
