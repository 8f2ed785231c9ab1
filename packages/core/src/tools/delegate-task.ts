import * as z from 'zod';
import type { JsonValue } from '../types.js';
import type { ToolDefinition, ToolResult } from './types.js';

const TaskSchema = z.object({
  goal: z.string().min(1).describe('What the subagent must achieve, stated so it can work without this conversation.'),
  context: z.string().optional().describe('Facts, file paths and constraints the subagent needs.'),
});

const DelegateTaskArgsSchema = z.object({
  goal: z.string().min(1).optional().describe('A single task to delegate. Give either goal or tasks.'),
  context: z
    .string()
    .optional()
    .describe('Context for the single goal: facts, file paths and constraints the subagent needs.'),
  tasks: z
    .array(TaskSchema)
    .min(1)
    .optional()
    .describe(
      'Several independent tasks, run at the same time by separate subagents (at most delegation.max_concurrent_children, default 3).',
    ),
});

/** Arguments of `delegate_task` (spec/core.md §11.10). */
export type DelegateTaskArgs = z.infer<typeof DelegateTaskArgsSchema>;

/** The `delegate_task` tool (spec/core.md §11.10): runs subagents and returns their summaries. */
export function createDelegateTaskTool(): ToolDefinition<DelegateTaskArgs> {
  return {
    name: 'delegate_task',
    description: [
      'Delegate self-contained work to subagents that have the same tools (except delegate_task and clarify) but none of this conversation.',
      'Give a goal with enough context, or several independent tasks to run in parallel. Each subagent ends with a summary',
      '(Summary, Details, Files changed, Open issues); the result is JSON with one entry per task.',
      'Use it for independent research or edits that would otherwise fill this context; do small steps yourself.',
    ].join(' '),
    inputSchema: DelegateTaskArgsSchema,
    toolset: 'delegation',
    kind: 'other',
    readOnly: false,
    // Spawn depth is 1: children never delegate (spec/core.md §14).
    available: (ctx) => !ctx.isSubagent,
    display(args) {
      const goals = args.tasks?.map((task) => task.goal) ?? (args.goal === undefined ? [] : [args.goal]);
      const text = goals.length > 1 ? `${goals.length} tasks: ${goals.join('; ')}` : (goals[0] ?? '');
      const line = text.split('\n', 1)[0] ?? '';
      return { title: `Delegate: ${line.length > 110 ? `${line.slice(0, 109)}…` : line}` };
    },
    async execute(args, ctx): Promise<ToolResult> {
      const delegate = ctx.services.delegate;
      if (delegate === undefined) return { content: 'delegate_task is not available in this session.', isError: true };
      if ((args.goal === undefined) === (args.tasks === undefined)) {
        return { content: 'Give either goal (one task) or tasks (several), not both.', isError: true };
      }
      const maximum = ctx.settings.maxConcurrentChildren;
      const tasks = args.tasks ?? [
        { goal: args.goal as string, ...(args.context === undefined ? {} : { context: args.context }) },
      ];
      if (tasks.length < 1 || tasks.length > maximum) {
        return {
          content: `tasks holds ${tasks.length} entries; give 1 to ${maximum} tasks per call (delegation.max_concurrent_children).`,
          isError: true,
        };
      }
      const outcome = await delegate(
        tasks.map((task) => ({ goal: task.goal, ...(task.context === undefined ? {} : { context: task.context }) })),
        ctx.signal,
      );
      if (outcome.error !== undefined) return { content: `Delegation failed: ${outcome.error}`, isError: true };
      const results = [...outcome.results].sort((left, right) => taskIndex(left) - taskIndex(right));
      const result: ToolResult = { content: JSON.stringify({ results }), structured: { results } };
      if (ctx.signal.aborted) result.status = 'cancelled';
      return result;
    },
  };
}

function taskIndex(result: JsonValue): number {
  if (
    typeof result === 'object' &&
    result !== null &&
    !Array.isArray(result) &&
    typeof result.task_index === 'number'
  ) {
    return result.task_index;
  }
  return Number.MAX_SAFE_INTEGER;
}
