import type { AvailableCommand } from '@agentclientprotocol/sdk/unstable';
import type { Agent, AgentHost, CommandResult } from '@hermes/core';
import { firstLine } from './request-errors.js';

/** What a command implementation may use (one session on one connection). */
export interface AcpCommandContext {
  agent: Agent;
  host: AgentHost;
  /** The CLI version (`agentInfo.version`). */
  version: string;
  /** Names of the MCP servers the client supplied for this session. */
  clientMcpServers: readonly string[];
  /** The commands advertised to this session, in order. */
  commands: readonly AcpCommand[];
}

/** What a command answers: Markdown text for one `agent_message_chunk`, and the extra updates it needs. */
export interface AcpCommandOutcome {
  text: string;
  /** Send a `usage_update` from the Agent's snapshot after the text (compaction, reset). */
  usageUpdate?: boolean;
}

/**
 * One slash command advertised in `available_commands_update` (spec/acp.md §6.3, §8.5).
 * A command either runs the core registry's command `core` or its own `run`.
 */
export interface AcpCommand {
  /** Name without `/`, lower case. */
  name: string;
  /** Other names typed in a prompt that run this command (not advertised). */
  aliases?: readonly string[];
  /** Advertised description; defaults to the core command's description. */
  description?: string;
  /** `input.hint` for commands that take an argument. */
  hint?: string;
  /** The core registry command to execute with the typed arguments. */
  core?: string;
  /** Runs on receipt instead of waiting behind the session's running prompt (for example `/steer`). */
  immediate?: boolean;
  /** Implementation owned by protocol-acp. */
  run?(context: AcpCommandContext, args: string): Promise<AcpCommandOutcome>;
}

/** The commands of one connection: built-ins first, then those registered later (skills). */
export interface AcpCommandRegistry {
  list(): readonly AcpCommand[];
  /** By name or alias, case-insensitive. */
  find(name: string): AcpCommand | undefined;
  /** Adds or replaces a command (by name); later sessions and `refresh` advertise it. */
  register(command: AcpCommand): void;
  /** The `availableCommands` of an `available_commands_update`. */
  available(host: AgentHost): AvailableCommand[];
  /** Calls `listener` after every `register`; returns the unsubscribe function. */
  onChange(listener: () => void): () => void;
}

function describe(command: AcpCommand, host: AgentHost): string {
  if (command.description) return command.description;
  const definition = host.commands.find(command.core ?? command.name);
  return definition?.description || command.name;
}

function coreText(result: CommandResult): string {
  return result.text ?? (result.data !== undefined ? JSON.stringify(result.data) : '');
}

/** Runs a core registry command with the typed arguments and returns its text. */
async function runCore(context: AcpCommandContext, name: string, args: string): Promise<string> {
  try {
    const result = await context.host.commands.execute(context.agent, args ? `/${name} ${args}` : `/${name}`);
    return coreText(result);
  } catch (error) {
    return `Error: ${firstLine(error instanceof Error ? error.message : String(error))}`;
  }
}

function formatCount(value: number): string {
  return value.toLocaleString('en-US');
}

/** `/context`: message counts by role, model and context use against the compaction threshold. */
async function contextText(context: AcpCommandContext): Promise<string> {
  const { agent } = context;
  const rows = await agent.history();
  const roles = { user: 0, assistant: 0, tool: 0 };
  for (const row of rows) roles[row.role]++;
  const usage = agent.usage().context;
  const used = usage.lastPromptTokens || usage.estimatedTokens;
  const window = usage.contextWindow;
  const thresholdTokens = Math.round(window * usage.threshold);
  const percent = window > 0 ? ((used / window) * 100).toFixed(1) : '0.0';
  const lines = [
    rows.length > 0 ? `Conversation: ${rows.length} messages` : 'Conversation is empty (no messages yet).',
    `  user: ${roles.user}, assistant: ${roles.assistant}, tool: ${roles.tool}`,
    `Model: ${agent.model?.spec ?? '(none configured)'}`,
    `Context usage: ~${formatCount(used)} / ${formatCount(window)} tokens (${percent}%)`,
  ];
  if (!context.host.config.compression.enabled) {
    lines.push('Automatic compaction is off; /compact still compacts on request.');
  } else if (used >= thresholdTokens) {
    lines.push(`Compaction: due now (threshold ~${formatCount(thresholdTokens)} tokens). Run /compact.`);
  } else {
    lines.push(
      `Compaction: ~${formatCount(thresholdTokens - used)} tokens until the threshold (~${formatCount(thresholdTokens)} tokens).`,
    );
  }
  return lines.join('\n');
}

