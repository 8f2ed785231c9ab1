import * as z from 'zod';
import { judgeCommand } from '../approvals/detect.js';
import { HermesError } from '../errors.js';
import { errorMessage } from './file-access.js';
import { statOrNull } from './file-lookup.js';
import { displayPath, resolveToolPath } from './paths.js';
import type { ApprovalOutcome, RunningCommand, ToolContext, ToolDefinition, ToolResult } from './types.js';

/** Output characters kept from a foreground command: the first 20,000 and the last 80,000. */
export const TERMINAL_OUTPUT_LIMIT = 100_000;
/** `tool.progress` is sent at most this often per call (spec/core.md §6.2: 10 per second). */
const PROGRESS_INTERVAL_MS = 100;

const TerminalArgsSchema = z.object({
  command: z
    .string()
    .min(1)
    .describe('The command, run with bash -c (sh -c when bash is missing). Pipes, && and multi-line scripts work.'),
  background: z
    .boolean()
    .optional()
    .describe(
      'Start the command in the background and return at once with a process id (for servers, watchers and long jobs). Default false.',
    ),
  timeout: z
    .number()
    .positive()
    .optional()
    .describe(
      'Seconds a foreground command may run before it is killed. Default 180, at most 600. Ignored for background commands.',
    ),
  workdir: z
    .string()
    .optional()
    .describe(
      'Directory to run in: relative to the working directory, absolute, or starting with ~. Default: the working directory.',
    ),
});

/** Arguments of `terminal` (spec/core.md §11.6). */
export type TerminalArgs = z.infer<typeof TerminalArgsSchema>;

/** The `terminal` tool (spec/core.md §11.6). */
export function createTerminalTool(): ToolDefinition<TerminalArgs> {
  return {
    name: 'terminal',
    description: [
      'Run a shell command and return its combined stdout and stderr followed by the exit code.',
      'Each call is a fresh process: cd and exported variables do NOT persist between calls, so use workdir or chain commands with &&.',
      'stdin is closed, so interactive prompts cannot be answered: pass flags such as -y or --no-input.',
      'For servers, watchers and other long-running commands set background: true, then use the process tool to read their output or stop them.',
      'Prefer read_file, search_files, patch and write_file over cat, grep, sed or echo redirection.',
      "Dangerous commands (recursive deletes, force pushes, sudo, …) need the user's approval and may be refused.",
    ].join(' '),
    inputSchema: TerminalArgsSchema,
    toolset: 'terminal',
    kind: 'execute',
    readOnly: false,
    display(args) {
      const firstLine = args.command.split('\n', 1)[0] ?? '';
      return { title: firstLine.slice(0, 120) };
    },
    async execute(args, ctx) {
      const workdir = resolveToolPath(args.workdir ?? '.', ctx.cwd, ctx.settings.homeDir);
      const stats = await statOrNull(workdir);
      if (stats === null || !stats.isDirectory()) {
        return {
          content: `The working directory ${displayPath(workdir, ctx.cwd)} does not exist or is not a directory.`,
          isError: true,
        };
      }

      // Scripts the command runs by path are read and judged too, so the working directory goes along.
      const detection = await judgeCommand(args.command, {
        cwd: workdir,
        homeDir: ctx.settings.homeDir,
        ...(ctx.env.PATH === undefined ? {} : { searchPath: ctx.env.PATH }),
        ...(ctx.writtenByAgent === undefined ? {} : { writtenByAgent: ctx.writtenByAgent }),
        ...(ctx.scriptsChangedSince === undefined ? {} : { changedSince: ctx.scriptsChangedSince }),
      });
      if (detection.blocked) return { content: `Command not run: ${detection.blockReason}`, status: 'denied' };
      if (detection.patternKeys.length > 0) {
        const outcome = await ctx.requestApproval({ command: args.command, cwd: workdir });
        if (outcome.cancelled || (!outcome.approved && ctx.signal.aborted)) {
          return { content: 'Command not run: cancelled while waiting for approval.', status: 'cancelled' };
        }
        if (!outcome.approved) return { content: denialText(outcome), status: 'denied' };
      }
      if (ctx.signal.aborted) return { content: '[cancelled]', status: 'cancelled' };

      if (args.background === true) return startBackground(args.command, workdir, ctx);
      return runForeground(args, workdir, ctx);
    },
  };
}

/** The result text of a command the approval step refused (spec/core.md §12.4). */
export function denialText(outcome: ApprovalOutcome): string {
  const advice = 'Choose another approach or ask the user.';
  switch (outcome.source) {
    case 'user':
      return `Command not run: denied by the user. ${advice}`;
    case 'timeout':
      return `Command not run: nobody answered the approval request in time, so it was denied. ${advice}`;
    case 'no_callback':
      return `Command not run: it needs the user's approval and no approval callback is configured. ${advice}`;
    case 'error':
      return `Command not run: the approval request failed${outcome.reason === undefined ? '' : ` (${outcome.reason})`}. ${advice}`;
    default:
      return `Command not run: ${outcome.reason ?? `denied (${outcome.source})`}. ${advice}`;
  }
}

