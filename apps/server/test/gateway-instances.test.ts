import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { openPostgresStore } from '@hermes/core';
import { step, text, toolCall } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
// The global setup's `ProvidedContext` declaration types `inject('hermesTestDatabaseUrl')`.
import type {} from '../../../packages/core/test/support/postgres-global-setup.js';
import { connectGateway, type Frame } from './support/gateway-client.js';
import { cleanups, runCleanups, type StartedServer, startInstancePair, temp } from './support/server-process.js';

/**
 * Issue 17.2: a gateway WebSocket client of one apps/server instance attaches to a session live on another
 * instance of the same PostgreSQL database (ADR 0020), as real child processes.
 */

const KEY = 'test-key-0123456789abcdef';
afterEach(runCleanups);

/** A raw WebSocket client of the gateway, keeping every frame it receives. */
const client = (server: StartedServer) => connectGateway(server, KEY);

/** What the relay logs when a resume's owner wait runs out: an instance listening on the bus did not answer `who`. */
const OWNER_WAIT_RAN_OUT = 'did not say whether the session is live there';

const events = (frames: Frame[], sessionId: string) =>
  frames.filter((frame) => frame.method === 'event' && frame.params?.session_id === sessionId);

describe('gateway clients across apps/server instances on one PostgreSQL database (17.2)', () => {
  it('a client on B attaches to a session live on A: the same events, and it answers the approval A waits for', async () => {
    const workspace = temp('hermes-workspace-');
    mkdirSync(join(workspace, 'relay-scratch'));
    mkdirSync(join(workspace, 'relay-scratch-2'));
    const { a, b } = await startInstancePair(
      [
        step(toolCall('terminal', { command: 'rm -rf ./relay-scratch' })),
        step(text('cleaned '), text('up '), text('after the approval')),
        step(toolCall('terminal', { command: 'rm -rf ./relay-scratch-2' })),
        step(text('second turn from B')),
      ],
      { key: KEY, configYaml: 'session:\n  auto_title: false\ntui_gateway:\n  instance_silence_s: 2\n' },
    );

    // X on A starts a turn that waits for an approval; X takes server requests but does not answer.
    const x = await client(a);
    await x.call('client.capabilities', { server_requests: true });
    const created = await x.call('session.create', { cwd: workspace });
    const runtimeId = created.result?.session_id as string;
    const storedId = created.result?.stored_session_id as string;
    expect(typeof storedId).toBe('string');
    await x.call('prompt.submit', { session_id: runtimeId, text: 'clean up the scratch folder' });
    const asked = await x.waitFor((frame) => frame.method === 'approval', 'the approval request on A');

    // Y on B resumes the stored id: it is attached to A's live session, not given a second runtime.
    const y = await client(b);
    await y.call('client.capabilities', { server_requests: true });
    const resumed = await y.call('session.resume', { session_id: storedId });
    expect(resumed.error).toBeUndefined();
    expect(resumed.result).toMatchObject({ session_id: runtimeId, resumed: storedId, running: true });
    const open = resumed.result?.open_requests as { id: string; method: string }[];
    expect(open.map((request) => request.id)).toContain(asked.id);

    // Y answers the request A's turn waits for; the turn goes on, and both clients see it to the end.
    y.send({ jsonrpc: '2.0', id: asked.id, result: { choice: 'once' } });
    const done = (frame: Frame) => frame.params?.type === 'message.complete' && frame.params.session_id === runtimeId;
    const onA = await x.waitFor(done, 'message.complete on A');
    const onB = await y.waitFor(done, 'message.complete on B');
    expect(onA.params?.payload?.text).toBe('cleaned up after the approval');
    expect(onB.params).toEqual(onA.params);
    // The same events, same seqs, from Y's attach on: what A's client saw after the resume, B's client saw.
    const seen = events(y.frames, runtimeId);
    const firstSeq = seen[0]?.params?.seq as number;
    const fromA = events(x.frames, runtimeId).filter((frame) => (frame.params?.seq as number) >= firstSeq);
    expect(seen.map((frame) => frame.params?.seq)).toEqual(fromA.map((frame) => frame.params?.seq));
    expect(seen.map((frame) => frame.params?.type)).toEqual(fromA.map((frame) => frame.params?.type));
    expect(seen.some((frame) => frame.params?.type === 'tool.complete')).toBe(true);
    // The approval was answered by B's client: X's copy of the request was cancelled as resolved.
    await x.waitFor(
      (frame) => frame.params?.type === 'request.cancel' && frame.params.payload?.id === asked.id,
      'request.cancel on A',
    );

    // Y drives the session on A: a second turn submitted through B runs on A and reaches both clients.
    const second = await y.call('prompt.submit', { session_id: runtimeId, text: 'and now?' });
    expect(second.error).toBeUndefined();
    // Its approval is answered from B with approval.respond naming only the request id.
    const secondAsk = await y.waitFor(
      (frame) => frame.method === 'approval' && frame.id !== asked.id,
      'the second approval request on B',
    );
    const responded = await y.call('approval.respond', {
      request_id: secondAsk.params?.request_id,
      choice: 'once',
    });
    expect(responded.result).toEqual({ resolved: 1 });
    const secondDone = (frame: Frame) => done(frame) && frame.params?.payload?.text === 'second turn from B';
    await x.waitFor(secondDone, 'the second turn on A');
    await y.waitFor(secondDone, 'the second turn on B');

    // A dies: B's client is told the session is gone with a clear reason, and a new resume serves it on B from
    // the durable rows.
    a.child.kill('SIGKILL');
    const reclaimed = await y.waitFor(
      (frame) => frame.params?.type === 'session.reclaimed' && frame.params.payload?.session_id === runtimeId,
      'session.reclaimed on B',
    );
    expect(reclaimed.params?.payload).toMatchObject({ reason: 'instance_unreachable' });
    expect(String(reclaimed.params?.payload?.message)).toContain('stopped answering');
    const again = await y.call('session.resume', { session_id: storedId });
    expect(again.error).toBeUndefined();
    expect(again.result?.session_id).not.toBe(runtimeId);
    expect(again.result?.running).toBe(false);
    expect(JSON.stringify(again.result?.messages)).toContain('second turn from B');
  }, 120_000);

  it('a resume on B of a session whose owner A holds the turn but does not answer fails clearly, and no second copy starts', async () => {
    const workspace = temp('hermes-workspace-');
    const { a, b } = await startInstancePair([step(toolCall('terminal', { command: 'rm -rf ./relay-scratch' }))], {
      key: KEY,
      configYaml: 'session:\n  auto_title: false\n',
    });
    const x = await client(a);
    await x.call('client.capabilities', { server_requests: true });
    const created = await x.call('session.create', { cwd: workspace });
    const storedId = created.result?.stored_session_id as string;
    await x.call('prompt.submit', { session_id: created.result?.session_id, text: 'clean up' });
    await x.waitFor((frame) => frame.method === 'approval', 'the approval request on A');

    // A freezes mid-turn, its turn lease still held.
    a.child.kill('SIGSTOP');
    cleanups.push(() => {
      a.child.kill('SIGCONT');
    });
    const y = await client(b);
    const resumed = await y.call('session.resume', { session_id: storedId });
    expect(resumed.result).toBeUndefined();
    expect(resumed.error?.code).toBe(5000);
    expect(resumed.error?.message).toMatch(/^resume failed: the session is live on instance .+, which did not answer/);
    expect((resumed.error as { data?: unknown }).data).toMatchObject({ reason: 'session_owner_unreachable' });
    // B waited for the frozen A until its owner wait ran out, and said so (its log is written asynchronously, so the
    // line can reach us after the answer does on a loaded machine).
    await expect.poll(() => b.stdout(), { timeout: 30_000, interval: 100 }).toContain(OWNER_WAIT_RAN_OUT);
  }, 120_000);

  it('a resume on B of an open session live nowhere answers once A says it is not there, without waiting out the owner wait; one live on A still goes through A', async () => {
    const workspace = temp('hermes-workspace-');
    const { a, b, databaseUrl } = await startInstancePair([step(text('unused'))], {
      key: KEY,
      configYaml: 'session:\n  auto_title: false\n',
    });
    // A stored session left open, as a crash leaves it: live on no instance.
    const store = await openPostgresStore({ url: databaseUrl, poolSize: 1 });
    const nowhere = '20261204_120000_a0b1c2';
    try {
      await store.createSession({ id: nowhere, source: 'tui', title: 'left open' });
      await store.appendMessages(nowhere, [
        { role: 'user', content: 'before the crash', turnId: 'turn_0' },
        { role: 'assistant', content: 'answered before the crash', turnId: 'turn_0' },
      ]);
    } finally {
      await store.close();
    }
    // One live on A (created by A's client, no turn running).
    const x = await client(a);
    const created = await x.call('session.create', { cwd: workspace });
    const onA = created.result?.session_id as string;
    const liveOnA = created.result?.stored_session_id as string;

    const y = await client(b);
    const fromRows = await y.call('session.resume', { session_id: nowhere });
    expect(fromRows.error).toBeUndefined();
    expect(fromRows.result).toMatchObject({ resumed: nowhere, running: false });
    expect(JSON.stringify(fromRows.result?.messages)).toContain('answered before the crash');
    // A answered `not-here`, so B resumed without its owner wait running out (the frozen-owner test shows the line).
    expect(b.stdout()).not.toContain(OWNER_WAIT_RAN_OUT);

    // The session live on A is not resumed a second time on B: B's client is attached to A's runtime.
    const throughA = await y.call('session.resume', { session_id: liveOnA });
    expect(throughA.error).toBeUndefined();
    expect(throughA.result).toMatchObject({ session_id: onA, resumed: liveOnA });
    expect(b.stdout()).not.toContain(OWNER_WAIT_RAN_OUT);
  }, 120_000);
});
