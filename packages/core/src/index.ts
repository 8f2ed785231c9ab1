/**
 * @hermes/core: the agent loop, model providers, tools and the durable session store.
 *
 * @packageDocumentation
 */

export { EVENT_BUFFER_SIZE } from './agent/event-stream.js';
export { type AgentHost, type AgentHostOptions, createAgent, createAgentHost, type HostEvent } from './agent/host.js';
export {
  buildModelOptions,
  type ModelOptions,
  type ModelOptionsModel,
  type ModelOptionsProvider,
  type ModelOptionsRequest,
} from './agent/model-options.js';
export type { HermesSettings as HermesConfig } from './agent/settings.js';
export { pendingToolCalls } from './agent/transcript.js';
export type {
  ClientTool,
  ClientToolResult,
  InterruptOptions,
  RunTurnOptions,
  SteerResult,
  TurnInput,
  TurnResult,
} from './agent/turn-types.js';
export type {
  Agent,
  AgentStatus,
  CompressionResult,
  ModelSwitchResult,
  OpenSessionOptions,
  ResumeOptions,
  SessionOptions,
  SubagentInfo,
  TurnRun,
  UsageSnapshot,
} from './agent/types.js';
export {
  alwaysScopeOf,
  type CommandAllowlistEntry,
  type CommandAllowlistListing,
  describeAlways,
  listCommandAllowlist,
} from './approvals/allowlist.js';
export {
  type DangerousCommandDetection,
  detectDangerousCommand,
  judgeCommand,
  loadShellParser,
  type ScriptContext,
} from './approvals/detect.js';
export {
  type CheckpointFileChange,
  type FileCheckpoint,
  FileCheckpointStore,
  type FileCheckpointStoreOptions,
} from './checkpoints/file-checkpoints.js';
export { systemClock } from './clock.js';
export { helpText, parseCommandLine } from './commands/registry.js';
export type { CommandDef, CommandRegistry, CommandResult } from './commands/types.js';
export {
  appendCommandAllowlist,
  defaultConfig,
  ensureHomeDir,
  hermesConfigSchema,
  type LoadedConfig,
  loadConfig,
  removeCommandAllowlist,
  resolveHomeDir,
  setDefaultModel,
  updateConfigFile,
  writeDotenvValue,
} from './config/index.js';
export { HermesError, type HermesErrorCode } from './errors.js';
export type {
  AgentEvent,
  AgentEventOf,
  AgentEventPayloads,
  AgentEventType,
  AgentPhase,
  EventBase,
  FailoverReason,
} from './events.js';
export {
  type LiveSessionEvent,
  LiveSessionHub,
  type LiveSessionRelay,
  type LiveSessionRelayOptions,
  type LiveTurn,
  type LiveTurnAction,
  type LiveTurnActionOutcome,
  type LiveTurnApproval,
  type LiveTurnControls,
} from './live-session-hub.js';
export { createStderrLogger, redactSecrets, silentLogger } from './logger.js';
export { mcpToolName } from './mcp/manager.js';
export type { McpManager, McpServerConfig, McpServerStatus } from './mcp/types.js';
export {
  createDemoModel,
  createDemoProvider,
  DEMO_MODEL_SPEC,
  DEMO_WORKSPACE_PREFIX,
} from './providers/demo-model.js';
export {
  BUILTIN_PROVIDER_IDS,
  BUILTIN_PROVIDERS,
  type BuiltinProviderDescriptor,
  formatUsd,
  type ParsedModelSpec,
  PROVIDER_ALIASES,
  parseModelSpec,
} from './providers/index.js';
export type { ProviderAdapter, ResolvedRoute } from './providers/types.js';
export {
  collectHostSecrets,
  type HostSecret,
  type NamedSecret,
  SERVER_SECRET_VARIABLES,
  SecretRedactor,
} from './security/index.js';
export {
  buildSkillMessage,
  createSkillRegistry,
  parseSkillFile,
  type SkillRegistryOptions,
  skillCommandName,
  skillsByCategory,
} from './skills/index.js';
export type {
  Skill,
  SkillInvocation,
  SkillRegistry,
  SkillReloadResult,
  SkillScope,
  SkillSnapshot,
  SkillSource,
} from './skills/types.js';
export {
  type AppendOptions,
  createRunBus,
  DEFAULT_RUN_EVENT_OUTBOX,
  isLeaseLost,
  isPostgresUrl,
  type ListeningInstances,
  LocalRunBus,
  MAX_CONTROL_PAYLOAD_BYTES,
  type OpenSessionStoreOptions,
  openPostgresStore,
  openSessionStore,
  openSqliteStore,
  type PostgresSessionStore,
  type PostgresStoreOptions,
  type RunBus,
  type RunBusOptions,
  type RunControlReply,
  type RunControlRequest,
  RunEventOutbox,
  type RunEventOutboxOptions,
  type RunEventRecord,
  type RunSettlement,
  SqliteSessionStore,
  type SqliteStoreOptions,
  sanitizeFtsQuery,
} from './store/index.js';
export type * from './store/types.js';
export {
  buildSubprocessEnv,
  builtinTools,
  CORE_ENV_PATTERNS,
  type CommandSandbox,
  capToolResult,
  createLocalCommandRunner,
  createLocalFileAccess,
  filterSubprocessEnv,
  findRipgrep,
  resolveSandbox,
  type SandboxSetting,
  type SandboxStatus,
  type SubprocessEnvMode,
  type SubprocessEnvPolicy,
} from './tools/index.js';
export type {
  ApprovalOutcome,
  ClarifyOutcome,
  CommandRunner,
  FileAccess,
  ProcessInfo,
  ProcessRegistry,
  RunningCommand,
  ToolContext,
  ToolDefinition,
  ToolRegistry,
  ToolResult,
} from './tools/types.js';
export { type TurnClaim, type TurnHolder, type TurnReleased, TurnsInFlight } from './turns-in-flight.js';
export type * from './types.js';
export { type PingableSocket, pingSockets } from './util/socket-liveness.js';
export { TextChunks } from './util/text-chunks.js';
export { VERSION } from './version.js';
