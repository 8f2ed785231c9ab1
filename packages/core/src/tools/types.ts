import type { JSONSchema7 } from '@ai-sdk/provider';
import type { ZodType } from 'zod';
import type {
  ApprovalChoice,
  ClarifyAnswer,
  ClarifyQuestion,
  FileDiff,
  JsonValue,
  ToolKind,
  ToolLocation,
} from '../types.js';
import type { CommandSandbox } from './sandbox.js';

/** What a tool returns (spec/core.md §11.1). */
export interface ToolResult {
  /** What the model sees. */
  content: string;
  isError?: boolean;
  /** Overrides the status derived from `isError` (`denied` for refused commands, `cancelled` on interrupt). */
  status?: 'completed' | 'failed' | 'denied' | 'cancelled';
  structured?: JsonValue;
  diffs?: FileDiff[];
  locations?: ToolLocation[];
  /** Extra display data stored on the tool row (todos, process ids). */
  displayMetadata?: Record<string, JsonValue>;
}

/** Outcome of an approval check made by a tool. */
export interface ApprovalOutcome {
  approved: boolean;
  choice: ApprovalChoice | null;
  source: string;
  cancelled: boolean;
  /** Why the command was not run, for the result text. */
  reason?: string;
}

/** Outcome of a clarify question. */
export interface ClarifyOutcome {
  answer: ClarifyAnswer;
  timedOut: boolean;
  cancelled: boolean;
  /** For a batch: the answers by question id. */
  answers?: Record<string, ClarifyAnswer>;
}

/**
 * Per-session file access seam (spec/core.md §24.1). The default reads and writes the local
 * file system; an IDE client can supply its own (ACP `fs/*`). Paths are absolute. `readText`
 * with `line` (1-based) and/or `limit` returns only that range of lines; a missing file rejects
 * with an error whose `code` is `'ENOENT'`. The tools create missing parent directories on the
 * local file system before `writeText`.
 */
export interface FileAccess {
  readText(input: { sessionId: string; callId: string; path: string; line?: number; limit?: number }): Promise<string>;
  writeText(input: { sessionId: string; callId: string; path: string; content: string }): Promise<void>;
}

/** A command started through a {@link CommandRunner}. */
export interface RunningCommand {
  readonly pid: number | null;
  /** Resolves when the command exits, is killed, or the timeout passes (then it is killed). */
  wait(options: { timeoutMs: number; signal: AbortSignal }): Promise<{
    exitCode: number | null;
    signal: string | null;
    timedOut: boolean;
    cancelled: boolean;
  }>;
  /** Output so far (merged stdout and stderr, in arrival order, capped). */
  output(): { text: string; truncated: boolean };
  kill(): Promise<void>;
  release(): Promise<void>;
}

/**
 * Per-session command runner seam for foreground `terminal` commands (spec/core.md §24.2). The
 * default runs locally in a new process group; an IDE client can supply its own (ACP `terminal/*`).
 */
export interface CommandRunner {
  start(input: {
    sessionId: string;
    callId: string;
    command: string;
    cwd: string;
    env: Readonly<Record<string, string>>;
    outputByteLimit: number;
    onOutput?: (chunk: string) => void;
    /** Text written to stdin then closed (sudo -S). */
    stdin?: string;
    /**
     * The OS sandbox to run the command in (`terminal.sandbox`); a local runner honours it, a
     * client's runner (an editor's terminal) runs on the client's terms.
     */
    sandbox?: CommandSandbox;
  }): Promise<RunningCommand>;
}

/** What a tool's `execute` receives. */
export interface ToolContext {
  sessionId: string;
  turnId: string;
  callId: string;
  /** The turn's long-term memory scope (`RunTurnOptions.memoryScope`), null when the caller gave none. */
  memoryScope: string | null;
  cwd: string;
  signal: AbortSignal;
  /** Filtered environment for subprocesses (spec/core.md §20). */
  env: Readonly<Record<string, string>>;
  /** The OS sandbox for commands of this session (`terminal.sandbox`); absent: commands run unconfined. */
  sandbox?: CommandSandbox;
  /** Resolved settings the tools read. */
  settings: ToolSettings;
  files: FileAccess;
  /**
   * True for an absolute path a file tool wrote or changed in this session: the terminal tool's
   * approval check does not trust such a file when a command runs it (docs/adr/0033).
   */
  writtenByAgent?: (path: string) => boolean;
  /**
   * When the session began (ms since the epoch): a script whose inode changed since is new to the session, and
   * what cannot be judged in it asks; in a script that predates the session only its pattern classes do.
   */
  scriptsChangedSince?: number;
  commands: CommandRunner;
  processes: ProcessRegistry;
  progress(update: { output?: string; message?: string }): void;
  /**
   * Asks whether a command may run (spec/core.md §12.3). With `policyChange`, the call changes the
   * agent's own policy (a write to config.yaml or a skill): it asks the user whatever the approval
   * mode, YOLO, allowlist or grants say.
   */
  requestApproval(input: {
    command: string;
    cwd: string;
    policyChange?: { toolName: string; path: string };
  }): Promise<ApprovalOutcome>;
  clarify(input: {
    question: string;
    choices?: string[];
    multiSelect?: boolean;
    questions?: ClarifyQuestion[];
  }): Promise<ClarifyOutcome>;
  /** Asks for the sudo password when a command starts with sudo; null when declined or no callback. */
  sudoPassword(command: string): Promise<string | null>;
  /**
   * Sends a request to the session's client (`HostCallbacks.clientRequest`) and resolves with its
   * result; rejects with a clear message when there is no such callback or no client can answer.
   */
  clientRequest(
    method: import('../types.js').ClientRequestMethod,
    params: Record<string, JsonValue>,
  ): Promise<Record<string, unknown>>;
  /** Services provided by the agent for tools that need more than the above (todo, delegate_task). */
  services: ToolServices;
}

