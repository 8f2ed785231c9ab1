/**
 * The shape of a `command_allowlist` entry (docs/adr/0034), below both the approvals that read it and the config
 * writer that stores it, which sit side by side in the settings layer and may not import each other.
 */

/** One entry of `command_allowlist`: an exact command, or an explicitly allowed pattern class. */
export type CommandAllowlistEntry = { command: string } | { pattern: string };

/** The raw form in config.yaml: an entry, or a bare pattern key (legacy). */
export type RawCommandAllowlistEntry = string | CommandAllowlistEntry;

/** The text an always-approval is stored with: the command without surrounding blank space. */
export function alwaysScopeOf(command: string): string {
  return command.trim();
}

/** True when two entries are the same (same command text, or same class). */
export function sameAllowlistEntry(left: RawCommandAllowlistEntry, right: CommandAllowlistEntry): boolean {
  if (typeof left === 'string') return 'pattern' in right && left === right.pattern;
  if ('command' in left) return 'command' in right && alwaysScopeOf(left.command) === alwaysScopeOf(right.command);
  return 'pattern' in right && left.pattern === right.pattern;
}
