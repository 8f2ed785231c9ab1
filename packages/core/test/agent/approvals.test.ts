import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../src/events.js';
import { collectTurn, createTestHost, step, type TestHost, text, toolCall } from '../../src/testing/index.js';
import { useCleanups } from '../support/cleanups.js';
import { until } from './helpers.js';

const { cleanups, temp } = useCleanups();

async function testHost(options: Parameters<typeof createTestHost>[0]): Promise<TestHost> {
  const host = await createTestHost({
    ...options,
    config: { session: { auto_title: false }, ...(options?.config ?? {}) },
  });
  cleanups.push(() => host.dispose());
  return host;
}

function withBuild(): string {
  const cwd = temp('hermes-ws-');
  mkdirSync(join(cwd, 'build'));
  writeFileSync(join(cwd, 'build', 'out.o'), 'x');
  return cwd;
}

const resolved = (events: AgentEvent[]) =>
  events.flatMap((event) => (event.type === 'approval.resolved' ? [event] : []));

describe('approvals', () => {
  it('23. rm -rf build in manual mode asks once with recursive_delete; deny keeps the folder, the call is denied and the turn goes on', async () => {
    const cwd = withBuild();
    const host = await testHost({
      script: [step(toolCall('terminal', { command: 'rm -rf build' }, 't1')), step(text('I will not delete it.'))],
    });
    host.approvals.answer('deny');
    const agent = await host.newSession({ cwd });
    const { events, result } = await collectTurn(agent.runTurn({ text: 'clean up' }));
    expect(host.approvals.requests).toHaveLength(1);
    expect((host.approvals.requests[0] as { patternKeys: string[] }).patternKeys).toContain('recursive_delete');
    expect(existsSync(join(cwd, 'build'))).toBe(true);
    expect(events.find((event) => event.type === 'tool.end')).toMatchObject({ status: 'denied' });
    expect(resolved(events)[0]).toMatchObject({ choice: 'deny', source: 'user' });
    expect(result).toMatchObject({ outcome: 'completed', finalText: 'I will not delete it.' });
  });

  it('a deny decided by policy (no person asked) tells the model so, never "denied by the user"', async () => {
    const cwd = withBuild();
    const host = await testHost({
      script: [step(toolCall('terminal', { command: 'rm -rf build' }, 't1')), step(text('Understood.'))],
    });
    const agent = await host.newSession({ cwd });
    const { events } = await collectTurn(
      agent.runTurn(
        { text: 'clean up' },
        { callbacks: { approve: async () => ({ choice: 'deny', policy: 'this request has no approval channel' }) } },
      ),
    );
    expect(existsSync(join(cwd, 'build'))).toBe(true);
    expect(resolved(events)[0]).toMatchObject({ choice: 'deny', source: 'policy' });
    const toolEnd = events.find((event) => event.type === 'tool.end');
    expect(toolEnd).toMatchObject({ status: 'denied' });
    const seen = JSON.stringify(host.model.calls[1]?.messages);
    expect(seen).toContain('refused by policy: this request has no approval channel');
    expect(seen).not.toContain('by the user');
  });

  it('24. a session grant lets a second rm -r run without asking; a new session asks again', async () => {
    const cwd = withBuild();
    mkdirSync(join(cwd, 'dist'));
    const host = await testHost({
      script: [
        step(toolCall('terminal', { command: 'rm -rf build' })),
        step(toolCall('terminal', { command: 'rm -r dist' })),
        step(text('both gone')),
        step(toolCall('terminal', { command: 'rm -r nothing-here' })),
        step(text('asked')),
      ],
    });
    host.approvals.answer('session');
    const agent = await host.newSession({ cwd });
    const { events } = await collectTurn(agent.runTurn({ text: 'clean' }));
    expect(host.approvals.requests).toHaveLength(1);
    expect(resolved(events).map((event) => event.source)).toEqual(['user', 'session_grant']);
    expect(existsSync(join(cwd, 'dist'))).toBe(false);
    const fresh = await host.newSession({ cwd });
    await collectTurn(fresh.runTurn({ text: 'again' }));
    expect(host.approvals.requests).toHaveLength(2);
  });

  it('25. always appends the exact command to command_allowlist in config.yaml keeping its comments, and a new host does not ask for it (ADR 0034)', async () => {
    const homeDir = temp('hermes-home-');
    writeFileSync(join(homeDir, 'config.yaml'), '# my settings\nagent:\n  max_iterations: 40 # keep it short\n');
    const cwd = withBuild();
    const host = await testHost({
      homeDir,
      script: [step(toolCall('terminal', { command: 'rm -rf build' })), step(text('ok'))],
    });
    host.approvals.answer('always');
    const agent = await host.newSession({ cwd });
    await collectTurn(agent.runTurn({ text: 'x' }));
    const yaml = readFileSync(join(homeDir, 'config.yaml'), 'utf8');
    expect(yaml).toContain('# my settings');
    expect(yaml).toContain('# keep it short');
    expect(yaml).toMatch(/command_allowlist:\s*\n\s*- command: rm -rf build/);
    await host.dispose();
    cleanups.pop();
    mkdirSync(join(cwd, 'build'));
    const next = await testHost({
      homeDir,
      script: [step(toolCall('terminal', { command: 'rm -rf build' })), step(text('ok'))],
    });
    const again = await next.newSession({ cwd });
    const { events } = await collectTurn(again.runTurn({ text: 'y' }));
    expect(next.approvals.requests).toHaveLength(0);
    expect(resolved(events)[0]).toMatchObject({ source: 'allowlist' });
    expect(existsSync(join(cwd, 'build'))).toBe(false);
  });

  it('26. an approval unanswered for 300 s on the fake clock is denied', async () => {
    const cwd = withBuild();
    const host = await testHost({
      script: [step(toolCall('terminal', { command: 'rm -rf build' })), step(text('timed out'))],
    });
    host.approvals.answer('never');
    const agent = await host.newSession({ cwd });
    const run = agent.runTurn({ text: 'x' });
    await until(() => agent.status().pendingApproval !== null);
    expect(agent.status().phase).toBe('awaiting_approval');
    await host.clock.advance(300_000);
    const { events } = await collectTurn(run);
    expect(resolved(events)[0]).toMatchObject({ choice: 'deny', source: 'timeout' });
    expect(existsSync(join(cwd, 'build'))).toBe(true);
  });

  it('26. with no approve callback a dangerous command is denied; in YOLO mode it runs; rm -rf / never runs', async () => {
    const cwd = withBuild();
    const host = await testHost({
      callbacks: { approve: undefined },
      script: [
        step(toolCall('terminal', { command: 'rm -rf build' })),
        step(text('denied')),
        step(toolCall('terminal', { command: 'rm -rf build' })),
        step(toolCall('terminal', { command: 'rm -rf /' })),
        step(text('done')),
      ],
    });
    const agent = await host.newSession({ cwd });
    const first = await collectTurn(agent.runTurn({ text: 'x' }));
    expect(resolved(first.events)[0]).toMatchObject({ source: 'no_callback' });
    expect(first.events.some((event) => event.type === 'notice')).toBe(true);
    expect(existsSync(join(cwd, 'build'))).toBe(true);
    agent.setYolo(true);
    const second = await collectTurn(agent.runTurn({ text: 'y' }));
    // The hard blocklist refuses before any approval step, so only the YOLO decision is an event.
    expect(resolved(second.events).map((event) => event.source)).toEqual(['yolo']);
    expect(existsSync(join(cwd, 'build'))).toBe(false);
    const ends = second.events.flatMap((event) => (event.type === 'tool.end' ? [event] : []));
    expect(ends[1]).toMatchObject({ status: 'denied' });
  });

  it('27. clarify is offered only with a callback; the answer reaches the model; 300 s without one gives the timed-out result', async () => {
    const without = await testHost({ callbacks: { clarify: undefined }, script: [step(text('hi'))] });
    const plain = await without.newSession();
    await collectTurn(plain.runTurn({ text: 'x' }));
    expect(without.model.calls[0]!.tools.map((tool) => tool.name)).not.toContain('clarify');

    const host = await testHost({
      script: [
        step(toolCall('clarify', { question: 'Tabs or spaces?', choices: ['tabs', 'spaces'] })),
        step(text('Tabs it is.')),
        step(toolCall('clarify', { question: 'Again?' })),
        step(text('assumed')),
      ],
    });
    host.clarifications.answer('tabs', 'never');
    const agent = await host.newSession();
    await collectTurn(agent.runTurn({ text: 'format' }));
    expect(host.model.calls[0]!.tools.map((tool) => tool.name)).toContain('clarify');
    expect(JSON.stringify(host.model.calls[1]!.messages)).toContain('User answered: tabs');
    const run = agent.runTurn({ text: 'again' });
    await until(() => agent.status().pendingClarify !== null);
    await host.clock.advance(300_000);
    const { events } = await collectTurn(run);
    expect(events.find((event) => event.type === 'clarify.resolved')).toMatchObject({ source: 'timeout' });
    expect(JSON.stringify(host.model.calls[3]!.messages)).toContain('No answer within 300 s');
  });
});

