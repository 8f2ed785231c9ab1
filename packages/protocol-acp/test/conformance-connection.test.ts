import { delay, step, text } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { initialize } from './agent-harness.js';
import {
  agentOn,
  expectError,
  fixtureFor,
  openRun,
  prompt,
  teardown,
  updateLines,
  updatesOf,
} from './conformance-helpers.js';

let failed = false;
afterEach(async (context) => {
  failed = context.task.result?.state === 'fail';
  await teardown(failed);
});

describe('ACP conformance: connection (spec/acp.md §19)', () => {
  it('01. stdout carries only schema-valid frames, the first being the initialize response, while deliberate stray output goes to stderr', async () => {
    // 25 chunks 100 ms apart: the turn streams while the stray output is written.
    const slowStep = step(...Array.from({ length: 25 }, () => [text('chunk '), delay(100)]).flat());
    const fixture = await fixtureFor({ script: [slowStep] });
    const preload =
      'data:text/javascript,setTimeout(()=>console.log("STRAY-CONSOLE"),1000);setTimeout(()=>process.stdout.write("STRAY-WRITE\\n"),2000);';
    const agent = await agentOn(fixture, { nodeArguments: ['--import', preload], env: { HERMES_LOG_LEVEL: 'debug' } });
    await initialize(agent);
    const session = await agent.agent.request('session/new', { cwd: fixture.project, mcpServers: [] });
    const response = await agent.agent.request('session/prompt', {
      sessionId: session.sessionId,
      prompt: [{ type: 'text', text: 'go' }],
    });
    expect(response.stopReason).toBe('end_turn');
    const firstAgentLine = agent.lines.find((line) => line.from === 'agent');
    expect(firstAgentLine?.message.id).toBe(0);
    expect(firstAgentLine?.message.result).toBeDefined();
    expect(agent.stderr()).toContain('STRAY-CONSOLE');
    expect(agent.stderr()).toContain('STRAY-WRITE');
    expect(agent.schemaErrors).toEqual([]);
  }, 20000);

  it('02. initialize answers protocol version 1 with the agent info, the capability table and auth methods', async () => {
    const fixture = await fixtureFor();
    const agent = await agentOn(fixture);
    const response = await initialize(agent);
    expect(response.protocolVersion).toBe(1);
    expect(response.agentInfo?.name).toBe('hermes-agent');
    expect(response.agentInfo?.version).not.toBe('');
    expect(response.agentCapabilities).toEqual({
      loadSession: true,
      promptCapabilities: { image: true, audio: false, embeddedContext: true },
      mcpCapabilities: { http: true, sse: false },
      sessionCapabilities: { list: {}, resume: {}, close: {}, fork: {} },
    });
    expect(response.authMethods?.length).toBeGreaterThan(0);
  });

  it('03. any requested protocol version is answered with version 1, never an error', async () => {
    const fixture = await fixtureFor();
    for (const version of [99, 0]) {
      const agent = await agentOn(fixture);
      const response = await initialize(agent, {}, version);
      expect(response.protocolVersion).toBe(1);
    }
  });

  it('04. the terminal auth method is offered only when the client advertises auth.terminal', async () => {
    const fixture = await fixtureFor();
    const withTerminal = await agentOn(fixture);
    const first = await initialize(withTerminal, { auth: { terminal: true } } as never);
    expect(first.authMethods?.map((method) => method.id)).toEqual(['api-key-env', 'hermes-setup']);
    expect(first.authMethods?.[1]).toMatchObject({ type: 'terminal', args: ['--setup'] });
    const without = await agentOn(fixture);
    const second = await initialize(without);
    expect(second.authMethods?.map((method) => method.id)).toEqual(['api-key-env']);
  });

  it('05. a request before initialize is answered -32600 and a following initialize succeeds', async () => {
    const fixture = await fixtureFor();
    const agent = await agentOn(fixture);
    agent.writeRaw(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 'early',
        method: 'session/new',
        params: { cwd: fixture.project, mcpServers: [] },
      }),
    );
    const answer = await agent.waitFor((line) => line.from === 'agent' && line.message.id === 'early');
    expect((answer.message.error as { code: number }).code).toBe(-32600);
    const response = await initialize(agent);
    expect(response.protocolVersion).toBe(1);
  });

  it('06. malformed lines, batches, unknown methods and set_model for an unknown session get the JSON-RPC errors and the connection keeps working', async () => {
    const fixture = await fixtureFor();
    const agent = await agentOn(fixture);
    await initialize(agent);
    const nullIdErrors = () => agent.lines.filter((line) => line.from === 'agent' && line.message.id === null);
    const newSession = () => agent.agent.request('session/new', { cwd: fixture.project, mcpServers: [] });

    agent.writeRaw('not json');
    await agent.waitFor(() => nullIdErrors().length >= 1);
    expect(((nullIdErrors()[0]?.message.error ?? {}) as { code: number }).code).toBe(-32700);
    await newSession();

    agent.writeRaw(JSON.stringify([{ jsonrpc: '2.0', id: 'batch', method: 'session/list', params: {} }]));
    await agent.waitFor(() => nullIdErrors().length >= 2);
    expect(((nullIdErrors()[1]?.message.error ?? {}) as { code: number }).code).toBe(-32600);
    await newSession();

    await expectError(agent.agent.request('foo/bar', {}), -32601);
    await newSession();
    await expectError(agent.agent.request('_vendor/x', {}), -32601);
    await newSession();
    const before = agent.lines.length;
    await agent.agent.notify('_vendor/ping', {});
    await newSession();
    const afterNotification = agent.lines
      .slice(before)
      .filter((line) => line.from === 'agent' && 'error' in line.message);
    expect(afterNotification).toEqual([]);
    // session/set_model exists again for legacy clients (issue 16.3, docs/adr/0009).
    await expectError(agent.agent.request('session/set_model', { sessionId: 'x', modelId: 'y' }), -32002);
    await newSession();

    agent.writeRaw(JSON.stringify({ foo: 1 }));
    await agent.waitFor(() => nullIdErrors().length >= 3);
    expect(((nullIdErrors()[2]?.message.error ?? {}) as { code: number }).code).toBe(-32600);
    await newSession();
  });

  it('07. schema-invalid params are answered -32602', async () => {
    const run = await openRun();
    await expectError(run.agent.agent.request('session/new', { cwd: run.fixture.project } as never), -32602);
    await expectError(
      run.agent.agent.request('session/prompt', { sessionId: run.sessionId, prompt: 'text' } as never),
      -32602,
    );
  });

  it('08. session/new returns distinct ids, the three modes, the three config options, then commands and usage', async () => {
    const fixture = await fixtureFor();
    const agent = await agentOn(fixture);
    await initialize(agent);
    const first = await agent.agent.request('session/new', { cwd: fixture.project, mcpServers: [] });
    const second = await agent.agent.request('session/new', { cwd: fixture.project, mcpServers: [] });
    expect(first.sessionId).not.toBe('');
    expect(first.sessionId).not.toBe(second.sessionId);
    for (const [index, response] of [first, second].entries()) {
      expect(response.modes?.availableModes.map((mode) => mode.id)).toEqual(['default', 'accept-edits', 'yolo']);
      expect(response.modes?.currentModeId).toBe('default');
      const options = response.configOptions ?? [];
      expect(options.map((option) => option.id)).toEqual(['mode', 'model', 'reasoning_effort']);
      for (const option of options) {
        if (option.type !== 'select') throw new Error('select expected');
        const values = option.options.flatMap((entry) =>
          'group' in entry ? entry.options.map((item) => item.value) : [entry.value],
        );
        expect(values).toContain(option.currentValue);
      }
      expect(options[1]?.currentValue).toBe('scripted:model-a');
      expect(options[2]?.currentValue).toBe('default');
      const responseLine = agent.responseTo('session/new', index);
      await agent.waitFor((line) => updatesOf(agent, response.sessionId, 'usage_update').length > 0 || line.seq < 0);
      const commands = updatesOf(agent, response.sessionId, 'available_commands_update');
      const usage = updatesOf(agent, response.sessionId, 'usage_update');
      expect(commands).toHaveLength(1);
      expect(usage).toHaveLength(1);
      expect(commands[0]?.seq).toBeGreaterThan(responseLine?.seq ?? Number.POSITIVE_INFINITY);
      expect(usage[0]?.seq).toBeGreaterThan(commands[0]?.seq ?? Number.POSITIVE_INFINITY);
    }
  });

  it('09. a relative or missing cwd is answered -32602', async () => {
    const run = await openRun();
    await expectError(run.agent.agent.request('session/new', { cwd: 'project', mcpServers: [] }), -32602);
    await expectError(
      run.agent.agent.request('session/new', { cwd: `${run.fixture.project}/missing`, mcpServers: [] }),
      -32602,
    );
  });

  it('10. every session-scoped request for an unknown id is answered -32002 with data.sessionId; cancel is ignored', async () => {
    const run = await openRun();
    const client = run.agent.agent;
    const sessionId = 'no-such-session';
    const cwd = run.fixture.project;
    const calls: Promise<unknown>[] = [
      client.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'x' }] }),
      client.request('session/set_mode', { sessionId, modeId: 'yolo' }),
      client.request('session/set_config_option', { sessionId, configId: 'mode', value: 'yolo' } as never),
      client.request('session/load', { sessionId, cwd, mcpServers: [] }),
      client.request('session/resume', { sessionId, cwd }),
      client.request('session/fork', { sessionId, cwd }),
    ];
    for (const call of calls) {
      const error = await expectError(call, -32002);
      expect((error.data as { sessionId?: string }).sessionId).toBe(sessionId);
    }
    // session/close: the SDK client treats -32002 as success, so read the wire.
    await client.request('session/close', { sessionId });
    const closeAnswer = run.agent.responseTo('session/close');
    expect(((closeAnswer?.message.error ?? {}) as { code: number; data: { sessionId: string } }).code).toBe(-32002);
    expect(((closeAnswer?.message.error ?? {}) as { data: { sessionId: string } }).data.sessionId).toBe(sessionId);
    const before = run.agent.lines.length;
    await client.notify('session/cancel', { sessionId });
    await client.request('session/list', {});
    const answers = run.agent.lines.slice(before).filter((line) => line.from === 'agent');
    expect(answers).toHaveLength(1);
  });

  it('11. without credentials set-up requests need authentication, and api-key-env succeeds once the key exists', async () => {
    const fixture = await fixtureFor({ withKey: false });
    const agent = await agentOn(fixture);
    await initialize(agent, { auth: { terminal: true } } as never);
    await expectError(agent.agent.request('session/new', { cwd: fixture.project, mcpServers: [] }), -32000);
    await expectError(agent.agent.request('authenticate', { methodId: 'nope' }), -32602);
    await expectError(agent.agent.request('authenticate', { methodId: 'hermes-setup' }), -32602);
    await expectError(agent.agent.request('authenticate', { methodId: 'api-key-env' }), -32000);
    const { writeFile } = await import('node:fs/promises');
    await writeFile(`${fixture.home}/.env`, 'SCRIPTED_API_KEY=scripted-test-key\n');
    expect(await agent.agent.request('authenticate', { methodId: 'api-key-env' })).toEqual({});
    const session = await agent.agent.request('session/new', { cwd: fixture.project, mcpServers: [] });
    expect(session.sessionId).not.toBe('');
  });

  it('40. non-advertised methods are answered -32601', async () => {
    const run = await openRun();
    await expectError(run.agent.agent.request('session/delete', { sessionId: run.sessionId }), -32601);
    await expectError(run.agent.agent.request('logout', {}), -32601);
    await expectError(run.agent.agent.request('session/archive', { sessionId: run.sessionId }), -32601);
  });

  it('53. concurrent sessions keep their updates apart', async () => {
    const run = await openRun({ script: [] });
    const other = await run.agent.agent.request('session/new', { cwd: run.fixture.project, mcpServers: [] });
    run.fixture.server.push(step(text('alpha alpha alpha', 3)), step(text('beta beta beta', 3)));
    const [first, second] = await Promise.all([prompt(run, 'one'), prompt(run, 'two', other.sessionId)]);
    expect(first.stopReason).toBe('end_turn');
    expect(second.stopReason).toBe('end_turn');
    const textOf = (sessionId: string) =>
      updatesOf(run.agent, sessionId, 'agent_message_chunk')
        .map((line) => (line.update.content.type === 'text' ? line.update.content.text : ''))
        .join('');
    const texts = [textOf(run.sessionId), textOf(other.sessionId)].sort();
    expect(texts).toEqual(['alpha alpha alpha', 'beta beta beta']);
    expect(updateLines(run.agent, run.sessionId).length + updateLines(run.agent, other.sessionId).length).toBe(
      run.agent.lines.filter((line) => line.message.method === 'session/update').length,
    );
  });
});
