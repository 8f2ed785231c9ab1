import type { AgentHost } from '../agent/host.js';
import type { Agent, TurnRun } from '../agent/types.js';
import type { JsonValue } from '../types.js';

/** What a command returns (spec/core.md §16). */
export interface CommandResult {
  kind: 'text' | 'error' | 'session' | 'turn' | 'ui';
  /** Markdown to show. */
  text?: string;
  /** 'session': the session the client should switch to. */
  agent?: Agent;
  /** 'turn': a turn the command started. */
  turn?: TurnRun;
  /** Structured payload (usage numbers, session lists…). */
  data?: JsonValue;
  /** 'ui': for the front end to handle. */
  ui?: { name: string; args: string };
}

/** A slash command. */
export interface CommandDef {
  name: string;
  aliases?: string[];
  description: string;
  argsHint?: string;
  scope: 'core' | 'ui';
  allowedWhileBusy: boolean | ((args: string) => boolean);
  handler?: (context: { agent: Agent; host: AgentHost }, args: string) => Promise<CommandResult>;
}

/** The registry every surface shares. */
export interface CommandRegistry {
  list(): CommandDef[];
  register(definition: CommandDef): void;
  parse(line: string): { name: string; args: string } | null;
  find(name: string): CommandDef | undefined;
  execute(agent: Agent, line: string): Promise<CommandResult>;
}
