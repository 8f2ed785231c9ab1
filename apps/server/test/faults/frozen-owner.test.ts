import { afterEach, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../../packages/core/test/support/postgres.js';
// The global setup's `ProvidedContext` declaration types `inject('hermesTestDatabaseUrl')`.
import type {} from '../../../../packages/core/test/support/postgres-global-setup.js';
import { cleanups, runCleanups } from '../support/server-process.js';
import {
  answer,
  auth,
  FaultLedger,
  modelCalls,
  postgresReader,
  sleep,
  startInstance,
  startModel,
  type TurnRecord,
  until,
  watchStatuses,
} from './support/harness.js';
import { checkInvariants, expectInvariantsHold } from './support/invariants.js';

afterEach(runCleanups);

/** The turn lease's time to live here, in seconds: short, so the freeze outlives it quickly. */
const LEASE_TTL_S = 2;

describe('fault d: the owner of a turn frozen past its lease', () => {
  it('33.6: owner SIGSTOP past its lease, a stop and a new turn on the session through the other instance, SIGCONT: the stop is applied or answered 503, and every invariant holds', async () => {
    const created = await createTestDatabase();
    cleanups.push(created.drop);
    const ledger = new FaultLedger('d. owner SIGSTOP past its lease');
    // The frozen turn's answer takes about 6 s; the model keeps sending it while its reader is frozen.
    const model = await startModel([answer(3_000), answer(100)]);
    const configYaml = `session:\n  auto_title: false\n  lease_ttl: ${LEASE_TTL_S}\n`;
    const a = await startInstance('A', { model, database: created.url, configYaml });
    const b = await startInstance('B', { model, database: created.url, configYaml });
    const store = postgresReader(created.url);
    const watcher = watchStatuses(store, ledger);
    const sessionId = ledger.newSessionId();

    // A run on A, read live on B; A freezes once the model has started answering.
    const first = ledger.run(a, sessionId, { readFrom: b });
    await modelCalls(model, 1);
    await sleep(500);
    a.server.child.kill('SIGSTOP');
    ledger.faults += 1;
    try {
      // Well past the lease: B may now take the session.
      await sleep(LEASE_TTL_S * 3_000);
      // A stop sent through B while the owner is frozen is applied or answered 503 to be retried, never dropped.
      const { runId } = await first.started;
      const stop = await fetch(`${b.server.url}/v1/runs/${runId}/stop`, { method: 'POST', headers: auth });
      const stopAnswer = `${stop.status} ${await stop.text()}`;
      console.log(`[faults] ${ledger.scenario}: a stop during the freeze: ${stopAnswer}`);
      expect([200, 202, 503], stopAnswer).toContain(stop.status);
      // A new turn on the same session on B, sent again while it is refused as busy (as a client would).
      const second = await until(
        async () => {
          const turn: TurnRecord = await ledger.run(b, sessionId).done;
          return turn.outcome.startsWith('409') ? null : turn;
        },
        60_000,
        'a turn admitted on B',
      );
      console.log(`[faults] ${ledger.scenario}: the new turn on B: ${second.outcome}`);
    } finally {
      a.server.child.kill('SIGCONT');
    }
    // The frozen owner wakes with the rest of its model answer waiting, and does whatever it does with it.
    const firstDone = await first.done;
    console.log(`[faults] ${ledger.scenario}: the frozen run's reader got ${firstDone.outcome}`);
    await sleep(LEASE_TTL_S * 2_000);

    await watcher.stop();
    const report = await checkInvariants({ ledger, store, instances: [a, b] });
    expectInvariantsHold(report, ledger);
  }, 300_000);
});
