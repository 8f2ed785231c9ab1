import pg from 'pg';
import { afterEach, describe, it } from 'vitest';
import { createTestDatabase, testServerUrl } from '../../../../packages/core/test/support/postgres.js';
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
  type TurnRecord,
  watchStatuses,
} from './support/harness.js';
import { checkInvariants, expectInvariantsHold } from './support/invariants.js';

afterEach(runCleanups);

/**
 * Ends every connection to the scenario's database but the caller's own (`pg_terminate_backend`), as a failover, a
 * connection-pooler restart or an operator's cleanup does. Other tests' databases on the shared server are untouched.
 */
async function terminateEveryConnection(databaseUrl: string): Promise<number> {
  const name = new URL(databaseUrl).pathname.slice(1);
  const admin = new pg.Client({ connectionString: testServerUrl() });
  await admin.connect();
  try {
    const result = await admin.query(
      'SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
      [name],
    );
    return result.rows.filter((row: { ended: boolean }) => row.ended).length;
  } finally {
    await admin.end();
  }
}

describe('fault b: every PostgreSQL connection terminated mid-turn', () => {
  it('33.6: pg_terminate_backend of every connection of both instances, three times at different points of the turns in flight: every invariant holds', async () => {
    const created = await createTestDatabase();
    cleanups.push(created.drop);
    const ledger = new FaultLedger('b. pg_terminate_backend of every connection mid-turn');
    const model = await startModel([answer(100)]);
    const configYaml = 'session:\n  auto_title: false\n  lease_ttl: 3\n';
    const a = await startInstance('A', { model, database: created.url, configYaml });
    const b = await startInstance('B', { model, database: created.url, configYaml });
    const store = postgresReader(created.url);
    const watcher = watchStatuses(store, ledger);
    const sessions = Array.from({ length: 4 }, () => ledger.newSessionId());
    let connections = 0;

    // Each round: four turns whose answers take about 3 s, on both instances and every surface; the connections are
    // ended as the model starts, in the middle of its answer, and as the turns write their ends.
    for (const pointMs of [300, 1_500, 2_900]) {
      const calls = model.calls.length;
      model.push(answer(1_500), answer(1_500), answer(1_500), answer(1_500), answer(100));
      const turns: Promise<TurnRecord>[] = [
        ledger.run(a, sessions[0] as string, { readFrom: b }).done,
        ledger.run(b, sessions[1] as string, { readFrom: a }).done,
        ledger.chat(a, sessions[2] as string),
        ledger.chat(b, sessions[3] as string, { stream: true }),
      ];
      await modelCalls(model, calls + 4);
      await sleep(pointMs);
      connections += await terminateEveryConnection(created.url);
      ledger.faults += 1;
      await Promise.all(turns);
    }

    await watcher.stop();
    const report = await checkInvariants({ ledger, store, instances: [a, b] });
    console.log(`[faults] ${ledger.scenario}: ${connections} connections terminated in ${ledger.faults} rounds`);
    expectInvariantsHold(report, ledger);
  }, 300_000);
});
