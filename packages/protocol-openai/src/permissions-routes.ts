import { type CommandAllowlistEntry, redactSecrets } from '@hermes/core';
import type { Hono } from 'hono';
import { ApiError, invalidField } from './http-error.js';
import { readJsonBody, type ServerContext } from './server-context.js';

/**
 * `GET /v1/permissions` lists the permanent command allowlist (commands approved with "always",
 * classes allowed explicitly, legacy keys that are no longer honoured); `POST /v1/permissions/revoke`
 * with `{"command"}` or `{"pattern"}` removes one (ADR 0034). Behind the API key like every non-open route.
 */
export function registerPermissionRoutes(app: Hono, server: ServerContext): void {
  const { host } = server;

  app.get('/v1/permissions', (context) =>
    context.json({
      object: 'list',
      data: host.commandAllowlist().map((listing) => ({
        object: 'permission',
        ...('command' in listing.entry
          ? { command: redactSecrets(listing.entry.command) }
          : { pattern: listing.entry.pattern }),
        legacy: listing.legacy,
        description: redactSecrets(listing.description),
      })),
    }),
  );

  app.post('/v1/permissions/revoke', async (context) => {
    const body = await readJsonBody(context);
    const command = typeof body.command === 'string' ? body.command : undefined;
    const pattern = typeof body.pattern === 'string' ? body.pattern : undefined;
    if ((command === undefined) === (pattern === undefined))
      throw invalidField('command', 'give exactly one of `command` or `pattern` (a string)');
    const entry: CommandAllowlistEntry = command !== undefined ? { command } : { pattern: pattern as string };
    let removed: number;
    try {
      removed = await host.revokeCommands(entry);
    } catch (error) {
      throw new ApiError(500, 'config_write_failed', `not revoked: ${redactSecrets(String(error))}`);
    }
    return context.json({ object: 'permission.revoked', removed });
  });
}
