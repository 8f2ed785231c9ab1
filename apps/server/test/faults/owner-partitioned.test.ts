import { afterEach, describe, it } from 'vitest';
import { createTestDatabase } from '../../../../packages/core/test/support/postgres.js';
// The global setup's `ProvidedContext` declaration types `inject('hermesTestDatabaseUrl')`.
import type {} from '../../../../packages/core/test/support/postgres-global-setup.js';
import { cleanups, runCleanups } from '../support/server-process.js';
import {
  answer,
  FaultLedger,
  modelCalls,
  postgresReader,
  sleep,
  startInstance,
  startModel,
  watchStatuses,
} from './support/harness.js';
import { checkInvariants, expectInvariantsHold } from './support/invariants.js';
import { startTcpProxy } from './support/tcp-proxy.js';

afterEach(runCleanups);

/** The turn lease's time to live here, in seconds: short, so the partition outlives it quickly. */
const LEASE_TTL_S = 2;

/**
 * Scenario f: a partition between the owner of a turn and PostgreSQL outlives its lease; the instance that reads the
 * run settles it `interrupted`; the partition heals while the owner's model is still answering, and the owner ends its
 * turn. Beyond the list: a partition of one instance, where scenario a stops the database for all.
 */
async function ownerPartitionedScenario(): Promise<void> {
  const created = await createTestDatabase();
  cleanups.push(created.drop);
  // A reaches the database through a relay the test can cut; B directly.
  const relay = await startTcpProxy(created.url);
  const ledger = new FaultLedger('f. owner cut off from PostgreSQL past its lease');
  // The owner's answer takes about 10 s: it is still streaming when the partition heals.
  const model = await startModel([answer(5_000), answer(100)]);
  const configYaml = `session:\n  auto_title: false\n  lease_ttl: ${LEASE_TTL_S}\n`;
  const a = await startInstance('A', { model, database: relay.url, configYaml });
  const b = await startInstance('B', { model, database: created.url, configYaml });
  const store = postgresReader(created.url);
  const watcher = watchStatuses(store, ledger);

  // A run on A read live on B; A loses the database once the model has started answering.
  const first = ledger.run(a, ledger.newSessionId(), { readFrom: b });
  await modelCalls(model, 1);
  await sleep(500);
  relay.cut();
  ledger.faults += 1;
  // Past the lease: B's reader finds the owner's lease expired and settles the run.
  await sleep(LEASE_TTL_S * 3_000);
  relay.heal();
  const firstDone = await first.done;
  console.log(`[faults] ${ledger.scenario}: the run's reader on B got ${firstDone.outcome}`);
  // The owner's turn ends after the partition healed; it writes whatever it is still allowed to.
  await sleep(8_000);

  await watcher.stop();
  const report = await checkInvariants({ ledger, store, instances: [a, b] });
  expectInvariantsHold(report, ledger);
}

describe('fault f: the owner of a turn cut off from the database past its lease', () => {
  it(
    '33.6: a partition between the owner and PostgreSQL outlives its lease, another instance settles the run, the owner comes back before its turn ends: the owner adopts the settled end, and every invariant holds',
    ownerPartitionedScenario,
    300_000,
  );
});
