import { defineConfig } from 'drizzle-kit';

/**
 * drizzle-kit configuration for the PostgreSQL store's migrations (`pnpm db:generate:pg`). The SQL
 * it writes under `drizzle/pg/` ships in the package and runs when a PostgreSQL store opens.
 */
export default defineConfig({
  dialect: 'postgresql',
  schema: './src/store/pg-schema.ts',
  out: './drizzle/pg',
});
