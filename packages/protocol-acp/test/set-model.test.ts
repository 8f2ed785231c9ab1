import { step, text } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { initialize } from './agent-harness.js';
import { agentOn, expectError, openRun, prompt, teardown, updatesOf } from './conformance-helpers.js';

afterEach(async (context) => {
  await teardown(context.task.result?.state === 'fail');
});

interface LegacyModels {
  currentModelId: string;
  availableModels: { modelId: string; name: string }[];
}

describe('session/set_model for legacy clients (issue 16.3)', () => {
  it('advertises models, switches the session model, reflects it in config options and keeps it on load', async () => {
    const run = await openRun({ script: [step(text('from model b'))] });
    const client = run.agent.agent;
    const created = run.agent.responseTo('session/new')?.message.result as { models?: LegacyModels };
    expect(created.models?.currentModelId).toBe('scripted:model-a');
    expect(created.models?.availableModels.map((model) => model.modelId)).toEqual([
      'scripted:model-a',
      'scripted:model-b',
    ]);

    expect(
      await client.request('session/set_model', { sessionId: run.sessionId, modelId: 'scripted:model-b' }),
    ).toEqual({});
    const answered = run.agent.responseTo('session/set_model')?.seq ?? 0;
    const update = updatesOf(run.agent, run.sessionId, 'config_option_update').at(-1);
    expect(update?.seq).toBeLessThan(answered);
    expect(update?.update.configOptions.find((option) => option.id === 'model')?.currentValue).toBe('scripted:model-b');

    expect((await prompt(run, 'which model?')).stopReason).toBe('end_turn');
    expect(JSON.stringify(run.fixture.server.requests.at(-1)?.body)).toContain('"model":"model-b"');

    await expectError(client.request('session/set_model', { sessionId: run.sessionId, modelId: 'nope:none' }), -32602);
    await expectError(client.request('session/set_model', { sessionId: run.sessionId }), -32602);
    await expectError(client.request('session/set_model', { sessionId: 'no-such-session', modelId: 'x' }), -32002);

    // The switch is session-scoped and stored: a fresh connection loading the session sees model-b.
    const fresh = await agentOn(run.fixture);
    await initialize(fresh);
    await fresh.agent.request('session/load', { sessionId: run.sessionId, cwd: run.fixture.project, mcpServers: [] });
    const loaded = fresh.responseTo('session/load')?.message.result as {
      models?: LegacyModels;
      configOptions: { id: string; currentValue: string }[];
    };
    expect(loaded.models?.currentModelId).toBe('scripted:model-b');
    expect(loaded.configOptions.find((option) => option.id === 'model')?.currentValue).toBe('scripted:model-b');
    // The global default is unchanged: a new session starts on model-a.
    const other = await client.request('session/new', { cwd: run.fixture.project, mcpServers: [] });
    expect(other.configOptions?.find((option) => option.id === 'model')?.currentValue).toBe('scripted:model-a');
  });
});
