import { defineConfig } from 'drizzle-kit';

/**
 * drizzle-kit configuration for the session store's migrations (`pnpm db:generate`). The SQL it
 * writes under `drizzle/` ships in the package and runs at store open.
 */
export default defineConfig({
  dialect: 'sqlite',
  schema: './src/store/schema.ts',
  out: './drizzle',
});
