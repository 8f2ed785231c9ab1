import * as z from 'zod';
import type { JsonValue, ToolKind } from '../types.js';
import type { ProcessInfo, ToolDefinition, ToolResult } from './types.js';

const DEFAULT_WAIT_SECONDS = 30;
const MAX_WAIT_SECONDS = 600;
const DEFAULT_LOG_OFFSET = -200;
const DEFAULT_LOG_LINES = 200;

const ProcessArgsSchema = z.object({
  action: z
    .enum(['list', 'poll', 'log', 'wait', 'kill', 'write'])
    .describe(
      "list: this session's background processes. poll: status and output since the previous poll. log: a window of lines of the output. wait: block until the process exits (or timeout), then status and the last output. kill: stop the process and its children. write: send data to its stdin.",
    ),
  process_id: z
    .string()
    .optional()
    .describe('The id returned by terminal with background: true, such as "proc_1". Required except for list.'),
  data: z.string().optional().describe('For write: text to send to stdin (add "\\n" to submit a line).'),
  timeout: z
    .number()
    .positive()
    .optional()
    .describe(`For wait: seconds to wait. Default ${DEFAULT_WAIT_SECONDS}, at most ${MAX_WAIT_SECONDS}.`),
  offset: z
    .number()
    .int()
    .optional()
    .describe(`For log: first line to show, 1-based; negative counts from the end. Default ${DEFAULT_LOG_OFFSET}.`),
  lines: z.number().int().min(1).optional().describe(`For log: number of lines. Default ${DEFAULT_LOG_LINES}.`),
});

/** Arguments of `process` (spec/core.md §11.7). */
export type ProcessArgs = z.infer<typeof ProcessArgsSchema>;

const READ_ACTIONS = new Set(['list', 'poll', 'log']);

