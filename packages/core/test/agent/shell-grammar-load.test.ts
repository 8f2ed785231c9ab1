import { setTimeout as delay } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { isShellParserLoaded } from '../../src/approvals/shell-parser.js';
import { collectTurn, createTestHost, step, text, toolCall } from '../../src/testing/index.js';
import { useCleanups } from '../support/cleanups.js';

const { cleanups, temp } = useCleanups();

// The bash grammar is process-wide state: this file's module graph is its own (vitest isolates files), so nothing
// else here loads it first.
describe('the bash grammar loads with the first terminal call, not at start-up (ADR 0099)', () => {
  it('a host that only answers text never loads it; a terminal call loads it and its command is judged and runs', async () => {
    const host = await createTestHost({
      config: { session: { auto_title: false } },
      script: [step(text('hello')), step(toolCall('terminal', { command: 'echo grammar-loaded' })), step(text('done'))],
    });
    cleanups.push(() => host.dispose());
    const agent = await host.newSession({ cwd: temp('hermes-grammar-') });

    const chat = await collectTurn(agent.runTurn({ text: 'hi' }));
    expect(chat.result.outcome).toBe('completed');
    // Past the 500 ms after which the host used to start the load in the background.
    await delay(1_000);
    expect(isShellParserLoaded()).toBe(false);

    const command = await collectTurn(agent.runTurn({ text: 'run it' }));
    expect(command.result.outcome).toBe('completed');
    expect(isShellParserLoaded()).toBe(true);
    const end = command.events.find((event) => event.type === 'tool.end');
    expect(end?.type === 'tool.end' && end.status).toBe('completed');
    expect(end?.type === 'tool.end' && end.result).toContain('grammar-loaded');
    expect(command.events.some((event) => event.type === 'approval.request')).toBe(false);
  }, 60_000);
});