describe('background processes and the environment', () => {
  it('32. agent.close() kills background processes, and env through terminal does not show OPENAI_API_KEY', async () => {
    const cwd = temp('hermes-ws-');
    const host = await testHost({
      env: { PATH: process.env.PATH, OPENAI_API_KEY: 'sk-secret-value-123', HOME: cwd },
      config: { approvals: { mode: 'off' } },
      script: [
        step(toolCall('terminal', { command: 'sleep 300', background: true })),
        step(toolCall('terminal', { command: 'env' })),
        step(text('ok')),
      ],
    });
    const agent = await host.newSession({ cwd });
    const { events } = await collectTurn(agent.runTurn({ text: 'x' }));
    const envOutput = events.flatMap((event) => (event.type === 'tool.end' ? [event.result] : []))[1]!;
    expect(envOutput).toContain('PATH=');
    expect(envOutput).not.toContain('OPENAI_API_KEY');
    const [processInfo] = host.processes.list(agent.sessionId);
    expect(processInfo?.status).toBe('running');
    const pid = processInfo!.pid!;
    await agent.close();
    expect(host.processes.list(agent.sessionId)[0]?.status ?? 'killed').not.toBe('running');
    expect(() => process.kill(pid, 0)).toThrow();
  });
});

describe('per-turn callbacks', () => {
  it('approve: null for one turn removes the host callback, so a dangerous command is denied with no_callback', async () => {
    const cwd = withBuild();
    const host = await testHost({
      script: [step(toolCall('terminal', { command: 'rm -rf build' })), step(text('not allowed'))],
    });
    host.approvals.answer('once');
    const agent = await host.newSession({ cwd });
    const { events } = await collectTurn(agent.runTurn({ text: 'x' }, { callbacks: { approve: null } }));
    expect(host.approvals.requests).toHaveLength(0);
    expect(resolved(events)[0]).toMatchObject({ source: 'no_callback' });
    expect(existsSync(join(cwd, 'build'))).toBe(true);
  });
});