async function startBackground(command: string, workdir: string, ctx: ToolContext): Promise<ToolResult> {
  try {
    const info = await ctx.processes.start({
      sessionId: ctx.sessionId,
      command,
      cwd: workdir,
      env: ctx.env,
      ...(ctx.sandbox === undefined ? {} : { sandbox: ctx.sandbox }),
    });
    return {
      content: `Started background process ${info.id} (pid ${info.pid ?? 'unknown'}). Use the process tool to read its output or stop it.`,
      structured: { processId: info.id, pid: info.pid },
      displayMetadata: { processId: info.id },
    };
  } catch (error) {
    if (HermesError.isInstance(error) && error.code === 'process_limit')
      return { content: error.message, isError: true };
    return { content: `Could not start the command: ${errorMessage(error)}`, isError: true };
  }
}

/**
 * `sudo` at the start of a foreground command asks the sudo callback. An answer is fed to
 * `sudo -S` on stdin (with an empty prompt) and never appears in the command, the result or a
 * log. Without an answer the command runs unchanged: with stdin closed, sudo then succeeds only
 * where no password is needed and otherwise fails at once with its own message.
 */
async function sudoInput(command: string, ctx: ToolContext): Promise<{ command: string; stdin?: string }> {
  if (!/^\s*sudo(\s|$)/.test(command)) return { command };
  const password = await ctx.sudoPassword(command);
  if (password === null || password === '') return { command };
  return { command: command.replace(/^\s*sudo/, "sudo -S -p ''"), stdin: `${password}\n` };
}

async function runForeground(args: TerminalArgs, workdir: string, ctx: ToolContext): Promise<ToolResult> {
  const timeoutSeconds = Math.min(args.timeout ?? ctx.settings.terminalTimeout, ctx.settings.terminalMaxTimeout);
  const prepared = await sudoInput(args.command, ctx);
  if (ctx.signal.aborted) return { content: '[cancelled]', status: 'cancelled' };
  const progress = createProgressCoalescer((output) => ctx.progress({ output }));
  const startedAt = Date.now();
  let running: RunningCommand;
  try {
    running = await ctx.commands.start({
      sessionId: ctx.sessionId,
      callId: ctx.callId,
      command: prepared.command,
      cwd: workdir,
      env: ctx.env,
      outputByteLimit: TERMINAL_OUTPUT_LIMIT,
      onOutput: progress.push,
      ...(prepared.stdin === undefined ? {} : { stdin: prepared.stdin }),
      ...(ctx.sandbox === undefined ? {} : { sandbox: ctx.sandbox }),
    });
  } catch (error) {
    return { content: `Could not start the command: ${errorMessage(error)}`, isError: true };
  }
  try {
    const outcome = await running.wait({ timeoutMs: timeoutSeconds * 1000, signal: ctx.signal });
    progress.finish();
    const output = running.output();
    const durationMs = Date.now() - startedAt;
    let marker: string;
    let status: ToolResult['status'] = 'completed';
    if (outcome.cancelled) {
      marker = '[cancelled]';
      status = 'cancelled';
    } else if (outcome.timedOut) {
      marker = `[timed out after ${timeoutSeconds} s]`;
      status = 'failed';
    } else if (outcome.exitCode === null && outcome.signal !== null) {
      marker = `[terminated by ${outcome.signal}]`;
    } else {
      marker = `[exit code ${outcome.exitCode ?? 'unknown'}]`;
    }
    const text = output.text === '' ? marker : `${output.text}${output.text.endsWith('\n') ? '' : '\n'}${marker}`;
    const result: ToolResult = {
      content: text,
      status,
      structured: {
        exitCode: outcome.exitCode,
        signal: outcome.signal,
        timedOut: outcome.timedOut,
        cancelled: outcome.cancelled,
        durationMs,
        cwd: workdir,
        truncated: output.truncated,
      },
    };
    if (status === 'failed') result.isError = true;
    return result;
  } finally {
    progress.finish();
    await running.release();
  }
}

/** Coalesces output chunks into at most one progress update per 100 ms. */
function createProgressCoalescer(send: (output: string) => void): {
  push: (chunk: string) => void;
  finish: () => void;
} {
  let pending = '';
  let timer: ReturnType<typeof setTimeout> | null = null;
  let lastSent = 0;
  let finished = false;
  const flush = () => {
    timer = null;
    if (pending === '') return;
    const output = pending;
    pending = '';
    lastSent = Date.now();
    send(output);
  };
  return {
    push(chunk) {
      if (finished) return;
      pending += chunk;
      if (timer === null) timer = setTimeout(flush, Math.max(0, lastSent + PROGRESS_INTERVAL_MS - Date.now()));
    },
    finish() {
      if (timer !== null) clearTimeout(timer);
      flush();
      finished = true;
    },
  };
}
