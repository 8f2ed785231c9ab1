import { afterEach, describe, it } from 'vitest';
// The global setup's `ProvidedContext` declaration types `inject('hermesTestDatabaseUrl')`.
import type {} from '../../../../packages/core/test/support/postgres-global-setup.js';
import { runCleanups } from '../support/server-process.js';
import { KILLS, killNineScenario } from './support/kill-nine.js';

afterEach(runCleanups);

describe('fault e: kill -9 mid-turn on PostgreSQL', () => {
  it(`33.6: ${KILLS} kills of one of two instances at random points, restarted each time: every acknowledged turn durable, no gap without a marker, every session usable at once`, async () => {
    await killNineScenario('postgres');
  }, 300_000);
});