/** `/reset`: archives every active row of the session; the session id stays the same. */
async function resetHistory(context: AcpCommandContext): Promise<AcpCommandOutcome> {
  const { agent } = context;
  if (agent.busy) return { text: '/reset is not available while a turn is running.' };
  const rows = await agent.history();
  const first = rows[0];
  if (!first) return { text: 'The conversation is already empty.' };
  await agent.rewind({ beforeRowId: first.rowId });
  return { text: `Conversation history cleared (${rows.length} messages).`, usageUpdate: true };
}

function helpText(context: AcpCommandContext): string {
  const lines = context.commands.map((command) => {
    const hint = command.hint ? ` ${command.hint}` : '';
    return `- \`/${command.name}${hint}\`: ${describe(command, context.host)}`;
  });
  lines.push('', 'Other text starting with `/` is sent to the model unchanged.');
  return lines.join('\n');
}

/** The built-in commands, in the advertised order (spec/acp.md §6.3, issue 16.3). */
export function builtinAcpCommands(): AcpCommand[] {
  return [
    { name: 'help', description: 'List the commands.', run: async (context) => ({ text: helpText(context) }) },
    { name: 'model', hint: 'provider:model', core: 'model' },
    {
      name: 'compress',
      hint: 'focus',
      core: 'compress',
      run: async (context, args) => ({ text: await runCore(context, 'compress', args), usageUpdate: true }),
    },
    { name: 'title', hint: 'title', core: 'title' },
    { name: 'usage', core: 'usage' },
    { name: 'status', core: 'status' },
    {
      name: 'tools',
      hint: 'list | enable <name> | disable <name>',
      core: 'tools',
      run: async (context, args) => {
        let text = await runCore(context, 'tools', args);
        if (context.clientMcpServers.length > 0) {
          const lines = context.host.mcp
            .status()
            .filter((status) => context.clientMcpServers.includes(status.name))
            .map(
              (status) =>
                `- ${status.name} (${status.transport}): ${status.state}${status.error ? ` (${status.error})` : ''}`,
            );
          text = `${text}\n\nMCP servers from the client:\n${lines.join('\n')}`;
        }
        return { text };
      },
    },
    {
      name: 'compact',
      hint: 'focus',
      description: 'Summarize older messages to free context (same as /compress).',
      run: async (context, args) => ({ text: await runCore(context, 'compress', args), usageUpdate: true }),
    },
    {
      name: 'context',
      description: 'Show message counts, the model and context use against the compaction threshold.',
      run: async (context) => ({ text: await contextText(context) }),
    },
    {
      name: 'reset',
      description: 'Clear the conversation history of this session (the session stays open).',
      run: resetHistory,
    },
    {
      name: 'steer',
      hint: 'guidance for the running turn',
      core: 'steer',
      immediate: true,
    },
    {
      name: 'permissions',
      hint: 'list | revoke <number> | allow-class <pattern_key>',
      core: 'permissions',
    },
    {
      name: 'version',
      description: 'Show the Hermes version.',
      run: async (context) => ({ text: `Hermes Agent ${context.version}` }),
    },
  ];
}

/** Runs one command and returns its outcome; never throws. */
export async function runAcpCommand(
  command: AcpCommand,
  context: AcpCommandContext,
  args: string,
): Promise<AcpCommandOutcome> {
  try {
    if (command.run) return await command.run(context, args);
    return { text: await runCore(context, command.core ?? command.name, args) };
  } catch (error) {
    return { text: `Error: ${firstLine(error instanceof Error ? error.message : String(error))}` };
  }
}

/** A registry holding the built-in commands. */
export function createAcpCommandRegistry(initial: readonly AcpCommand[] = builtinAcpCommands()): AcpCommandRegistry {
  const commands: AcpCommand[] = [];
  const listeners = new Set<() => void>();
  const registry: AcpCommandRegistry = {
    list: () => commands,
    find(name) {
      const lower = name.toLowerCase();
      return commands.find((command) => command.name === lower || command.aliases?.includes(lower));
    },
    register(command) {
      const index = commands.findIndex((existing) => existing.name === command.name);
      if (index >= 0) commands[index] = command;
      else commands.push(command);
      for (const listener of [...listeners]) listener();
    },
    available(host) {
      return commands.map((command) => ({
        name: command.name,
        description: describe(command, host),
        ...(command.hint ? { input: { hint: command.hint } } : {}),
      }));
    },
    onChange(listener) {
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
      };
    },
  };
  for (const command of initial) registry.register(command);
  return registry;
}
