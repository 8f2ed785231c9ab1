import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmbeddedPostgres } from '../../../../packages/core/test/support/embedded-postgres.js';
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
  until,
  watchStatuses,
} from './support/harness.js';
import { checkInvariants, expectInvariantsHold } from './support/invariants.js';

afterEach(runCleanups);

/** How many connections of the server are listening for run events (each instance's run bus keeps one). */
async function listeningConnections(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3_000 });
  client.on('error', () => {});
  await client.connect();
  try {
    const result = await client.query(
      "SELECT count(*)::int AS listening FROM pg_stat_activity WHERE query LIKE 'LISTEN %' AND pid <> pg_backend_pid()",
    );
    return (result.rows[0] as { listening: number }).listening;
  } finally {
    await client.end().catch(() => {});
  }
}

describe('fault c: PostgreSQL restarted while the instances listen', () => {
  it('33.6: a restart mid-turn: both instances listen again and deliver run events to each other after it; every invariant holds', async () => {
    // A server of this test's own, so restarting it disturbs no other test.
    const database = await startEmbeddedPostgres();
    cleanups.push(() => database.dispose());
    const ledger = new FaultLedger('c. PostgreSQL restart while LISTEN is open');
    const model = await startModel([answer(100)]);
    // A lease that outlasts the restart even on a loaded machine: here the owners stay the owners. An owner cut off
    // from the database past its lease is scenario f's.
    const configYaml = 'session:\n  auto_title: false\n  lease_ttl: 15\n';
    const a = await startInstance('A', { model, database: database.url, configYaml });
    const b = await startInstance('B', { model, database: database.url, configYaml });
    const store = postgresReader(database.url);
    const watcher = watchStatuses(store, ledger);

    // Before: a run on each instance streamed live through the other.
    const before = await Promise.all([
      ledger.run(a, ledger.newSessionId(), { readFrom: b }).done,
      ledger.run(b, ledger.newSessionId(), { readFrom: a }).done,
    ]);
    expect(before.map((turn) => turn.outcome)).toEqual(['run.completed', 'run.completed']);
    expect(await listeningConnections(database.url)).toBe(2);

    // The restart lands while a run on each instance streams (answers of about 5 s) to a reader on the other.
    const calls = model.calls.length;
    model.push(answer(2_500), answer(2_500), answer(100));
    const during: Promise<TurnRecord>[] = [
      ledger.run(a, ledger.newSessionId(), { readFrom: b }).done,
      ledger.run(b, ledger.newSessionId(), { readFrom: a }).done,
    ];
    await modelCalls(model, calls + 2);
    await sleep(500);
    await database.stop();
    ledger.faults += 1;
    await sleep(2_000);
    await database.start();
    // Each instance's run bus listens again on its own.
    await until(async () => ((await listeningConnections(database.url)) === 2 ? true : null), 60_000, 'LISTEN again');
    await Promise.all(during);

    // After: run events cross between the instances again, both ways.
    const after = await Promise.all([
      ledger.run(a, ledger.newSessionId(), { readFrom: b }).done,
      ledger.run(b, ledger.newSessionId(), { readFrom: a }).done,
    ]);
    expect(after.map((turn) => turn.outcome)).toEqual(['run.completed', 'run.completed']);

    await watcher.stop();
    const report = await checkInvariants({ ledger, store, instances: [a, b] });
    expectInvariantsHold(report, ledger);
  }, 300_000);
});
