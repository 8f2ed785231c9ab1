import { step, text } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { dataOf, type Rig, readFrames, startRig, until } from './harness.js';

/**
 * ADR 0038: the HTTP API brings a stored session's agent to life for each turn and lets go of it once the turn's slot
 * comes back, so a server holds the agents of turns in flight, not of every session it ever answered. The session
 * itself goes on from the store.
 */
let rig: Rig | null = null;
afterEach(async () => {
  await rig?.close();
  rig = null;
});

const seen = (index: number) => JSON.stringify(rig?.host.model.calls[index]?.messages ?? []);

describe('agent lifetime of HTTP turns', () => {
  it('Responses, chat completions on a named session, session chat and runs leave no live agent, and their sessions go on', async () => {
    rig = await startRig({
      script: [
        step(text('First answer.')),
        step(text('Second answer.')),
        step(text('Chat one.')),
        step(text('Chat two.')),
        step(text('Session one.')),
        step(text('Session two.')),
        step(text('Run done.')),
      ],
    });
    const { host } = rig;
    const first = await rig.client.responses.create({ model: 'hermes-agent', input: 'Remember 42.' });
    await until(() => host.liveAgents().length === 0);
    const second = await rig.client.responses.create({
      model: 'hermes-agent',
      input: 'What did I ask you to remember?',
      previous_response_id: first.id,
    });
    expect(second.output_text).toBe('Second answer.');
    // The chained turn ran in the same session, resumed from the store with its whole history.
    expect(seen(1)).toContain('Remember 42.');
    expect(seen(1)).toContain('First answer.');
    await until(() => host.liveAgents().length === 0);

    const headers = { 'X-Hermes-Session-Id': 'lifetime-chat' };
    await rig.client.chat.completions.create(
      { model: 'hermes-agent', messages: [{ role: 'user', content: 'chat one' }] },
      { headers },
    );
    await until(() => host.liveAgents().length === 0);
    const stream = await rig.client.chat.completions.create(
      { model: 'hermes-agent', stream: true, messages: [{ role: 'user', content: 'chat two' }] },
      { headers },
    );
    let streamed = '';
    for await (const chunk of stream) streamed += chunk.choices[0]?.delta.content ?? '';
    expect(streamed).toBe('Chat two.');
    expect(seen(3)).toContain('Chat one.');
    await until(() => host.liveAgents().length === 0);

    const created = (await (await rig.raw('/api/sessions', { method: 'POST', body: '{}' })).json()) as { id: string };
    const chat = await rig.raw(`/api/sessions/${created.id}/chat`, {
      method: 'POST',
      body: JSON.stringify({ message: 'session one' }),
    });
    expect(((await chat.json()) as { message: { content: string } }).message.content).toBe('Session one.');
    await until(() => host.liveAgents().length === 0);
    const streamedChat = await rig.raw(`/api/sessions/${created.id}/chat/stream`, {
      method: 'POST',
      body: JSON.stringify({ message: 'session two' }),
    });
    const frames = (await readFrames(streamedChat)).map((frame) => dataOf(frame) as Record<string, unknown>);
    expect(frames.find((frame) => 'content' in frame && 'message_id' in frame)?.content).toBe('Session two.');
    expect(seen(5)).toContain('Session one.');
    await until(() => host.liveAgents().length === 0);
    const history = await host.store.loadConversation(created.id);
    expect(history.map((row) => row.content)).toEqual(['session one', 'Session one.', 'session two', 'Session two.']);

    // A run's status and backlog outlive its agent (spec §19.3, §19.9).
    const run = (await (
      await rig.raw('/v1/runs', { method: 'POST', body: JSON.stringify({ input: 'go' }) })
    ).json()) as {
      run_id: string;
    };
    const runEvents = async () =>
      (await readFrames(await rig!.raw(`/v1/runs/${run.run_id}/events`)))
        .map((frame) => dataOf(frame) as { event?: string; output?: string } | undefined)
        .filter((event) => event?.event !== undefined);
    expect((await runEvents()).at(-1)?.event).toBe('run.completed');
    await until(() => host.liveAgents().length === 0);
    const replay = await runEvents();
    expect(replay.map((event) => event?.event)).toContain('message.delta');
    expect(replay.at(-1)).toMatchObject({ event: 'run.completed', output: 'Run done.' });
    const status = (await (await rig.raw(`/v1/runs/${run.run_id}`)).json()) as { status: string };
    expect(status.status).toBe('completed');
  }, 60_000);

  it('an agent a gateway or ACP session is attached to stays live through an HTTP turn on its session', async () => {
    rig = await startRig({ script: [step(text('Over HTTP.'))] });
    const { host } = rig;
    const created = (await (await rig.raw('/api/sessions', { method: 'POST', body: '{}' })).json()) as { id: string };
    // As the gateway opens a stored session: with its own seams, subscribed to the agent's events.
    const attached = await host.resumeSession(created.id, { callbacks: { approve: async () => 'deny' } });
    const delivered: string[] = [];
    const unsubscribe = attached.subscribe((event) => delivered.push(event.type));
    const chat = await rig.raw(`/api/sessions/${created.id}/chat`, {
      method: 'POST',
      body: JSON.stringify({ message: 'hello' }),
    });
    expect(chat.status).toBe(200);
    expect(host.getAgent(created.id)).toBe(attached);
    // The turn ran on the attached agent: its client saw it.
    expect(delivered).toContain('turn.end');
    unsubscribe();
  }, 60_000);
});
