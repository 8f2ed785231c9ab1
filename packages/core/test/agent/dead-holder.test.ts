import { spawn } from 'node:child_process';
import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import { isDeadHolder } from '../../src/agent/host.js';
import { createTestHost } from '../../src/testing/index.js';
import { useCleanups } from '../support/cleanups.js';

const { cleanups } = useCleanups();

/** The pid of a child process that has exited (so no process of this machine has it, for now). */
async function pidOfEndedProcess(): Promise<number> {
  const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
  const pid = child.pid as number;
  await new Promise((resolve) => child.once('exit', resolve));
  return pid;
}

describe('which lease holders start-up recovery takes for dead (issue 33 item 4)', () => {
  it('a holder of this machine whose process ended is dead; a live process, another machine or a chosen id is not', async () => {
    const ended = await pidOfEndedProcess();
    expect(isDeadHolder(`${hostname()}:${ended}:abcd1234`)).toBe(true);
    // The parent of this process (vitest) is alive.
    expect(isDeadHolder(`${hostname()}:${process.ppid}:abcd1234`)).toBe(false);
    expect(isDeadHolder(`another-machine-${hostname()}:${ended}:abcd1234`)).toBe(false);
    expect(isDeadHolder('host-a')).toBe(false);
  });

  it("this process's pid with another random part is an earlier life (a restart that got the same pid), unless a host open in this process has that id", async () => {
    expect(isDeadHolder(`${hostname()}:${process.pid}:earlier1`)).toBe(true);
    const host = await createTestHost({ config: { session: { auto_title: false } }, script: [] });
    cleanups.push(() => host.dispose());
    expect(host.holderId.startsWith(`${hostname()}:${process.pid}:`)).toBe(true);
    // Two hosts in one process (two `createAgent` calls on one HERMES_HOME) never reclaim each other's leases.
    expect(isDeadHolder(host.holderId)).toBe(false);
  });

  it('with an instance id, every holder of that name not open in this process is an earlier life, wherever it ran', async () => {
    // A live pid (the parent of this process) under the instance's name is still an earlier life of that name.
    expect(isDeadHolder(`node-1:${process.ppid}:abcd1234`, 'node-1')).toBe(true);
    expect(isDeadHolder(`node-2:${process.ppid}:abcd1234`, 'node-1')).toBe(false);
    const host = await createTestHost({
      config: { session: { auto_title: false } },
      script: [],
      instanceId: 'node-1',
    });
    cleanups.push(() => host.dispose());
    expect(host.holderId.startsWith(`node-1:${process.pid}:`)).toBe(true);
    expect(isDeadHolder(host.holderId, 'node-1')).toBe(false);
  });
});
