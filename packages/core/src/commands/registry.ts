import { HermesError } from '../errors.js';
import { formatUsd } from '../providers/index.js';
import type { JsonValue } from '../types.js';
import { builtinCommands } from './builtin.js';
import type { CommandDef, CommandRegistry, CommandResult } from './types.js';

/** Parses `/name args`: the name runs to the first whitespace; args are the trimmed rest. */
export function parseCommandLine(line: string): { name: string; args: string } | null {
  const trimmed = line.trimStart();
  if (!trimmed.startsWith('/')) return null;
  const match = /^\/(\S+)(?:\s+([\s\S]*))?$/.exec(trimmed);
  if (!match?.[1]) return null;
  return { name: match[1].toLowerCase(), args: (match[2] ?? '').trim() };
}

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

/** Renders `/help` from the registry. */
export function helpText(registry: CommandRegistry): { text: string; data: JsonValue } {
  const lines = registry.list().map((command) => {
    const aliases = command.aliases?.length ? ` (alias ${command.aliases.map((alias) => `/${alias}`).join(', ')})` : '';
    const hint = command.argsHint ? ` ${command.argsHint}` : '';
    return `- \`/${command.name}${hint}\`${aliases}: ${command.description}`;
  });
  const data = registry.list().map((command) => ({
    name: command.name,
    aliases: command.aliases ?? [],
    argsHint: command.argsHint ?? '',
    description: command.description,
    scope: command.scope,
  }));
  return { text: `Commands:\n${lines.join('\n')}`, data };
}

/** Formats a cost for command output. */
export function costText(value: number): string {
  return formatUsd(value);
}

export type { CommandResult };
