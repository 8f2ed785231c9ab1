import { homedir } from 'node:os';
import { DEFAULT_WRITE_DENYLIST } from '../config/schema.js';
import { createClarifyTool } from './clarify.js';
import { createDelegateTaskTool } from './delegate-task.js';
import { createPatchTool } from './patch.js';
import { createProcessTool } from './process-tool.js';
import { createReadFileTool } from './read-file.js';
import { createSearchFilesTool, type SearchFilesOptions } from './search-files.js';
import { createTerminalTool } from './terminal.js';
import { createTodoTool } from './todo.js';
import type { ToolDefinition, ToolSettings } from './types.js';
import { createWebFetchTool } from './web-fetch.js';
import { createWriteFileTool } from './write-file.js';

/** Options of {@link builtinTools}. */
export interface BuiltinToolsOptions {
  /** Which ripgrep `search_files` uses (see {@link SearchFilesOptions.ripgrep}). */
  ripgrep?: SearchFilesOptions['ripgrep'];
}

/**
 * The built-in tools of spec/core.md §11, in toolset order: `read_file`, `write_file`, `patch`,
 * `search_files` (file), `terminal`, `process` (terminal), `web_fetch` (web), `clarify`, `todo`
 * (interaction), `delegate_task` (delegation).
 */
export function builtinTools(options: BuiltinToolsOptions = {}): ToolDefinition[] {
  return [
    createReadFileTool(),
    createWriteFileTool(),
    createPatchTool(),
    createSearchFilesTool(options.ripgrep === undefined ? {} : { ripgrep: options.ripgrep }),
    createTerminalTool(),
    createProcessTool(),
    createWebFetchTool(),
    createClarifyTool(),
    createTodoTool(),
    createDelegateTaskTool(),
  ];
}

/** `file.write_denylist` default (spec/core.md §4.3). */

/** The tool settings with the defaults of spec/core.md §4.3. */
export function defaultToolSettings(overrides: Partial<ToolSettings> = {}): ToolSettings {
  return {
    terminalTimeout: 180,
    terminalMaxTimeout: 600,
    writeDenylist: [...DEFAULT_WRITE_DENYLIST],
    webFetchTimeout: 30,
    webMaxBytes: 5_242_880,
    webAllowPrivateHosts: [],
    maxResultChars: 100_000,
    clarifyTimeout: 300,
    maxConcurrentChildren: 3,
    homeDir: homedir(),
    ...overrides,
  };
}
