/**
 * The permanent command allowlist, `command_allowlist` in config.yaml (spec/core.md §12.3–12.4 as
 * changed by docs/adr/0034).
 *
 * An `always` answer allows exactly the command that was approved (`- command: rm -rf ./build`),
 * never its whole pattern class. A whole class is allowed only when the user writes it so
 * (`- pattern: recursive_delete`, or `/permissions allow-class recursive_delete`). A bare key
 * (`- recursive_delete`), which the old `always` answer wrote without saying so, is read but no
 * longer honoured: it is listed as legacy so that the user can see and revoke it.
 */

import {
  alwaysScopeOf,
  type CommandAllowlistEntry,
  type RawCommandAllowlistEntry,
} from '../command-allowlist-entry.js';
import { PATTERN_KEYS } from './detect.js';

export {
  alwaysScopeOf,
  type CommandAllowlistEntry,
  type RawCommandAllowlistEntry,
  sameAllowlistEntry,
} from '../command-allowlist-entry.js';

/** One entry as listed to a user. */
export interface CommandAllowlistListing {
  /** The entry as stored (a bare key is listed as `{ pattern }` with `legacy: true`). */
  entry: CommandAllowlistEntry;
  /** True for a bare key written by an older version: kept in the file but not honoured. */
  legacy: boolean;
  /** "always allow `rm -rf ./build`", "always allow every recursive delete (whole class)", … */
  description: string;
}

/** What `always` covers for this command, as every surface shows it. */
export function describeAlways(command: string): string {
  return `always allow \`${alwaysScopeOf(command)}\``;
}

function isPatternKey(key: string): boolean {
  return (PATTERN_KEYS as readonly string[]).includes(key);
}

/** Lists the entries of `command_allowlist` in file order. */
export function listCommandAllowlist(raw: readonly RawCommandAllowlistEntry[]): CommandAllowlistListing[] {
  return raw.map((item) => {
    if (typeof item === 'string') {
      return {
        entry: { pattern: item },
        legacy: true,
        description: `not honoured: \`${item}\` was written by an older "always" answer; write \`pattern: ${item}\` to allow the whole class`,
      };
    }
    if ('command' in item)
      return { entry: { command: item.command }, legacy: false, description: describeAlways(item.command) };
    const known = isPatternKey(item.pattern) ? '' : ' (not a known pattern class)';
    return {
      entry: { pattern: item.pattern },
      legacy: false,
      description: `always allow every command of the class \`${item.pattern}\`${known}`,
    };
  });
}

/**
 * True when the allowlist lets the command run without asking: an entry for exactly this command,
 * or every one of its pattern classes allowed explicitly. Bare legacy keys count for nothing.
 */
export function allowlistAllows(
  raw: readonly RawCommandAllowlistEntry[],
  command: string,
  patternKeys: readonly string[],
): boolean {
  const scope = alwaysScopeOf(command);
  const classes = new Set<string>();
  for (const item of raw) {
    if (typeof item === 'string') continue;
    if ('command' in item) {
      if (alwaysScopeOf(item.command) === scope) return true;
    } else {
      classes.add(item.pattern);
    }
  }
  return patternKeys.length > 0 && patternKeys.every((key) => classes.has(key));
}
