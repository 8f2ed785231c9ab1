import { afterEach, describe, it } from 'vitest';
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

/** The outage's length (issue 33 item 6): longer than every background duty's interval and many lease lifetimes. */
const OUTAGE_MS = 90_000;

describe('fault a: PostgreSQL down for 90 s under two instances', () => {
  it('33.6: instance A busy with turns and B idle when the database stops for 90 s and comes back: every invariant holds', async () => {
    // A server of this test's own, so stopping it disturbs no other test.
    const database = await startEmbeddedPostgres();
    cleanups.push(() => database.dispose());
    const ledger = new FaultLedger('a. PostgreSQL down 90 s, idle and busy instances');
    const model = await startModel([answer(100)]);
    // A 3 s lease: the runs heartbeat and the lease refresh tick every second, so the outage spans many of each.
    const configYaml = 'session:\n  auto_title: false\n  lease_ttl: 3\n';
    const a = await startInstance('A', { model, database: database.url, configYaml });
    const b = await startInstance('B', { model, database: database.url, configYaml });
    const store = postgresReader(database.url);
    const watcher = watchStatuses(store, ledger);

    // Sessions with turns before the outage, on both instances and both surfaces.
    const earlier = Array.from({ length: 4 }, () => ledger.newSessionId());
    await Promise.all([
      ledger.chat(a, earlier[0] as string),
      ledger.chat(b, earlier[1] as string, { stream: true }),
      ledger.run(a, earlier[2] as string, { readFrom: b }).done,
      ledger.run(b, earlier[3] as string, { readFrom: a }).done,
    ]);

    // A is busy when the database stops: four turns whose model answers take about 8 s, two of them runs read live
    // on B (their events cross through the database). B has no turn of its own.
    const calls = model.calls.length;
    model.push(answer(4_000), answer(4_000), answer(4_000), answer(4_000), answer(100));
    const busy: Promise<TurnRecord>[] = [
      ledger.run(a, ledger.newSessionId(), { readFrom: b }).done,
      ledger.run(a, ledger.newSessionId(), { readFrom: b }).done,
      ledger.chat(a, ledger.newSessionId()),
      ledger.chat(a, ledger.newSessionId(), { stream: true }),
    ];
    await modelCalls(model, calls + 4);
    await sleep(1_000);
    await database.stop();
    ledger.faults += 1;
    const stoppedAt = Date.now();

    // New turns during the outage, on both instances, now and then; they are refused (503), never acknowledged.
    while (Date.now() - stoppedAt < OUTAGE_MS - 15_000) {
      await sleep(15_000);
      await Promise.all([
        ledger.chat(a, earlier[0] as string),
        ledger.run(b, earlier[2] as string).done,
        ledger.chat(b, ledger.newSessionId()),
      ]);
    }
    await sleep(Math.max(0, OUTAGE_MS - (Date.now() - stoppedAt)));
    await database.start();
    for (const instance of [a, b])
      await until(
        async () => ((await fetch(`${instance.server.url}/health/ready`)).status === 200 ? true : null),
        60_000,
        `${instance.label} ready`,
      );
    await Promise.all(busy);

    await watcher.stop();
    const report = await checkInvariants({ ledger, store, instances: [a, b] });
    expectInvariantsHold(report, ledger);
  }, 300_000);
});
