import * as z from 'zod';
import type { JsonValue, TodoItem } from '../types.js';
import type { ToolDefinition, ToolResult } from './types.js';

const TodoItemSchema = z.object({
  id: z.string().min(1).describe('Stable id of the item, such as "1" or "tests".'),
  content: z
    .string()
    .optional()
    .describe('What the item is about. Required for new items; when merging, omit it to keep the current text.'),
  status: z
    .enum(['pending', 'in_progress', 'completed', 'cancelled'])
    .optional()
    .describe(
      'pending, in_progress, completed or cancelled. Default pending for new items. Keep one item in_progress at a time.',
    ),
});

const TodoArgsSchema = z.object({
  todos: z.array(TodoItemSchema).optional().describe('The items to write. Leave out to read the current list.'),
  merge: z
    .boolean()
    .optional()
    .describe(
      'false (default): replace the whole list with todos. true: update the items with matching ids and append new ones.',
    ),
});

/** Arguments of `todo` (spec/core.md §11.9). */
export type TodoArgs = z.infer<typeof TodoArgsSchema>;

const STATUS_MARKS: Record<TodoItem['status'], string> = {
  pending: '[ ]',
  in_progress: '[~]',
  completed: '[x]',
  cancelled: '[-]',
};

/** The `todo` tool (spec/core.md §11.9): the agent's task list for multi-step work. */
export function createTodoTool(): ToolDefinition<TodoArgs> {
  return {
    name: 'todo',
    description: [
      'Keep a task list for multi-step work. Call without todos to read the list.',
      'With todos and merge false (default) the list is replaced; with merge true items are updated by id and new ones appended.',
      'Mark an item in_progress before starting it and completed as soon as it is done; keep only one item in_progress.',
    ].join(' '),
    inputSchema: TodoArgsSchema,
    toolset: 'interaction',
    kind: 'think',
    readOnly: (args) => args.todos === undefined,
    display(args) {
      return {
        title:
          args.todos === undefined
            ? 'Read the todo list'
            : `Update the todo list (${args.todos.length} item${args.todos.length === 1 ? '' : 's'})`,
      };
    },
    async execute(args, ctx): Promise<ToolResult> {
      const current = ctx.services.todos.get();
      if (args.todos === undefined) return todoResult(current);

      const merging = args.merge === true;
      const seen = new Set<string>();
      for (const item of args.todos) {
        if (seen.has(item.id)) return { content: `Duplicate todo id "${item.id}"; ids must be unique.`, isError: true };
        seen.add(item.id);
      }
      let next: TodoItem[];
      if (merging) {
        next = current.map((item) => ({ ...item }));
        for (const update of args.todos) {
          const existing = next.find((item) => item.id === update.id);
          if (existing !== undefined) {
            if (update.content !== undefined) existing.content = update.content;
            if (update.status !== undefined) existing.status = update.status;
            continue;
          }
          if (update.content === undefined || update.content === '') {
            return { content: `New todo "${update.id}" needs content.`, isError: true };
          }
          next.push({ id: update.id, content: update.content, status: update.status ?? 'pending' });
        }
      } else {
        next = [];
        for (const item of args.todos) {
          if (item.content === undefined || item.content === '') {
            return {
              content: `Todo "${item.id}" needs content (merge is false, so the list is replaced).`,
              isError: true,
            };
          }
          next.push({ id: item.id, content: item.content, status: item.status ?? 'pending' });
        }
      }
      ctx.services.todos.set(next);
      return todoResult(next);
    },
  };
}

function todoResult(todos: TodoItem[]): ToolResult {
  const json = todos.map((item) => ({ id: item.id, content: item.content, status: item.status })) as JsonValue;
  return { content: renderTodos(todos), structured: { todos: json }, displayMetadata: { todos: json } };
}

/** The checklist text of a todo list, with counts and a warning when several items are in progress. */
export function renderTodos(todos: readonly TodoItem[]): string {
  if (todos.length === 0) return 'The todo list is empty.';
  const count = (status: TodoItem['status']) => todos.filter((item) => item.status === status).length;
  const inProgress = count('in_progress');
  const parts = [
    `${count('completed')}/${todos.length} completed`,
    `${inProgress} in progress`,
    `${count('pending')} pending`,
  ];
  if (count('cancelled') > 0) parts.push(`${count('cancelled')} cancelled`);
  const lines = [
    `Todo list (${parts.join(', ')}):`,
    ...todos.map((item) => `${STATUS_MARKS[item.status]} ${item.id}. ${item.content}`),
  ];
  if (inProgress > 1)
    lines.push(`Warning: ${inProgress} items are in_progress; keep only one item in progress at a time.`);
  return lines.join('\n');
}
