import type { CommandAllowlistEntry, CommandAllowlistListing } from '@hermes/core';
import { ErrorCode } from '../wire/index.js';
import { fail, type MethodContext, stringParam } from './context.js';

/** One allowlist entry on the wire: `command` or `pattern`, whether it is legacy, and its description. */
function wireEntry(listing: CommandAllowlistListing, redact: (text: string) => string): Record<string, unknown> {
  const entry =
    'command' in listing.entry ? { command: redact(listing.entry.command) } : { pattern: listing.entry.pattern };
  return { ...entry, legacy: listing.legacy, description: redact(listing.description) };
}

/** `permissions.list`: the commands approved with "always" and the classes allowed explicitly (ADR 0034). */
export function permissionsList(context: MethodContext): Record<string, unknown> {
  const redact = (text: string) => context.gateway.redact(text);
  return { entries: context.gateway.host.commandAllowlist().map((listing) => wireEntry(listing, redact)) };
}

/** `permissions.revoke`: removes one entry, named by `command` or `pattern`; `removed` counts what went. */
export async function permissionsRevoke(context: MethodContext): Promise<Record<string, unknown>> {
  const command = stringParam(context.params, 'command');
  const pattern = stringParam(context.params, 'pattern');
  if ((command === undefined) === (pattern === undefined))
    fail(ErrorCode.invalidValue, 'give exactly one of command or pattern');
  const entry: CommandAllowlistEntry = command !== undefined ? { command } : { pattern: pattern as string };
  let removed: number;
  try {
    removed = await context.gateway.host.revokeCommands(entry);
  } catch (error) {
    fail(ErrorCode.invalidValue, `not revoked: ${error instanceof Error ? error.message : String(error)}`);
  }
  return { removed };
}
