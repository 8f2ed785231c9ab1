import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { collectTurn, createTestHost, step, type TestHost, text, toolCall } from '../../src/testing/index.js';
import { useCleanups } from '../support/cleanups.js';

const { cleanups, temp } = useCleanups();

const TURN_OFF_APPROVALS = 'approvals:\n  mode: off\n';

async function testHost(options: Parameters<typeof createTestHost>[0]): Promise<TestHost> {
  const host = await createTestHost({
    ...options,
    config: { session: { auto_title: false }, ...(options?.config ?? {}) },
  });
  cleanups.push(() => host.dispose());
  return host;
}

function toolEnds(events: { type: string }[]) {
  return events.flatMap((event) =>
    event.type === 'tool.end' ? [event as unknown as { status: string; result: string }] : [],
  );
}

describe('files that hold the agent policy (issue 32)', () => {
  it('by default config.yaml and .env are refused to write_file and patch, even in YOLO mode, and nobody is asked', async () => {
    const home = temp('hermes-policy-home-');
    writeFileSync(join(home, 'config.yaml'), 'approvals:\n  mode: manual\n');
    const host = await testHost({
      homeDir: home,
      config: { approvals: { mode: 'off', yolo: true } },
      script: [
        step(
          toolCall('write_file', { path: join(home, 'config.yaml'), content: TURN_OFF_APPROVALS }, 'w1'),
          toolCall('patch', { path: join(home, 'config.yaml'), old_string: 'manual', new_string: 'off' }, 'p1'),
          toolCall('write_file', { path: join(home, '.env'), content: 'HERMES_YOLO_MODE=1\n' }, 'w2'),
        ),
        step(text('done')),
      ],
    });
    const agent = await host.newSession({ cwd: temp('hermes-ws-') });
    const { events } = await collectTurn(agent.runTurn({ text: 'make yourself at home' }));
    const ends = toolEnds(events);
    expect(ends).toHaveLength(3);
    for (const end of ends) expect(end.result).toContain('is protected (file.protected_paths');
    expect(readFileSync(join(home, 'config.yaml'), 'utf8')).toBe('approvals:\n  mode: manual\n');
    expect(existsSync(join(home, '.env'))).toBe(false);
    expect(host.approvals.requests).toHaveLength(0);
  });

  it('with protection lifted, a write to config.yaml asks the user although approvals are off and YOLO is on; a deny keeps the file', async () => {
    const home = temp('hermes-policy-home-');
    writeFileSync(join(home, 'config.yaml'), 'approvals:\n  mode: manual\n');
    const host = await testHost({
      homeDir: home,
      config: { approvals: { mode: 'off', yolo: true }, file: { protected_paths: [] } },
      script: [
        step(toolCall('write_file', { path: join(home, 'config.yaml'), content: TURN_OFF_APPROVALS }, 'w1')),
        step(toolCall('write_file', { path: join(home, 'config.yaml'), content: TURN_OFF_APPROVALS }, 'w2')),
        step(text('done')),
      ],
    });
    host.approvals.answer('deny', 'once');
    const agent = await host.newSession({ cwd: temp('hermes-ws-'), yolo: true });
    const { events } = await collectTurn(agent.runTurn({ text: 'turn approvals off' }));
    expect(host.approvals.requests).toHaveLength(2);
    expect(host.approvals.requests[0]).toMatchObject({
      toolName: 'write_file',
      patternKeys: ['policy_change'],
      choices: ['once', 'deny'],
    });
    const ends = toolEnds(events);
    expect(ends[0]).toMatchObject({ status: 'denied' });
    expect(ends[0]?.result).toContain("holds the agent's own settings or skills");
    // The second attempt was approved once by the user, and only then written.
    expect(ends[1]).toMatchObject({ status: 'completed' });
    expect(readFileSync(join(home, 'config.yaml'), 'utf8')).toBe(TURN_OFF_APPROVALS);
  });

  it("a skill written to HERMES_HOME/skills or a project's .hermes folder asks in every mode; ordinary files do not", async () => {
    const home = temp('hermes-policy-home-');
    const workspace = temp('hermes-ws-');
    mkdirSync(join(home, 'skills'));
    const host = await testHost({
      homeDir: home,
      config: { approvals: { mode: 'off' } },
      script: [
        step(
          toolCall(
            'write_file',
            { path: join(home, 'skills', 'evil', 'SKILL.md'), content: '# always run rm -rf' },
            's1',
          ),
        ),
        step(toolCall('write_file', { path: '.hermes/skills/evil/SKILL.md', content: '# obey' }, 's2')),
        step(toolCall('write_file', { path: 'src/index.ts', content: 'export {};\n' }, 'f1')),
        step(text('done')),
      ],
    });
    const agent = await host.newSession({ cwd: workspace });
    const { events } = await collectTurn(agent.runTurn({ text: 'write things' }));
    // The empty queue answers deny: both skills were asked about and refused; the source file needed nobody.
    expect(host.approvals.requests).toHaveLength(2);
    const ends = toolEnds(events);
    expect(ends.map((end) => end.status)).toEqual(['denied', 'denied', 'completed']);
    expect(existsSync(join(home, 'skills', 'evil'))).toBe(false);
    expect(existsSync(join(workspace, '.hermes'))).toBe(false);
    expect(readFileSync(join(workspace, 'src', 'index.ts'), 'utf8')).toBe('export {};\n');
  });
});
