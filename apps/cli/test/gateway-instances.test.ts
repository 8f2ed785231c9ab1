import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startScriptedOpenAIServer, step, text, toolCall } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../packages/core/test/support/postgres.js';
// The global setup's `ProvidedContext` declaration types `inject('hermesTestDatabaseUrl')`.
import type {} from '../../../packages/core/test/support/postgres-global-setup.js';
import { cleanups, runCleanups, spawnGateway } from './support/hermes-process.js';

afterEach(runCleanups);

describe('hermes gateway on a PostgreSQL store shared with other instances (ADR 0020)', () => {
  it('a resume in one gateway of a session live in another attaches to it there, and answers its approval', async () => {
    const database = await createTestDatabase();
    cleanups.push(database.drop);
    const workspace = mkdtempSync(join(tmpdir(), 'hermes-workspace-'));
    cleanups.push(() => rmSync(workspace, { recursive: true, force: true }));
    mkdirSync(join(workspace, 'relay-scratch'));
    const scripted = await startScriptedOpenAIServer({
      script: [
        step(toolCall('terminal', { command: 'rm -rf ./relay-scratch' })),
        step(text('cleaned up after the approval')),
      ],
    });
    cleanups.push(() => scripted.close());
    const env = { HERMES_DATABASE_URL: database.url };
    const a = spawnGateway(scripted, { env });
    const b = spawnGateway(scripted, { env });
    await Promise.all([a, b].map((gateway) => gateway.waitFor((frame) => frame.params?.type === 'gateway.ready')));

    // A's turn waits for an approval its client does not answer.
    await a.call('caps', 'client.capabilities', { server_requests: true });
    const created = await a.call('create', 'session.create', { cwd: workspace });
    const runtimeId = created.result?.session_id as string;
    const storedId = created.result?.stored_session_id as string;
    await a.call('submit', 'prompt.submit', { session_id: runtimeId, text: 'clean up the scratch folder' });
    const asked = await a.waitFor((frame) => frame.method === 'approval');

    // B resumes the stored id: attached to A's live session, with A's open request, not a second copy.
    await b.call('caps', 'client.capabilities', { server_requests: true });
    const resumed = await b.call('resume', 'session.resume', { session_id: storedId });
    expect(resumed.error).toBeUndefined();
    expect(resumed.result).toMatchObject({ session_id: runtimeId, resumed: storedId, running: true });
    const open = resumed.result?.open_requests as { id: string }[];
    expect(open.map((request) => request.id)).toContain(asked.id);

    // B's client answers; A's turn goes on and both clients see it end.
    b.send({ jsonrpc: '2.0', id: asked.id, result: { choice: 'once' } });
    const done = (frame: { params?: { type?: string; session_id?: string } }) =>
      frame.params?.type === 'message.complete' && frame.params.session_id === runtimeId;
    const onA = await a.waitFor(done);
    const onB = await b.waitFor(done);
    expect(onA.params?.payload?.text).toBe('cleaned up after the approval');
    expect(onB.params).toEqual(onA.params);
  }, 60_000);
});
