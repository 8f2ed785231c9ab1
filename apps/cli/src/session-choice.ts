import type { Agent, AgentHost } from '@hermes/core';

/** How a command picks its session: resume one, continue the last CLI session, or start a new one. */
export interface SessionChoice {
  model?: string;
  resume?: string;
  continue?: boolean;
  cwd?: string;
}

/** Opens the session a `hermes` invocation asked for (shared by the one-shot mode and the chat). */
export async function openSession(host: AgentHost, choice: SessionChoice): Promise<Agent> {
  const cwd = choice.cwd ?? process.cwd();
  if (choice.resume) return host.resumeSession(choice.resume, { cwd });
  if (choice.continue) {
    const page = await host.store.listSessions({ sources: ['cli'], limit: 1 });
    const last = page.items[0];
    if (last) return host.resumeSession(last.id, { cwd });
  }
  const sessionOptions: Parameters<AgentHost['newSession']>[0] = { source: 'cli', cwd };
  if (choice.model) sessionOptions.model = choice.model;
  return host.newSession(sessionOptions);
}
