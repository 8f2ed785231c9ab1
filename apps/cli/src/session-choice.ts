import { type Agent, type AgentHost, BUILTIN_PROVIDER_IDS, DEMO_MODEL_SPEC, HermesError } from '@hermes/core';

/** How a command picks its session: resume one, continue the last CLI session, or start a new one. */
export interface SessionChoice {
  model?: string;
  resume?: string;
  continue?: boolean;
  cwd?: string;
  /**
   * Use the offline demo model when no model is configured (the interactive chat). `-q` does not:
   * a script must not get a scripted answer and exit 0.
   */
  demoWhenUnconfigured?: boolean;
}

/** True when no model is configured (config.yaml, HERMES_MODEL): the offline demo model answers. */
export function usesDemoModel(host: AgentHost, choice: SessionChoice = {}): boolean {
  return !choice.model && !host.config.model.default;
}

/** True when an agent talks to the offline demo model. */
export function isDemoAgent(agent: Agent): boolean {
  return agent.model?.spec === DEMO_MODEL_SPEC;
}

/**
 * Checks a `-m` model before any session starts, so a typo is one clear error at once instead of
 * a failed first turn: an unknown provider prefix lists the known providers.
 */
export function checkModelSpec(host: AgentHost, spec: string, options: { onlyUnknownProvider?: boolean } = {}): void {
  try {
    host.resolveModel(spec);
  } catch (error) {
    // The configured default is checked for a bad provider only: a missing key must not keep the
    // chat from opening, where /model can switch to another model.
    const unresolvable = HermesError.isInstance(error) && error.code === 'invalid_model_spec';
    if (!unresolvable) {
      if (options.onlyUnknownProvider) return;
      throw error;
    }
    const prefix = spec.includes(':') ? spec.slice(0, spec.indexOf(':')).trim() : '';
    if (prefix === '') {
      if (options.onlyUnknownProvider) return;
      throw error;
    }
    const known = [...new Set([...BUILTIN_PROVIDER_IDS, ...host.customProviders(), 'demo'])].sort();
    throw new HermesError(
      'unknown_provider',
      `unknown provider '${prefix}' in '${spec}'. Known providers: ${known.join(', ')}.`,
      { details: { provider: prefix } },
    );
  }
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
  if (choice.model) {
    checkModelSpec(host, choice.model);
    sessionOptions.model = choice.model;
  } else if (host.config.model.default) {
    checkModelSpec(host, host.config.model.default, { onlyUnknownProvider: true });
  } else if (choice.demoWhenUnconfigured && usesDemoModel(host)) sessionOptions.model = DEMO_MODEL_SPEC;
  return host.newSession(sessionOptions);
}
