import {
  type AgentHost,
  type AgentHostOptions,
  createAgentHost,
  createDemoProvider,
  createStderrLogger,
  HermesError,
} from '@hermes/core';

/**
 * Creates the host every `hermes` subcommand runs on: HERMES_HOME and the environment from the
 * process, logs on stderr (stdout belongs to the protocol in stdio modes), and the offline `demo`
 * provider, which the chat and `-q` use when no model is configured.
 */
export async function createCliHost(options: AgentHostOptions = {}): Promise<AgentHost> {
  const level = (process.env.HERMES_LOG_LEVEL as 'debug' | 'info' | 'warn' | 'error' | undefined) ?? 'warn';
  return createAgentHost({
    logger: createStderrLogger({ level }),
    ...options,
    providers: [createDemoProvider(), ...(options.providers ?? [])],
  });
}

/** One clear line for errors a newcomer meets, instead of a stack trace. */
export function describeStartupError(error: unknown): string {
  if (HermesError.isInstance(error)) return `hermes: ${error.message}`;
  const code = (error as NodeJS.ErrnoException | null)?.code;
  if (code === 'EACCES' || code === 'EPERM' || code === 'EEXIST' || code === 'ENOTDIR' || code === 'EROFS') {
    return `hermes: cannot use ${(error as NodeJS.ErrnoException).path ?? 'HERMES_HOME'} (${code}). Set HERMES_HOME to a writable folder.`;
  }
  if (code === 'EADDRINUSE') return 'hermes: the port is already in use. Pick another with --port.';
  return `hermes: ${error instanceof Error ? error.message : String(error)}`;
}
