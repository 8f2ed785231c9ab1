/**
 * The built-in tools of `@hermes/core` (spec/core.md §11) and their seams.
 *
 * @packageDocumentation
 */

export { type BuiltinToolsOptions, builtinTools, defaultToolSettings } from './builtin.js';
export { type ClarifyArgs, createClarifyTool } from './clarify.js';
export { createLocalCommandRunner, type LocalCommandRunnerOptions } from './command-runner.js';
export { createDelegateTaskTool, type DelegateTaskArgs } from './delegate-task.js';
export { createLocalFileAccess } from './file-access.js';
export { createPatchTool, type PatchArgs } from './patch.js';
export { displayPath, resolveToolPath } from './paths.js';
export {
  createProcessRegistry,
  MAX_RUNNING_PROCESSES_PER_SESSION,
  PROCESS_BUFFER_CHARS,
  type ProcessRegistryOptions,
} from './process-registry.js';
export { createProcessTool, type ProcessArgs } from './process-tool.js';
export { expandHermesHome, POLICY_PATHS } from './protected-paths.js';
export { createReadFileTool, type ReadFileArgs } from './read-file.js';
export { createToolRegistry } from './registry.js';
export { findRipgrep } from './ripgrep-path.js';
export {
  type CommandSandbox,
  probeBwrap,
  resolveSandbox,
  type SandboxSetting,
  type SandboxStatus,
} from './sandbox.js';
export { createSearchFilesTool, type SearchFilesArgs, type SearchFilesOptions } from './search-files.js';
export { shellInvocation } from './shell.js';
export {
  buildSubprocessEnv,
  CORE_ENV_PATTERNS,
  filterSubprocessEnv,
  type SubprocessEnvMode,
  type SubprocessEnvPolicy,
} from './subprocess-env.js';
export { createTerminalTool, denialText, TERMINAL_OUTPUT_LIMIT, type TerminalArgs } from './terminal.js';
export { capToolResult } from './text.js';
export { createTodoTool, renderTodos, type TodoArgs } from './todo.js';
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
  ToolServices,
  ToolSettings,
} from './types.js';
export { createWebFetchTool, type WebFetchArgs } from './web-fetch.js';
export { createWriteFileTool, type WriteFileArgs } from './write-file.js';
