/**
 * What the gateway itself needs of the host's skills, below the method handlers: a session's turn
 * expands a typed skill command, and a session's info lists the skills of its working directory.
 */
import { type AgentHost, type SkillInvocation, skillsByCategory } from '@hermes/core';

/**
 * `prompt.submit` step 7 (§4.4): a typed `/<skill> <request>` becomes the expanded skill message,
 * stored with the typed text as its display text. Null when the text is not a skill command.
 */
export function expandSkillText(host: AgentHost, cwd: string, text: string): Promise<SkillInvocation | null> {
  if (!text.trimStart().startsWith('/')) return Promise.resolve(null);
  // Skills never stop a turn: if they cannot be read, the text goes to the model as typed.
  return host.skills.expand(text.trim(), { cwd }).catch(() => null);
}

/** Reads the skills of a working directory so {@link skillsInfo} can answer; never fails. */
export async function loadSkills(host: AgentHost, cwd: string): Promise<void> {
  await host.skills.snapshot({ cwd }).catch(() => undefined);
}

/** `SessionLiveInfo.skills` (§2.7): category → skill names, from the skills already read. */
export function skillsInfo(host: AgentHost, cwd: string): Record<string, string[]> {
  const snapshot = host.skills.peek({ cwd });
  if (!snapshot) {
    // Read them for the next info; this one reports none rather than wait.
    void loadSkills(host, cwd);
    return {};
  }
  return skillsByCategory(snapshot.skills);
}
