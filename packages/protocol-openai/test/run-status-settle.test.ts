import { delay, step, text } from '@hermes/core/testing';
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

  it('answers a run that settled while its row was being read with the output, not the row read before', async () => {
    rig = await startRig({ script: [step(delay(300), text('Done.'))] });
    const runs = rig.host.store.runs;
    const get = runs.get.bind(runs);
    let release: () => void = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let armed = false;
    let stale = false;
    let completedWritten = false;
    const update = runs.update.bind(runs);
    runs.update = async (id, patch) => {
      const result = await update(id, patch);
      if (patch.status === 'completed') completedWritten = true;
      return result;
    };
    // One status read gets its row before the terminal write and returns it only after the run has settled.
    runs.get = async (id) => {
      const row = await get(id);
      if (armed && !stale && row && row.status !== 'completed') {
        stale = true;
        await released;
      }
      return row;
    };
    const created = (await rig.native.post('/v1/runs', { body: { input: 'hi' } })) as { run_id: string };
    await until(() => rig?.host.model.calls.length === 1);
    armed = true;
    const reading = rig.raw(`/v1/runs/${created.run_id}`);
    await until(() => stale && completedWritten);
    release();
    const status = (await (await reading).json()) as Record<string, unknown>;
    expect(status).toMatchObject({ status: 'completed', output: 'Done.', completed: true });
  });
});
