import type { LanguageModelV3, SharedV3ProviderOptions } from '@ai-sdk/provider';
import type { AgentHost } from '../api/types.js';
import type { FileCheckpointStore } from '../checkpoints/file-checkpoints.js';
import type { ProviderAdapter, ResolvedRoute } from '../providers/types.js';
import type { CommandRunner, FileAccess, ToolDefinition, ToolSettings } from '../tools/types.js';
import type { CostStatus, HostCallbacks, Usage } from '../types.js';
import type { HermesSettings } from './settings.js';

/**
 * What an Agent needs from its host. The host implements it; keeping it an interface lets the turn
 * loop be read (and tested) without the whole host.
 */
export interface HostContext extends AgentHost {
  readonly fetch: typeof globalThis.fetch;
  readonly callbacks: HostCallbacks;
  /** Current settings (replaced by reloadConfig; turns keep the object they started with). */
  settings(): HermesSettings;
  toolSettings(): ToolSettings;
  /** Resolves a spec to a route; throws HermesError invalid_model_spec / unknown_provider / missing_credentials. */
  resolveRoute(spec: string, currentProvider?: string | null): ResolvedRoute;
  /** The default model spec (§10.2 without the turn and session parts), or null. */
  defaultModelSpec(): string | null;
  createModel(route: ResolvedRoute): LanguageModelV3;
  providerAdapter(id: string): ProviderAdapter | undefined;
  providerOptions(route: ResolvedRoute, reasoningEffort: string | null): SharedV3ProviderOptions | undefined;
  /** Cost of one call on a route. */
  cost(route: ResolvedRoute, usage: Usage): { costUsd: number; status: CostStatus };
  /** Environment for subprocesses (spec/core.md §20). */
  subprocessEnv(): Record<string, string>;
  /** Appends keys to `command_allowlist` in config.yaml, keeping comments. */
  persistAllowlist(keys: string[]): Promise<void>;
  /** Saves a secret the user supplied to HERMES_HOME/.env and makes it visible at once (spec/core.md §24.7). */
  storeSecret(envVar: string, value: string): Promise<void>;
  /** Whether config.yaml can be written (the `always` choice is offered only then). */
  configWritable(): boolean;
  /** Writes `model.default` / `model.provider` to config.yaml. */
  persistDefaultModel(route: ResolvedRoute): Promise<void>;
  defaultFileAccess: FileAccess;
  defaultCommandRunner: CommandRunner;
  /** File checkpoints taken before each file-tool write (rollback). */
  checkpoints: FileCheckpointStore;
  /** Tools visible to a session (built-ins, extra tools, MCP tools of the host and the session). */
  toolsForSession(sessionId: string): ToolDefinition[];
  emitHostEvent(event: {
    type: 'session.created' | 'session.updated' | 'session.deleted';
    sessionId: string;
    fields?: string[];
  }): void;
  /** Creates an Agent on this host (children of delegate_task use it). */
  createAgent(
    options: import('./types.js').SessionOptions,
    extra?: Partial<import('./agent.js').AgentInit>,
  ): import('./agent.js').AgentCore;
  /** Holds new delegation children while `pauseDelegation(true)` is in force. */
  readonly spawnGate: import('./spawn-gate.js').SpawnGate;
  /** Called by an Agent when it closes, so the host forgets it. */
  forgetAgent(sessionId: string): void;
}
