import { afterEach, describe, expect, it, vi } from 'vitest';
import { createProcessRegistry, MAX_RUNNING_PROCESSES_PER_SESSION } from '../../src/tools/process-registry.js';
import { createProcessTool } from '../../src/tools/process-tool.js';
import { createTerminalTool } from '../../src/tools/terminal.js';
import type { ProcessRegistry } from '../../src/tools/types.js';
import { createTestToolContext, isProcessAlive, type TestToolContext } from './context.js';

const terminal = createTerminalTool();
const processTool = createProcessTool();
const env = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
const registries: ProcessRegistry[] = [];
const contexts: TestToolContext[] = [];

function registry(): ProcessRegistry {
  const created = createProcessRegistry();
  registries.push(created);
  return created;
}

afterEach(async () => {
  for (const created of registries.splice(0)) await created.killAll();
  for (const created of contexts.splice(0)) await created.cleanup();
});

const never = new AbortController().signal;

describe('process registry', () => {
  it('allows 16 running processes per session; the 17th is refused while other sessions still start', async () => {
    const processes = registry();
    expect(MAX_RUNNING_PROCESSES_PER_SESSION).toBe(16);
    const started = [];
    for (let index = 0; index < 16; index += 1) {
      started.push(await processes.start({ sessionId: 'a', command: 'sleep 30', cwd: process.cwd(), env }));
    }
    expect(started.map((info) => info.id)).toEqual(Array.from({ length: 16 }, (_, index) => `proc_${index + 1}`));
    expect(processes.runningCount('a')).toBe(16);
    await expect(
      processes.start({ sessionId: 'a', command: 'sleep 30', cwd: process.cwd(), env }),
    ).rejects.toMatchObject({
      code: 'process_limit',
    });
    const other = await processes.start({ sessionId: 'b', command: 'sleep 30', cwd: process.cwd(), env });
    expect(other.id).toBe('proc_17');

    await processes.kill('a', 'proc_1');
    expect(processes.runningCount('a')).toBe(15);
    expect((await processes.start({ sessionId: 'a', command: 'sleep 30', cwd: process.cwd(), env })).id).toBe(
      'proc_18',
    );

    await processes.killSession('a');
    expect(processes.runningCount('a')).toBe(0);
    expect(processes.list('a').every((info) => info.status === 'killed')).toBe(true);
    expect(started.every((info) => !isProcessAlive(info.pid as number))).toBe(true);
    expect(processes.runningCount('b')).toBe(1);
    await processes.killAll();
    expect(processes.runningCount('b')).toBe(0);
  });

  it('the terminal tool reports the limit as an error result', async () => {
    const processes = createProcessRegistry({ maxRunningPerSession: 1 });
    registries.push(processes);
    const test = await createTestToolContext({ processes });
    contexts.push(test);
    expect((await test.run(terminal, { command: 'sleep 30', background: true })).isError).toBeUndefined();
    const refused = await test.run(terminal, { command: 'sleep 30', background: true });
    expect(refused.isError).toBe(true);
    expect(refused.content).toContain('already has 1 running background processes');
  });

  it("keeps each session's processes invisible to the others", async () => {
    const processes = registry();
    const info = await processes.start({ sessionId: 'a', command: 'sleep 30', cwd: process.cwd(), env });
    expect(processes.get('b', info.id)).toBeUndefined();
    expect(processes.list('b')).toEqual([]);
    expect(processes.poll('b', info.id)).toBeUndefined();
    expect(await processes.kill('b', info.id)).toBe(false);
    expect(processes.write('b', info.id, 'x')).toBe(false);
    expect(processes.get('a', info.id)?.status).toBe('running');
    const test = await createTestToolContext({ processes, sessionId: 'b' });
    contexts.push(test);
    const result = await test.run(processTool, { action: 'kill', process_id: info.id });
    expect(result).toEqual({
      content: `No background process ${info.id} in this session. Use action "list" to see them.`,
      isError: true,
    });
  });

  it('poll returns only what arrived since the previous poll; write feeds stdin', async () => {
    const processes = registry();
    const info = await processes.start({ sessionId: 's', command: 'echo ready; cat', cwd: process.cwd(), env });
    await vi.waitFor(() => expect(processes.poll('s', info.id)?.output).toBe('ready\n'));
    expect(processes.poll('s', info.id)?.output).toBe('');
    expect(processes.write('s', info.id, 'hello\n')).toBe(true);
    await vi.waitFor(() => expect(processes.poll('s', info.id)?.output).toBe('hello\n'));
  });

  it('wait returns at exit with the status and the tail, or reports a timeout', async () => {
    const processes = registry();
    const quick = await processes.start({ sessionId: 's', command: 'echo done; exit 4', cwd: process.cwd(), env });
    const waited = await processes.wait('s', quick.id, 10_000, never);
    expect(waited).toMatchObject({ info: { status: 'exited', exitCode: 4 }, tail: 'done\n', timedOut: false });
    expect(waited?.info.endedAt).not.toBeNull();
    const slow = await processes.start({ sessionId: 's', command: 'sleep 30', cwd: process.cwd(), env });
    expect(await processes.wait('s', slow.id, 50, never)).toMatchObject({
      info: { status: 'running' },
      timedOut: true,
    });
  });

  it('wait is interruptible', async () => {
    const processes = registry();
    const test = await createTestToolContext({ processes });
    contexts.push(test);
    const info = await processes.start({ sessionId: test.ctx.sessionId, command: 'sleep 30', cwd: test.cwd, env });
    const pending = test.run(processTool, { action: 'wait', process_id: info.id, timeout: 600 });
    test.controller.abort();
    expect(await pending).toEqual({ content: `Stopped waiting for ${info.id}: cancelled.`, status: 'cancelled' });
    expect(processes.get(test.ctx.sessionId, info.id)?.status).toBe('running');
  });

  it('kill terminates the whole process group', async () => {
    const processes = registry();
    const info = await processes.start({
      sessionId: 's',
      command: 'sleep 30 & echo "child $!"; wait',
      cwd: process.cwd(),
      env,
    });
    let child = 0;
    await vi.waitFor(() => {
      child = Number(/child (\d+)/.exec(processes.log('s', info.id, 1, 10)?.text ?? '')?.[1] ?? 0);
      expect(child).toBeGreaterThan(0);
    });
    expect(isProcessAlive(child)).toBe(true);
    expect(await processes.kill('s', info.id)).toBe(true);
    expect(processes.get('s', info.id)?.status).toBe('killed');
    expect(isProcessAlive(info.pid as number)).toBe(false);
    await vi.waitFor(() => expect(isProcessAlive(child)).toBe(false));
  });

  it('log windows count negative offsets from the end', async () => {
    const processes = registry();
    const info = await processes.start({ sessionId: 's', command: 'seq 1 10', cwd: process.cwd(), env });
    await processes.wait('s', info.id, 10_000, never);
    expect(processes.log('s', info.id, -3, 200)).toMatchObject({ text: '8\n9\n10', totalLines: 10 });
    expect(processes.log('s', info.id, 2, 2)).toMatchObject({ text: '2\n3', totalLines: 10 });
  });
});

