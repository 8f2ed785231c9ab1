import { mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { RequestPermissionResponse } from '@agentclientprotocol/sdk/unstable';
import { step, text, toolCall } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { initialize } from './agent-harness.js';
import {
  agentOn,
  eventually,
  fixtureFor,
  openRun,
  prompt,
  type Run,
  requestText,
  teardown,
  updatesOf,
} from './conformance-helpers.js';

afterEach(async (context) => {
  await teardown(context.task.result?.state === 'fail');
});

/** The text of the agent_message_chunk sent after the wire line `afterSeq`. */
function chunkTextsAfter(run: Run, afterSeq: number): string[] {
  return updatesOf(run.agent, run.sessionId, 'agent_message_chunk')
    .filter((line) => line.seq > afterSeq)
    .map((line) => (line.update.content.type === 'text' ? line.update.content.text : ''));
}

function lastSeq(run: Run): number {
  return run.agent.lines.at(-1)?.seq ?? 0;
}

/** Runs a slash command and returns its one answer chunk; the model server must see no call for it. */
async function command(run: Run, line: string): Promise<string> {
  const calls = run.fixture.server.calls.length;
  const before = lastSeq(run);
  expect((await prompt(run, line)).stopReason).toBe('end_turn');
  expect(run.fixture.server.calls).toHaveLength(calls);
  const chunks = chunkTextsAfter(run, before);
  expect(chunks).toHaveLength(1);
  return chunks[0] ?? '';
}

describe('ACP slash commands typed in the IDE (issue 16.3)', () => {
  it('advertises /compact, /context, /reset, /steer and /version with descriptions and hints', async () => {
    const run = await openRun();
    const line = await run.agent.waitFor(
      (candidate) =>
        candidate.message.method === 'session/update' &&
        (candidate.message.params as { update: { sessionUpdate: string } }).update.sessionUpdate ===
          'available_commands_update',
    );
    const list = (
      line.message.params as {
        update: { availableCommands: { name: string; description: string; input?: { hint: string } }[] };
      }
    ).update.availableCommands;
    const byName = new Map(list.map((entry) => [entry.name, entry]));
    for (const name of ['compact', 'context', 'reset', 'steer', 'version']) {
      expect(byName.get(name)?.description, name).toBeTruthy();
    }
    expect(byName.get('steer')?.input?.hint).toBeTruthy();
    expect(byName.get('compact')?.input?.hint).toBe('focus');
    const help = await command(run, '/help');
    for (const name of ['compact', 'context', 'reset', 'steer', 'version']) expect(help).toContain(`/${name}`);
  });

  it('/version answers the agent version without a model call', async () => {
    const fixture = await fixtureFor();
    const agent = await agentOn(fixture);
    const init = await initialize(agent);
    const session = await agent.agent.request('session/new', { cwd: fixture.project, mcpServers: [] });
    const run: Run = { fixture, agent, sessionId: session.sessionId };
    const version = init.agentInfo?.version ?? '';
    expect(version).not.toBe('');
    expect(await command(run, '/version')).toBe(`Hermes Agent ${version}`);
    expect(await command(run, '/VERSION')).toBe(`Hermes Agent ${version}`);
    expect(fixture.server.requests).toHaveLength(0);
  });

  it('"Always allow `rm -rf build`" stores that command only; /permissions lists it and revokes it (issue 32)', async () => {
    const run = await openRun({ script: [step(toolCall('terminal', { command: 'rm -rf build' })), step(text('ok'))] });
    await mkdir(join(run.fixture.project, 'build'));
    run.agent.answerPermission = async () => ({ outcome: { outcome: 'selected', optionId: 'allow_always' } });
    expect((await prompt(run, 'clean')).stopReason).toBe('end_turn');
    await expect(stat(join(run.fixture.project, 'build'))).rejects.toThrow();
    expect(await command(run, '/permissions')).toBe('1. always allow `rm -rf build`');
    expect(await command(run, '/permissions revoke 1')).toBe('Revoked: always allow `rm -rf build`.');
    expect(await command(run, '/permissions')).toBe('No command is allowed permanently.');
  });

  it('/context reports message counts, the model and context use without a model call', async () => {
    const run = await openRun({ script: [step(text('first answer'))] });
    expect(await command(run, '/context')).toContain('Conversation is empty');
    await prompt(run, 'first question');
    const report = await command(run, '/context');
    expect(report).toContain('Conversation: 2 messages');
    expect(report).toContain('user: 1, assistant: 1, tool: 0');
    expect(report).toContain('Model: scripted:model-a');
    expect(report).toMatch(/Context usage: ~[\d,]+ \/ 100,000 tokens \(\d+\.\d%\)/);
    expect(report).toMatch(/Compaction: ~[\d,]+ tokens until the threshold/);
  });

  it('/compact compacts the history (one summary call, no chat turn) and later turns see the summary', async () => {
    const run = await openRun({
      script: [
        step(text('answer one')),
        step(text('answer two')),
        step(text('answer three')),
        step(text('SUMMARY-OF-EARLIER-TURNS')),
        step(text('after compaction')),
      ],
      fixture: { extraConfig: 'compression:\n  protect_first_n: 1\n  protect_last_n: 1' },
    });
    // Long later turns keep the protected tail from growing over the middle (spec/core.md §18.3).
    const long = 'x'.repeat(50_000);
    for (const question of ['question one', `question two ${long}`, `question three ${long}`]) {
      await prompt(run, question);
    }
    const before = lastSeq(run);
    expect((await prompt(run, '/compact')).stopReason).toBe('end_turn');
    const chunks = chunkTextsAfter(run, before);
    expect(chunks).toHaveLength(1);
    expect(chunks[0]).toMatch(/^Compressed \d+ messages: \d+ → \d+ tokens\.$/);
    // The only model call was the auxiliary summary: the command text never reached the model.
    expect(run.fixture.server.calls).toHaveLength(4);
    expect(requestText(run.fixture.server.calls[3] ?? { messages: [] })).not.toContain('/compact');
    expect(updatesOf(run.agent, run.sessionId, 'usage_update').some((line) => line.seq > before)).toBe(true);
    await prompt(run, 'question four');
    const next = requestText(run.fixture.server.calls[4] ?? { messages: [] });
    expect(next).toContain('SUMMARY-OF-EARLIER-TURNS');
    expect(next).not.toContain('answer one');
    expect(next).toContain('question one');
    expect(next).toContain('question four');
  });

  it('/reset clears the conversation in the same session; the next turn starts from an empty history', async () => {
    const run = await openRun({
      script: [step(text('answer one')), step(text('answer two')), step(text('fresh answer'))],
    });
    await prompt(run, 'remember OLD-FACT');
    await prompt(run, 'second question');
    expect(await command(run, '/reset')).toBe('Conversation history cleared (4 messages).');
    expect(await command(run, '/context')).toContain('Conversation is empty');
    expect(await command(run, '/reset')).toBe('The conversation is already empty.');
    expect((await prompt(run, 'new start')).stopReason).toBe('end_turn');
    const request = requestText(run.fixture.server.calls[2] ?? { messages: [] });
    expect(request).toContain('new start');
    expect(request).not.toContain('OLD-FACT');
    expect(request).not.toContain('answer two');
  });

  it('/steer reaches the running turn at once, and the model sees the guidance in its next request', async () => {
    const run = await openRun({
      script: [step(toolCall('write_file', { path: 'notes.txt', content: 'draft\n' })), step(text('steered answer'))],
    });
    // The edit approval holds the turn open until the steer has been answered.
    let release!: (answer: RequestPermissionResponse) => void;
    const held = new Promise<RequestPermissionResponse>((resolve) => {
      release = resolve;
    });
    run.agent.answerPermission = () => held;
    const turn = prompt(run, 'write the notes');
    await eventually(() => run.agent.permissionRequests.length === 1);
    const steerText = await command(run, '/steer prefer STEER-GUIDANCE in the answer');
    expect(steerText).toBe('Steer queued.');
    expect(run.agent.responseTo('session/prompt', 0)).toBeUndefined();
    release({ outcome: { outcome: 'selected', optionId: 'allow_once' } });
    expect((await turn).stopReason).toBe('end_turn');
    expect(run.fixture.server.calls).toHaveLength(2);
    expect(requestText(run.fixture.server.calls[1] ?? { messages: [] })).toContain('STEER-GUIDANCE');
    expect(requestText(run.fixture.server.calls[0] ?? { messages: [] })).not.toContain('/steer');
    // Outside a turn the core refuses it, and nothing is sent to the model.
    expect(await command(run, '/steer too late')).toBe('Steer rejected: no turn is running.');
  });
});
