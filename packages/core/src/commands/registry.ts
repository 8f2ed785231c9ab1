import type { CommandDef, CommandRegistry, CommandResult } from '../api/types.js';
import { parseCommandLine } from '../command-line.js';
import { HermesError } from '../errors.js';
import { formatUsd } from '../providers/index.js';
import { builtinCommands } from './builtin.js';
import { helpText } from './help.js';

export { helpText, parseCommandLine };

/** The slash-command registry (spec/core.md §16), with the fifteen built-in commands. */
export function createCommandRegistry(): CommandRegistry {
  const commands = new Map<string, CommandDef>();
  const lookup = new Map<string, CommandDef>();
  const registry: CommandRegistry = {
    list: () => [...commands.values()],
    register(definition) {
      const names = [definition.name, ...(definition.aliases ?? [])].map((name) => name.toLowerCase());
      for (const name of names)
        if (lookup.has(name)) throw new HermesError('invalid_input', `The command /${name} is already registered.`);
      commands.set(definition.name.toLowerCase(), definition);
      for (const name of names) lookup.set(name, definition);
    },
    parse: parseCommandLine,
    find: (name) => lookup.get(name.toLowerCase()),
    async execute(agent, line) {
      const parsed = parseCommandLine(line);
      if (!parsed) return { kind: 'error', text: 'Not a command: a command starts with /.' };
      const definition = lookup.get(parsed.name);
      if (!definition) return { kind: 'error', text: `Unknown command /${parsed.name}. Type /help for the list.` };
      const allowed =
        typeof definition.allowedWhileBusy === 'function'
          ? definition.allowedWhileBusy(parsed.args)
          : definition.allowedWhileBusy;
      if (agent.busy && !allowed) {
        return {
          kind: 'error',
          text: `/${definition.name} is not available while a turn is running.`,
          data: { code: 'session_busy' },
        };
      }
      if (!definition.handler) return { kind: 'ui', ui: { name: definition.name, args: parsed.args } };
      try {
        return await definition.handler({ agent, host: agent.host }, parsed.args);
      } catch (error) {
        const code = HermesError.isInstance(error) ? error.code : 'command_failed';
        return { kind: 'error', text: error instanceof Error ? error.message : String(error), data: { code } };
      }
    },
  };
  for (const definition of builtinCommands(() => registry)) registry.register(definition);
  return registry;
}

/** Formats a cost for command output. */
export function costText(value: number): string {
  return formatUsd(value);
}

export type { CommandResult };
