// biome-ignore-all lint/suspicious/noExplicitAny: assertions dig into untyped JSON payloads of the wire.
import type { AddressInfo } from 'node:net';
import { step, text, toolCall } from '@hermes/core/testing';
import { type ServerType, serve } from '@hono/node-server';
import { afterEach, describe, expect, it } from 'vitest';
import { createOpenAIApp } from '../src/index.js';
import { dataOf, KEY, type Rig, readFrames, startRig } from './harness.js';

let rig: Rig | null = null;
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await rig?.close();
  rig = null;
});

const danger = () => step(toolCall('terminal', { command: 'rm -rf ./conformance-scratch' }));

async function runToEnd(base: string, runId: string): Promise<any[]> {
  const response = await fetch(`${base}/v1/runs/${runId}/events`, { headers: { authorization: `Bearer ${KEY}` } });
  return (await readFrames(response)).filter((frame) => frame.includes('data: ')).map(dataOf);
}

async function resume(base: string, runId: string, lastEventId: string): Promise<string[]> {
  const response = await fetch(`${base}/v1/runs/${runId}/events`, {
    headers: { authorization: `Bearer ${KEY}`, 'Last-Event-ID': lastEventId },
  });
  expect(response.status).toBe(200);
  // `text()` resolves only once the server closes the stream: a hang fails the test by its timeout.
  return readFrames(response);
}

describe('16.5 runs event replay past the end', () => {
  it('Last-Event-ID at or past the terminal event replays nothing and closes', async () => {
    rig = await startRig({ script: [step(text('Done.'))] });
    const { run_id: runId } = (await rig.native.post('/v1/runs', { body: { input: 'hi' } })) as { run_id: string };
    const all = await runToEnd(rig.base, runId);
    const terminal = all.at(-1);
    expect(terminal.event).toBe('run.completed');
    for (const last of [terminal.seq, terminal.seq + 1, terminal.seq + 50]) {
      const frames = await resume(rig.base, runId, String(last));
      expect(
        frames.filter((frame) => frame.includes('data: ')),
        `Last-Event-ID ${last}`,
      ).toEqual([]);
      expect(frames.at(-1)).toBe(': stream closed');
    }
    // One before the terminal event still gets exactly the terminal event.
    const before = await resume(rig.base, runId, String(terminal.seq - 1));
    expect(before.filter((frame) => frame.includes('data: ')).map((frame) => (dataOf(frame) as any).event)).toEqual([
      'run.completed',
    ]);
  });

  it('a process without the run in memory rebuilds the terminal event with its seq, and skips it when already seen', async () => {
    rig = await startRig({ script: [step(text('Done.'))] });
    const { run_id: runId } = (await rig.native.post('/v1/runs', { body: { input: 'hi' } })) as { run_id: string };
    const terminal = (await runToEnd(rig.base, runId)).at(-1);
    // A second app over the same store stands for another server process: it has no backlog of this run.
    const other = createOpenAIApp({ host: rig.host, settings: { key: KEY } });
    const server: ServerType = await new Promise((resolve) => {
      const created = serve({ fetch: other.app.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve(created));
    });
    cleanups.push(async () => {
      other.close();
      (server as unknown as { closeAllConnections(): void }).closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    });
    const otherBase = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const fresh = (await readFrames(
      await fetch(`${otherBase}/v1/runs/${runId}/events`, { headers: { authorization: `Bearer ${KEY}` } }),
    )) as string[];
    const rebuilt = fresh.find((frame) => frame.includes('data: '));
    expect(rebuilt?.startsWith(`id: ${terminal.seq}\n`)).toBe(true);
    expect(dataOf(rebuilt as string)).toMatchObject({ event: 'run.completed', seq: terminal.seq, output: 'Done.' });
    expect(JSON.stringify(dataOf(rebuilt as string))).not.toContain('wire_');
    for (const last of [terminal.seq, terminal.seq + 3]) {
      const frames = await resume(otherBase, runId, String(last));
      expect(frames.filter((frame) => frame.includes('data: '))).toEqual([]);
      expect(frames.at(-1)).toBe(': stream closed');
    }
  });
});

describe('16.5 auto-refused commands', () => {
  it('a command refused because the request has no approval channel is reported to the model as policy, not the user', async () => {
    rig = await startRig({ script: [danger(), step(text('understood')), danger(), step(text('ok'))] });
    const chat = await rig.client.chat.completions.create({
      model: 'hermes-agent',
      messages: [{ role: 'user', content: 'clean up' }],
    });
    expect(chat.choices[0]?.message.content).toBe('understood');
    const response = await rig.client.responses.create({ model: 'hermes-agent', input: 'clean up again' });
    expect(response.output_text).toBe('ok');
    for (const call of [rig.host.model.calls[1], rig.host.model.calls[3]]) {
      const toolResults = ((call?.messages ?? []) as { role: string; content: unknown }[])
        .filter((message) => message.role === 'tool')
        .map((message) => JSON.stringify(message.content));
      expect(toolResults).toHaveLength(1);
      expect(toolResults[0]).toContain('refused by policy');
      expect(toolResults[0]).toContain('no approval channel');
      expect(toolResults[0]).not.toMatch(/by the user/);
    }
  });
});
