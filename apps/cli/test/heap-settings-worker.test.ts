import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { runCleanups, spawnHermes } from './support/hermes-process.js';

const probe = fileURLToPath(new URL('../../../test/fixtures/young-generation-probe.mjs', import.meta.url));
const MB = 1024 * 1024;

afterEach(runCleanups);

/**
 * A `hermes gateway` with the probe preloaded: the young generation's size once a worker thread started in it is online,
 * and after the probe then allocated at a high rate.
 */
async function youngGenerationAfterAWorker(env: Record<string, string>): Promise<{ atOnline: number; after: number }> {
  let ready: () => void = () => {};
  const isReady = new Promise<void>((resolve) => {
    ready = resolve;
  });
  const gateway = spawnHermes(
    ['gateway'],
    {
      prefix: 'hermes-young-generation-',
      nodeArgs: ['--import', probe],
      env: { HERMES_MODEL: 'custom:scripted', HERMES_BASE_URL: 'http://127.0.0.1:9/v1', ...env },
    },
    (line) => {
      if (line.includes('gateway.ready')) ready();
    },
  );
  await Promise.race([isReady, gateway.exited.then(() => Promise.reject(new Error(gateway.stderr())))]);
  gateway.child.kill('SIGUSR2');
  for (;;) {
    const match = /young generation (\d+) (\d+)/.exec(gateway.stderr());
    if (match) return { atOnline: Number(match[1]), after: Number(match[2]) };
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

// ADR 0107: node 20 puts V8's flags back to their start-up values when a worker thread starts (the store's WAL
// checkpointer, at its 128th write), so `hermes` sets its heap flags again once each worker is online.
describe('the CLI heap settings after a worker thread starts (ADR 0078, ADR 0107)', () => {
  it('keep the young generation from growing once the thread is online, by default', async () => {
    const { atOnline, after } = await youngGenerationAfterAWorker({});
    // V8 may grow it in the moment between the thread's start and its online event (ADR 0107); not after that.
    expect(after).toBeLessThanOrEqual(Math.max(atOnline, 4 * MB));
  }, 180_000);

  it('leave V8 to grow it with HERMES_V8_HEAP=node (the probe sees the difference)', async () => {
    const { after } = await youngGenerationAfterAWorker({ HERMES_V8_HEAP: 'node' });
    expect(after).toBeGreaterThanOrEqual(16 * MB);
  }, 180_000);
});
