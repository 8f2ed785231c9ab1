import type { AgentHost, Skill, TurnInput } from '@hermes/core';
import type { ConvertedPrompt } from './prompt-content.js';

/** An ACP available command for a skill. */
export interface SkillCommand {
  name: string;
  description: string;
  input: { hint: string };
}

function asCommands(skills: readonly Skill[]): SkillCommand[] {
  return skills.map((skill) => ({
    name: skill.command,
    description: skill.description || `Run the ${skill.name} skill`,
    input: { hint: 'request' },
  }));
}

/** Starts reading the skills of a working directory, so they are ready when the session announces its commands. */
export function warmSkills(host: AgentHost, cwd: string): void {
  // Skills never keep a session from opening; the registry already logs what it skipped.
  void host.skills.snapshot({ cwd }).catch(() => undefined);
}

/** The skill commands of a working directory if already read (null otherwise); never waits on the disk. */
export function skillCommandsNow(host: AgentHost, cwd: string): SkillCommand[] | null {
  const snapshot = host.skills.peek({ cwd });
  return snapshot ? asCommands(snapshot.skills) : null;
}

/** The skill commands of a working directory, read from disk if needed; [] when they cannot be read. */
export async function skillCommands(host: AgentHost, cwd: string): Promise<SkillCommand[]> {
  return asCommands(await host.skills.list({ cwd }).catch(() => []));
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