describe('process tool', () => {
  it('lists, waits and reports exited processes; kind and read-only follow the action', async () => {
    const test = await createTestToolContext();
    contexts.push(test);
    expect((await test.run(processTool, { action: 'list' })).content).toBe('No background processes in this session.');
    const started = await test.run(terminal, { command: 'echo finished', background: true });
    const { processId } = started.structured as { processId: string };
    const waited = await test.run(processTool, { action: 'wait', process_id: processId });
    expect(waited.content).toMatch(
      new RegExp(`^${processId} exited with code 0 \\(pid \\d+, runtime \\d+s\\)\\.\\nfinished\\n$`),
    );
    const kill = await test.run(processTool, { action: 'kill', process_id: processId });
    expect(kill.content).toBe(`${processId} had already exited with code 0.`);
    const write = await test.run(processTool, { action: 'write', process_id: processId, data: 'x' });
    expect(write.isError).toBe(true);
    expect((await test.run(processTool, { action: 'poll' })).content).toBe('process_id is required for action "poll".');

    const kind = processTool.kind as (args: { action: string }) => string;
    const readOnly = processTool.readOnly as (args: { action: string }) => boolean;
    for (const action of ['list', 'poll', 'log']) {
      expect(kind({ action })).toBe('read');
      expect(readOnly({ action })).toBe(true);
    }
    for (const action of ['wait', 'kill', 'write']) {
      expect(kind({ action })).toBe('execute');
      expect(readOnly({ action })).toBe(false);
    }
  });
});
