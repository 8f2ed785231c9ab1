import { readFileSync } from 'node:fs';
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ZodType } from 'zod';
import { defaultToolSettings } from '../../src/tools/builtin.js';
import { createLocalCommandRunner } from '../../src/tools/command-runner.js';
import { createLocalFileAccess } from '../../src/tools/file-access.js';
import { createProcessRegistry } from '../../src/tools/process-registry.js';
import type { CommandSandbox } from '../../src/tools/sandbox.js';
import { filterSubprocessEnv } from '../../src/tools/subprocess-env.js';
import type {
  ApprovalOutcome,
  ClarifyOutcome,
  CommandRunner,
  FileAccess,
  ProcessRegistry,
  ToolContext,
  ToolDefinition,
  ToolResult,
  ToolServices,
  ToolSettings,
} from '../../src/tools/types.js';
import type { TodoItem } from '../../src/types.js';

type ApprovalInput = { command: string; cwd: string };
type ClarifyInput = Parameters<ToolContext['clarify']>[0];

/** Options of {@link createTestToolContext}. */
export interface TestToolContextOptions {
  /** Working directory; default a new temporary directory (removed by `cleanup`). */
  cwd?: string;
  settings?: Partial<ToolSettings>;
  /** Environment before filtering (default `process.env`). */
  env?: Record<string, string | undefined>;
  envPassthrough?: string[];
  /** Scripted approval answers, used in order, or a function; default: denied (`no_callback`). */
  approvals?: ApprovalOutcome[] | ((input: ApprovalInput) => Promise<ApprovalOutcome>);
  /** Scripted clarify answers, used in order, or a function. */
  clarify?: ClarifyOutcome[] | ((input: ClarifyInput) => Promise<ClarifyOutcome>);
  sudoPassword?: (command: string) => Promise<string | null>;
  files?: FileAccess;
  commands?: CommandRunner;
  processes?: ProcessRegistry;
  fetch?: typeof globalThis.fetch;
  delegate?: ToolServices['delegate'];
  sessionId?: string;
  /** The OS sandbox commands run in (absent: unconfined). */
  sandbox?: CommandSandbox;
}

/** A ToolContext with real local seams over a temporary directory, and what the tools asked. */
export interface TestToolContext {
  ctx: ToolContext;
  cwd: string;
  /** A temporary home directory (`~` in paths and in the denylist). */
  home: string;
  controller: AbortController;
  progress: { output?: string; message?: string }[];
  approvalRequests: ApprovalInput[];
  clarifyRequests: ClarifyInput[];
  sudoRequests: string[];
  todos(): TodoItem[];
  /** Runs a tool the way the agent does: arguments parsed by its schema, then `execute`. */
  run<A>(tool: ToolDefinition<A>, args: unknown): Promise<ToolResult>;
  cleanup(): Promise<void>;
}

/** Approval outcomes for scripts. */
export const approvals = {
  once: (): ApprovalOutcome => ({ approved: true, choice: 'once', source: 'user', cancelled: false }),
  deny: (): ApprovalOutcome => ({ approved: false, choice: 'deny', source: 'user', cancelled: false }),
  timeout: (): ApprovalOutcome => ({ approved: false, choice: null, source: 'timeout', cancelled: false }),
  noCallback: (): ApprovalOutcome => ({ approved: false, choice: null, source: 'no_callback', cancelled: false }),
  cancelled: (): ApprovalOutcome => ({ approved: false, choice: null, source: 'cancelled', cancelled: true }),
};

/** Builds a ToolContext for tool tests. */
export async function createTestToolContext(options: TestToolContextOptions = {}): Promise<TestToolContext> {
  const owned: string[] = [];
  // realpath: macOS temp directories sit behind a symbolic link, and results show real paths.
  const cwd = options.cwd ?? (await realpath(await mkdtemp(join(tmpdir(), 'hermes-tools-'))));
  if (options.cwd === undefined) owned.push(cwd);
  const home = await realpath(await mkdtemp(join(tmpdir(), 'hermes-home-')));
  owned.push(home);
  const controller = new AbortController();
  const progress: TestToolContext['progress'] = [];
  const approvalRequests: ApprovalInput[] = [];
  const clarifyRequests: ClarifyInput[] = [];
  const sudoRequests: string[] = [];
  let todos: TodoItem[] = [];
  const processes = options.processes ?? createProcessRegistry();
  const approvalScript = Array.isArray(options.approvals) ? [...options.approvals] : null;
  const clarifyScript = Array.isArray(options.clarify) ? [...options.clarify] : null;
  const services: ToolServices = {
    todos: {
      get: () => todos.map((item) => ({ ...item })),
      set: (next) => {
        todos = next.map((item) => ({ ...item }));
      },
    },
    fetch: options.fetch ?? globalThis.fetch,
  };
  if (options.delegate !== undefined) services.delegate = options.delegate;
  const ctx: ToolContext = {
    sessionId: options.sessionId ?? 'session_test',
    turnId: 'turn_test',
    memoryScope: null,
    callId: 'call_test',
    cwd,
    signal: controller.signal,
    env: filterSubprocessEnv(options.env ?? process.env, options.envPassthrough ?? []),
    ...(options.sandbox === undefined ? {} : { sandbox: options.sandbox }),
    settings: defaultToolSettings({ homeDir: home, ...options.settings }),
    files: options.files ?? createLocalFileAccess(),
    commands: options.commands ?? createLocalCommandRunner(),
    processes,
    progress: (update) => {
      progress.push(update);
    },
    async clientRequest(method) {
      throw new Error(`this test context has no client that can answer ${method} requests`);
    },
    async requestApproval(input) {
      approvalRequests.push(input);
      if (typeof options.approvals === 'function') return options.approvals(input);
      return approvalScript?.shift() ?? approvals.noCallback();
    },
    async clarify(input) {
      clarifyRequests.push(input);
      if (typeof options.clarify === 'function') return options.clarify(input);
      const next = clarifyScript?.shift();
      if (next === undefined) throw new Error('No scripted clarify answer left');
      return next;
    },
    async sudoPassword(command) {
      sudoRequests.push(command);
      return options.sudoPassword === undefined ? null : options.sudoPassword(command);
    },
    services,
  };
  return {
    ctx,
    cwd,
    home,
    controller,
    progress,
    approvalRequests,
    clarifyRequests,
    sudoRequests,
    todos: () => todos,
    async run(tool, args) {
      const parsed = (tool.inputSchema as ZodType).parse(args);
      return tool.execute(parsed as never, ctx);
    },
    async cleanup() {
      await processes.killAll();
      for (const directory of owned) await rm(directory, { recursive: true, force: true });
    },
  };
}

/**
 * True while `pid` is a live process. A zombie counts as gone: it has exited and only waits to
 * be reaped, which the init process of some containers never does.
 */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    // /proc/<pid>/stat: "pid (comm) state …"; the state follows the last ")".
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return true;
  }
}