/** Agent-provided services for the tools that need them. */
export interface ToolServices {
  todos: { get(): import('../types.js').TodoItem[]; set(todos: import('../types.js').TodoItem[]): void };
  /** Runs delegated child tasks (spec/core.md §14); absent for subagents. */
  delegate?: (
    tasks: { goal: string; context?: string }[],
    signal: AbortSignal,
  ) => Promise<{ results: JsonValue[]; error?: string }>;
  fetch: typeof globalThis.fetch;
}

/** Settings of §4.3 that tools read. */
export interface ToolSettings {
  terminalTimeout: number;
  terminalMaxTimeout: number;
  writeDenylist: string[];
  /**
   * Paths no file tool may read or write (`file.protected_paths`, with `$HERMES_HOME` expanded):
   * the home's secrets, configuration and session store. Absolute globs.
   */
  protectedPaths?: string[];
  /**
   * Paths whose change alters the agent's own policy (config.yaml, `.env`, skills): a write asks
   * for approval whatever the approval mode. Absolute globs.
   */
  policyPaths?: string[];
  webFetchTimeout: number;
  webMaxBytes: number;
  /** `web.allow_private_hosts`: hosts, addresses and CIDR ranges web_fetch may reach although they are not public. */
  webAllowPrivateHosts: string[];
  maxResultChars: number;
  clarifyTimeout: number;
  maxConcurrentChildren: number;
  homeDir: string;
}

/** A tool (spec/core.md §11.1). */
// biome-ignore lint/suspicious/noExplicitAny: a registry holds tools of every argument type
export interface ToolDefinition<A = any> {
  /** `^[A-Za-z0-9_-]{1,64}$` */
  name: string;
  description: string;
  inputSchema: ZodType<A> | JSONSchema7;
  toolset: string;
  kind: ToolKind | ((args: A) => ToolKind);
  readOnly: boolean | ((args: A) => boolean);
  /** Never runs in parallel (clarify). */
  interactive?: boolean;
  maxResultChars?: number;
  display?: (args: A, ctx: { cwd: string; homeDir?: string }) => { title: string; locations?: ToolLocation[] };
  available?: (ctx: {
    sessionId: string;
    source: string;
    hasClarify: boolean;
    isSubagent: boolean;
    /** The session's host can send requests to its client (`HostCallbacks.clientRequest`). */
    hasClientRequests?: boolean;
    /** The session's working directory. */
    cwd?: string;
  }) => boolean;
  execute(args: A, ctx: ToolContext): Promise<ToolResult>;
}

/** The host's tool registry. */
export interface ToolRegistry {
  /** Throws on a duplicate name. */
  register(definition: ToolDefinition): void;
  unregister(name: string): void;
  get(name: string): ToolDefinition | undefined;
  list(filter?: { sessionId?: string }): ToolDefinition[];
}

/** A background process entry (spec/core.md §11.7). */
export interface ProcessInfo {
  id: string;
  sessionId: string;
  pid: number | null;
  command: string;
  cwd: string;
  status: 'running' | 'exited' | 'killed';
  exitCode: number | null;
  startedAt: number;
  endedAt: number | null;
}

/** Background processes, owned by the host; each belongs to one session. */
export interface ProcessRegistry {
  start(input: {
    sessionId: string;
    command: string;
    cwd: string;
    env: Readonly<Record<string, string>>;
    /** The OS sandbox to run the process in (`terminal.sandbox`). */
    sandbox?: CommandSandbox;
  }): Promise<ProcessInfo>;
  list(sessionId: string): ProcessInfo[];
  get(sessionId: string, id: string): ProcessInfo | undefined;
  /** Output produced since this session's previous poll of the process. */
  poll(sessionId: string, id: string): { info: ProcessInfo; output: string } | undefined;
  /** A window of lines of the buffer; negative offset counts from the end. */
  log(
    sessionId: string,
    id: string,
    offset: number,
    lines: number,
  ): { info: ProcessInfo; text: string; totalLines: number } | undefined;
  wait(
    sessionId: string,
    id: string,
    timeoutMs: number,
    signal: AbortSignal,
  ): Promise<{ info: ProcessInfo; tail: string; timedOut: boolean } | undefined>;
  write(sessionId: string, id: string, data: string): boolean;
  kill(sessionId: string, id: string): Promise<boolean>;
  killSession(sessionId: string): Promise<void>;
  killAll(): Promise<void>;
  runningCount(sessionId: string): number;
}
