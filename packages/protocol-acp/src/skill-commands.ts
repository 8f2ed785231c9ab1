import type { AgentHost, TurnInput } from '@hermes/core';
import type { ConvertedPrompt } from './prompt-content.js';

/** The installed skills of a working directory as ACP available commands (issue 16.2). */
export async function skillCommands(
  host: AgentHost,
  cwd: string,
): Promise<{ name: string; description: string; input: { hint: string } }[]> {
  try {
    const skills = await host.skills.list({ cwd });
    return skills.map((skill) => ({
      name: skill.command,
      description: skill.description || `Run the ${skill.name} skill`,
      input: { hint: 'request' },
    }));
  } catch {
    // Skills never keep a session from opening; the registry already logs what it skipped.
    return [];
  }
}

/**
 * A prompt whose first block is `/<skill> <request>` becomes a turn on the expanded skill
 * message (the same message the gateway builds); the stored row keeps the typed text as its
 * display text and the client's blocks for replay. Null when the prompt is not a skill command.
 */
export async function skillTurnInput(
  host: AgentHost,
  cwd: string,
  typed: string,
  converted: ConvertedPrompt,
): Promise<TurnInput | null> {
  if (!typed.trimStart().startsWith('/')) return null;
  // Skills never stop a prompt: if they cannot be read, the text goes to the model as typed.
  const invocation = await host.skills.expand(typed.trim(), { cwd }).catch(() => null);
  if (!invocation) return null;
  const displayMetadata = { ...(converted.persistAs?.displayMetadata ?? {}), display_text: invocation.display };
  const content = [{ type: 'text' as const, text: invocation.message }, ...converted.content.slice(1)];
  return converted.persistAs
    ? { content, persistAs: { text: invocation.message, displayMetadata } }
    : { content, persistAs: { displayMetadata } };
}
