// biome-ignore-all lint/suspicious/noExplicitAny: assertions dig into untyped JSON payloads of the wire.
import { step, text } from '@hermes/core/testing';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { dataOf, type Rig, readFrames, startRig } from './harness.js';

let rig: Rig | null = null;
afterEach(async () => {
  await rig?.close();
  rig = null;
});

const user = (content: string) => ({ role: 'user' as const, content });

async function failure(promise: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  const caught = await promise.then(
    () => null,
    (error: unknown) => error,
  );
  expect(caught).toBeInstanceOf(OpenAI.APIError);
  return caught as InstanceType<typeof OpenAI.APIError>;
}

function routes() {
  return {
    script: [step(text('default answer'))],
    scripts: {
      'scripted-fast': [step(text('fast answer')), step(text('fast again')), step(text('fast stream'))],
      listed: [step(text('listed answer'))],
      'run-model': [step(text('run answer'))],
    },
    settings: { modelRoutes: { fast: { model: 'scripted-fast', provider: 'scripted' } } },
    // `listed` is a model of a configured provider, so /v1/chat/completions knows it by its bare name.
    config: { providers: { scripted: { models: ['listed'] } } } as never,
  };
}

describe('16.5 the model field is honoured or refused', () => {
  it('chat completions: an unknown model is a 404 model_not_found before any model call, streaming or not', async () => {
    rig = await startRig(routes());
    for (const stream of [false, true]) {
      const error = await failure(
        rig.client.chat.completions.create({ model: 'gpt-4o', messages: [user('hi')], stream } as never),
      );
      expect(error.status).toBe(404);
      expect(error.code).toBe('model_not_found');
      expect(error.param).toBe('model');
      expect(error.message).toContain("'gpt-4o'");
      expect(error.message).toContain('hermes-agent');
    }
    expect(rig.host.model.calls).toHaveLength(0);
  });

  it('chat completions: an alias, a listed bare model and provider:model run that model and the answer names it', async () => {
    rig = await startRig(routes());
    const fast = await rig.client.chat.completions.create({ model: 'fast', messages: [user('hi')] });
    expect(fast.choices[0]?.message.content).toBe('fast answer');
    expect(fast.model).toBe('scripted-fast');
    const listed = await rig.client.chat.completions.create({ model: 'listed', messages: [user('hi')] });
    expect(listed.choices[0]?.message.content).toBe('listed answer');
    expect(listed.model).toBe('listed');
    const explicit = await rig.client.chat.completions.create({
      model: 'scripted:scripted-fast',
      messages: [user('hi')],
    });
    expect(explicit.choices[0]?.message.content).toBe('fast again');
    expect(explicit.model).toBe('scripted-fast');
    const frames = await readFrames(
      await rig.raw('/v1/chat/completions', {
        method: 'POST',
        body: JSON.stringify({ model: 'fast', stream: true, messages: [user('hi')] }),
      }),
    );
    const chunks = frames.map(dataOf).filter((chunk) => typeof chunk === 'object') as { model: string }[];
    expect(chunks.length).toBeGreaterThan(1);
    expect(new Set(chunks.map((chunk) => chunk.model))).toEqual(new Set(['scripted-fast']));
    // The default model was never called.
    expect(rig.host.model.calls).toHaveLength(0);
    const plain = await rig.client.chat.completions.create({ model: 'hermes-agent', messages: [user('hi')] });
    expect(plain.model).toBe('hermes-agent');
    expect(plain.choices[0]?.message.content).toBe('default answer');
  });

  it('a provider without credentials is refused with 400 model_unavailable naming what to set', async () => {
    rig = await startRig(routes());
    const error = await failure(
      rig.client.chat.completions.create({ model: 'anthropic:claude-sonnet-4-5', messages: [user('hi')] }),
    );
    expect(error.status).toBe(400);
    expect(error.code).toBe('model_unavailable');
    expect(error.message).toMatch(/ANTHROPIC_API_KEY/);
    const run = await rig.raw('/v1/runs', {
      method: 'POST',
      body: JSON.stringify({ input: 'hi', model: 'anthropic:claude-sonnet-4-5' }),
    });
    expect(run.status).toBe(400);
    expect(((await run.json()) as any).error.code).toBe('model_unavailable');
  });

  it('responses: an unknown model is refused; an alias runs and is reported', async () => {
    rig = await startRig(routes());
    const error = await failure(rig.client.responses.create({ model: 'gpt-4o', input: 'hi' }));
    expect(error.status).toBe(404);
    expect(error.code).toBe('model_not_found');
    const response = await rig.client.responses.create({ model: 'fast', input: 'hi' });
    expect(response.output_text).toBe('fast answer');
    expect(response.model).toBe('scripted-fast');
    const stored = await rig.client.responses.retrieve(response.id);
    expect(stored.model).toBe('scripted-fast');
    expect(rig.host.model.calls).toHaveLength(0);
  });

  it('runs: the status reports the model that really ran, in model and runtime', async () => {
    rig = await startRig(routes());
    const created = (await rig.native.post('/v1/runs', { body: { input: 'hi', model: 'run-model' } })) as any;
    await readFrames(await rig.raw(`/v1/runs/${created.run_id}/events`));
    const status = (await rig.native.get(`/v1/runs/${created.run_id}`)) as any;
    expect(status.output).toBe('run answer');
    expect(status.model).toBe('run-model');
    expect(status.runtime).toMatchObject({
      provider: 'scripted',
      model: 'run-model',
      route_source: 'raw_request',
      requested: { model: 'run-model', provider: null },
    });
    const aliased = (await rig.native.post('/v1/runs', { body: { input: 'hi', model: 'fast' } })) as any;
    await readFrames(await rig.raw(`/v1/runs/${aliased.run_id}/events`));
    const aliasStatus = (await rig.native.get(`/v1/runs/${aliased.run_id}`)) as any;
    expect(aliasStatus.model).toBe('scripted-fast');
    expect(aliasStatus.runtime).toMatchObject({
      provider: 'scripted',
      model: 'scripted-fast',
      route_source: 'model_route',
    });
    expect(rig.host.model.calls).toHaveLength(0);
  });
});
