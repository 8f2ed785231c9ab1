import { step, text, toolCall } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { type Rig, startRig, until } from './harness.js';

let rig: Rig | null = null;
afterEach(async () => {
  await rig?.close();
  rig = null;
});

const COMMAND = 'rm -rf ./permissions-scratch';

describe('"always" over the HTTP API (issue 32, ADR 0034)', () => {
  it('a run approval says what always allows; GET /v1/permissions lists the entry; revoke removes it', async () => {
    rig = await startRig({ script: [step(toolCall('terminal', { command: COMMAND })), step(text('done'))] });
    const run = (await rig.native.post('/v1/runs', { body: { input: 'clean' } })) as { run_id: string };
    const status = await until(async () => {
      const current = (await rig!.native.get(`/v1/runs/${run.run_id}`)) as { status: string; approval?: unknown };
      return current.status === 'waiting_for_approval' ? current : null;
    });
    expect(status.approval).toMatchObject({ always_scope: COMMAND, allow_permanent: true });
    await rig.native.post(`/v1/runs/${run.run_id}/approval`, { body: { choice: 'always' } });
    await until(async () => {
      const current = (await rig!.native.get(`/v1/runs/${run.run_id}`)) as { status: string };
      return current.status === 'completed';
    });
    expect(await rig.native.get('/v1/permissions')).toEqual({
      object: 'list',
      data: [{ object: 'permission', command: COMMAND, legacy: false, description: `always allow \`${COMMAND}\`` }],
    });
    expect(await rig.native.post('/v1/permissions/revoke', { body: { command: COMMAND } })).toEqual({
      object: 'permission.revoked',
      removed: 1,
    });
    expect(await rig.native.get('/v1/permissions')).toEqual({ object: 'list', data: [] });
    const invalid = await rig.native.post('/v1/permissions/revoke', { body: {} }).catch((caught: unknown) => caught);
    expect((invalid as { status: number }).status).toBe(400);
  }, 60_000);

  it('needs the API key', async () => {
    rig = await startRig();
    const response = await fetch(`${rig.base}/v1/permissions`);
    expect(response.status).toBe(401);
  }, 60_000);
});
