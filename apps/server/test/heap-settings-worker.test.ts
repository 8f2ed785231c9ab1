import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { runCleanups, type StartedServer, startServer, temp, until } from './support/server-process.js';

const probe = fileURLToPath(new URL('../../../test/fixtures/young-generation-probe.mjs', import.meta.url));
const MB = 1024 * 1024;
const KEY = 'young-generation-test-key';

afterEach(runCleanups);

/**
 * The young generation's size once a worker thread started in `server` is online, and after the probe then allocated
 * at a high rate.
 */
async function youngGenerationAfterAWorker(server: StartedServer): Promise<{ atOnline: number; after: number }> {
  server.child.kill('SIGUSR2');
  const line = await until(
    () => /young generation (\d+) (\d+)/.exec(server.stderr()),
    (match) => match !== null,
    'the probe’s young generation line',
    120_000,
  );
  return { atOnline: Number(line?.[1]), after: Number(line?.[2]) };
}

// ADR 0107: node 20 puts V8's flags back to their start-up values when a worker thread starts, so the server sets its
// heap flags again once each worker is online; before, a server past the checkpointer's start ran on V8's own sizing.
describe('the server heap settings after a worker thread starts (ADR 0078, ADR 0107)', () => {
  it('keep the young generation from growing once the thread is online, by default', async () => {
    const server = await startServer({ HERMES_HOME: temp('hermes-home-'), API_SERVER_KEY: KEY }, ['--import', probe]);
    const { atOnline, after } = await youngGenerationAfterAWorker(server);
    // V8 may grow it in the moment between the thread's start and its online event (ADR 0107); not after that.
    expect(after).toBeLessThanOrEqual(Math.max(atOnline, 4 * MB));
  }, 180_000);

  it('leave V8 to grow it with HERMES_V8_HEAP=node (the probe sees the difference)', async () => {
    const server = await startServer(
      { HERMES_HOME: temp('hermes-home-'), API_SERVER_KEY: KEY, HERMES_V8_HEAP: 'node' },
      ['--import', probe],
    );
    const { after } = await youngGenerationAfterAWorker(server);
    expect(after).toBeGreaterThanOrEqual(16 * MB);
  }, 180_000);
});
