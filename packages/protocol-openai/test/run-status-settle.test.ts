import { step, text } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { type Rig, startRig, until } from './harness.js';

let rig: Rig | null = null;
afterEach(async () => {
  await rig?.close();
  rig = null;
});

describe('run status while the run settles', () => {
  it('never reports completed before the stored row carries the output', async () => {
    rig = await startRig({ script: [step(text('Done.'))] });
    const runs = rig.host.store.runs;
    const update = runs.update.bind(runs);
    let release: () => void = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let held = false;
    // Holds the terminal row write, as a slow database would, so a status read lands between the turn's end and it.
    runs.update = async (id, patch) => {
      if (patch.status === 'completed') {
        held = true;
        await released;
      }
      return update(id, patch);
    };
    const created = (await rig.native.post('/v1/runs', { body: { input: 'hi' } })) as { run_id: string };
    await until(() => held);
    const during = (await (await rig.raw(`/v1/runs/${created.run_id}`)).json()) as Record<string, unknown>;
    expect(during.status).toBe('running');
    expect(during.output).toBeNull();
    release();
    const after = await until(async () => {
      const status = (await (await rig?.raw(`/v1/runs/${created.run_id}`))?.json()) as Record<string, unknown>;
      return status.status === 'completed' ? status : null;
    });
    expect(after).toMatchObject({ status: 'completed', output: 'Done.', completed: true });
  });
});
