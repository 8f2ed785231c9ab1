import type { CommandRegistry } from '../api/types.js';
import type { JsonValue } from '../types.js';

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
