import { createTestDatabase } from '../../../../../packages/core/test/support/postgres.js';
import { cleanups } from '../../support/server-process.js';
import {
  answer,
  FaultLedger,
  type Instance,
  killHard,
  postgresReader,
  restart,
  sleep,
  sqliteReader,
  startInstance,
  startModel,
  type TurnRecord,
  watchStatuses,
} from './harness.js';
import { checkInvariants, expectInvariantsHold } from './invariants.js';
import { faultSeed, seededRandom } from './random.js';

/** How many times an instance is killed, each at a random point of the turns in flight. */
export const KILLS = 20;

/**
 * Scenario e: `kill -9` at {@link KILLS} random points while turns run, the killed instance started again each time.
 * On SQLite one instance; on PostgreSQL two, one of them (chosen at random) killed each time. Each round sends one turn
 * on each session of a small pool (chat completions plain and streamed, and runs read live from a random instance),
 * waits a random time within the turns, kills, starts the instance again and lets the round's turns end.
 */
export async function killNineScenario(backend: 'sqlite' | 'postgres'): Promise<void> {
  const seed = faultSeed();
  const random = seededRandom(seed);
  const pick = <T>(items: T[]): T => items[Math.floor(random() * items.length)] as T;
  const ledger = new FaultLedger(
    `e. kill -9 ×${KILLS} on ${backend === 'sqlite' ? 'SQLite' : 'PostgreSQL'} (seed ${seed})`,
  );
  // A turn streams for about 0.6 s; the lease is short so that nothing waits long on one a dead process held.
  const model = await startModel([answer(300)]);
  const configYaml = 'session:\n  auto_title: false\n  lease_ttl: 5\n';
  let database: string | null = null;
  if (backend === 'postgres') {
    const created = await createTestDatabase();
    cleanups.push(created.drop);
    database = created.url;
  }
  const instances: Instance[] = [await startInstance('A', { model, database, configYaml })];
  if (backend === 'postgres') instances.push(await startInstance('B', { model, database, configYaml }));
  const store = database
    ? postgresReader(database)
    : sqliteReader((instances[0] as Instance).env.HERMES_HOME as string);
  const watcher = watchStatuses(store, ledger);
  const sessions = Array.from({ length: 6 }, () => ledger.newSessionId());

  for (let round = 0; round < KILLS; round += 1) {
    const turns: Promise<TurnRecord>[] = [];
    for (const sessionId of sessions) {
      const instance = pick(instances);
      const surface = pick(['chat', 'chat-stream', 'run'] as const);
      if (surface === 'run') turns.push(ledger.run(instance, sessionId, { readFrom: pick(instances) }).done);
      else turns.push(ledger.chat(instance, sessionId, { stream: surface === 'chat-stream' }));
      await sleep(random() * 100);
    }
    // A random point within the turns: before the model answers, while it streams, or as the turns end.
    await sleep(random() * 1_500);
    const victim = pick(instances);
    await killHard(victim);
    ledger.faults += 1;
    // Started again at once, as a supervisor would: its new life settles what its earlier one left in flight.
    await restart(victim);
    await Promise.all(turns);
  }

  await watcher.stop();
  const report = await checkInvariants({ ledger, store, instances });
  expectInvariantsHold(report, ledger);
}