/** The `process` tool (spec/core.md §11.7): manages this session's background processes. */
export function createProcessTool(): ToolDefinition<ProcessArgs> {
  return {
    name: 'process',
    description: [
      'Manage background processes started with terminal (background: true): list them, poll for new output, read a window of the log,',
      'wait for one to exit, kill it (with its children) or write to its stdin.',
    ].join(' '),
    inputSchema: ProcessArgsSchema,
    toolset: 'terminal',
    kind: (args): ToolKind => (READ_ACTIONS.has(args.action) ? 'read' : 'execute'),
    readOnly: (args) => READ_ACTIONS.has(args.action),
    display(args) {
      return { title: `process ${args.action}${args.process_id === undefined ? '' : ` ${args.process_id}`}` };
    },
    async execute(args, ctx): Promise<ToolResult> {
      const registry = ctx.processes;
      if (args.action === 'list') {
        const processes = registry.list(ctx.sessionId);
        const now = Date.now();
        const content =
          processes.length === 0
            ? 'No background processes in this session.'
            : processes
                .map(
                  (info) =>
                    `${info.id}  ${statusText(info)}  pid ${info.pid ?? '-'}  started ${new Date(info.startedAt).toISOString()}  runtime ${runtime(info, now)}  ${firstLine(info.command)}`,
                )
                .join('\n');
        return { content, structured: { processes: processes.map(infoJson) } };
      }
      const id = args.process_id;
      if (id === undefined || id === '')
        return { content: `process_id is required for action "${args.action}".`, isError: true };
      const unknown = (): ToolResult => ({
        content: `No background process ${id} in this session. Use action "list" to see them.`,
        isError: true,
      });

      switch (args.action) {
        case 'poll': {
          const polled = registry.poll(ctx.sessionId, id);
          if (polled === undefined) return unknown();
          return {
            content: `${headline(polled.info)}\n${polled.output === '' ? '(no new output)' : polled.output}`,
            structured: { process: infoJson(polled.info), output: polled.output },
          };
        }
        case 'log': {
          const offset = args.offset ?? DEFAULT_LOG_OFFSET;
          const lines = args.lines ?? DEFAULT_LOG_LINES;
          const log = registry.log(ctx.sessionId, id, offset, lines);
          if (log === undefined) return unknown();
          const first = offset < 0 ? Math.max(0, log.totalLines + offset) + 1 : Math.max(1, offset);
          const shown = log.text === '' ? 0 : log.text.split('\n').length;
          const range =
            shown === 0
              ? `no lines at that offset (${log.totalLines} in total)`
              : `lines ${first}–${first + shown - 1} of ${log.totalLines}`;
          return {
            content: `${headline(log.info)} — ${range}\n${log.text}`,
            structured: { process: infoJson(log.info), totalLines: log.totalLines, firstLine: first, lines: shown },
          };
        }
        case 'wait': {
          const seconds = Math.min(args.timeout ?? DEFAULT_WAIT_SECONDS, MAX_WAIT_SECONDS);
          let waited: Awaited<ReturnType<typeof registry.wait>>;
          try {
            waited = await registry.wait(ctx.sessionId, id, seconds * 1000, ctx.signal);
          } catch (error) {
            if (ctx.signal.aborted) return { content: `Stopped waiting for ${id}: cancelled.`, status: 'cancelled' };
            throw error;
          }
          if (waited === undefined) return unknown();
          const head = waited.timedOut
            ? `${waited.info.id} is still running after ${seconds} s (pid ${waited.info.pid ?? '-'}).`
            : headline(waited.info);
          return {
            content: `${head}\n${waited.tail === '' ? '(no output)' : waited.tail}`,
            structured: { process: infoJson(waited.info), timedOut: waited.timedOut },
          };
        }
        case 'kill': {
          const before = registry.get(ctx.sessionId, id);
          if (before === undefined) return unknown();
          if (before.status !== 'running') {
            return { content: `${id} had already ${statusText(before)}.`, structured: { process: infoJson(before) } };
          }
          await registry.kill(ctx.sessionId, id);
          const after = registry.get(ctx.sessionId, id) ?? before;
          return {
            content: `Killed ${id} (pid ${after.pid ?? '-'}) and its process group.`,
            structured: { process: infoJson(after) },
          };
        }
        case 'write': {
          const info = registry.get(ctx.sessionId, id);
          if (info === undefined) return unknown();
          if (args.data === undefined) return { content: 'data is required for action "write".', isError: true };
          if (!registry.write(ctx.sessionId, id, args.data)) {
            return { content: `Could not write to ${id}: it has ${statusText(info)}.`, isError: true };
          }
          return {
            content: `Wrote ${args.data.length} characters to the stdin of ${id}.`,
            structured: { process: infoJson(info) },
          };
        }
      }
      return { content: `Unknown action ${String(args.action)}.`, isError: true };
    },
  };
}

function statusText(info: ProcessInfo): string {
  if (info.status === 'running') return 'running';
  if (info.status === 'killed') return 'been killed';
  return `exited with code ${info.exitCode ?? 'unknown'}`;
}

function headline(info: ProcessInfo): string {
  const state =
    info.status === 'running'
      ? 'is running'
      : info.status === 'killed'
        ? 'was killed'
        : `exited with code ${info.exitCode ?? 'unknown'}`;
  return `${info.id} ${state} (pid ${info.pid ?? '-'}, runtime ${runtime(info, Date.now())}).`;
}

function runtime(info: ProcessInfo, now: number): string {
  const seconds = Math.max(0, Math.round(((info.endedAt ?? now) - info.startedAt) / 1000));
  return seconds < 60 ? `${seconds}s` : `${Math.floor(seconds / 60)}m${String(seconds % 60).padStart(2, '0')}s`;
}

function firstLine(command: string): string {
  const line = command.split('\n', 1)[0] ?? '';
  return line.length > 80 ? `${line.slice(0, 79)}…` : line;
}

function infoJson(info: ProcessInfo): JsonValue {
  return {
    id: info.id,
    pid: info.pid,
    command: info.command,
    cwd: info.cwd,
    status: info.status,
    exitCode: info.exitCode,
    startedAt: info.startedAt,
    endedAt: info.endedAt,
  };
}
