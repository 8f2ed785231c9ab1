import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres } from './embedded-postgres.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A PostgreSQL server URL whose user may create databases (see `test/support/postgres.ts`). */
    hermesTestDatabaseUrl: string;
  }
}

/**
 * Starts one PostgreSQL server for the whole vitest run (see `embedded-postgres.ts`), unless
 * `HERMES_TEST_DATABASE_URL` names an existing one. Tests read the URL with
 * `inject('hermesTestDatabaseUrl')` and create a database of their own.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const existing = process.env.HERMES_TEST_DATABASE_URL?.trim();
  if (existing) {
    project.provide('hermesTestDatabaseUrl', existing);
    return async () => {};
  }
  const server = await startEmbeddedPostgres();
  project.provide('hermesTestDatabaseUrl', server.url);
  return () => server.dispose();
}
