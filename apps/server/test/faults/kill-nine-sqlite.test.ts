import { afterEach, describe, it } from 'vitest';
import { runCleanups } from '../support/server-process.js';
import { KILLS, killNineScenario } from './support/kill-nine.js';

afterEach(runCleanups);

describe('fault e: kill -9 mid-turn on SQLite', () => {
  it(`33.6: ${KILLS} kills at random points, restarted each time: every acknowledged turn durable, every session usable at once`, async () => {
    await killNineScenario('sqlite');
  }, 300_000);
});
