import { afterEach, describe, expect, it } from 'vitest';
import { createClarifyTool } from '../../src/tools/clarify.js';
import { createDelegateTaskTool } from '../../src/tools/delegate-task.js';
import { createTodoTool } from '../../src/tools/todo.js';
import type { ToolServices } from '../../src/tools/types.js';
import type { JsonValue } from '../../src/types.js';
import { createTestToolContext, type TestToolContext, type TestToolContextOptions } from './context.js';

const todo = createTodoTool();
const clarify = createClarifyTool();
const delegateTask = createDelegateTaskTool();
const contexts: TestToolContext[] = [];

async function context(options: TestToolContextOptions = {}): Promise<TestToolContext> {
  const created = await createTestToolContext(options);
  contexts.push(created);
  return created;
}

afterEach(async () => {
  for (const created of contexts.splice(0)) await created.cleanup();
});

describe('todo', () => {
  it('replaces the list, renders a checklist with counts, and reads it back', async () => {
    const test = await context();
    const written = await test.run(todo, {
      todos: [
        { id: '1', content: 'Write the parser', status: 'completed' },
        { id: '2', content: 'Add tests', status: 'in_progress' },
        { id: '3', content: 'Update the docs' },
      ],
    });
    const expected = [
      'Todo list (1/3 completed, 1 in progress, 1 pending):',
      '[x] 1. Write the parser',
      '[~] 2. Add tests',
      '[ ] 3. Update the docs',
    ].join('\n');
    expect(written.content).toBe(expected);
    const todos = [
      { id: '1', content: 'Write the parser', status: 'completed' },
      { id: '2', content: 'Add tests', status: 'in_progress' },
      { id: '3', content: 'Update the docs', status: 'pending' },
    ];
    expect(written.structured).toEqual({ todos });
    expect(written.displayMetadata).toEqual({ todos });
    expect(test.todos()).toEqual(todos);
    const read = await test.run(todo, {});
    expect(read.content).toBe(expected);
    expect(todo.readOnly).toBeTypeOf('function');
    expect((todo.readOnly as (args: object) => boolean)({})).toBe(true);
    expect((todo.readOnly as (args: object) => boolean)({ todos: [] })).toBe(false);
  });

  it('merges by id: updates existing items, appends new ones, keeps the rest', async () => {
    const test = await context();
    await test.run(todo, {
      todos: [
        { id: 'a', content: 'First' },
        { id: 'b', content: 'Second' },
      ],
    });
    const merged = await test.run(todo, {
      merge: true,
      todos: [
        { id: 'a', status: 'completed' },
        { id: 'c', content: 'Third', status: 'in_progress' },
      ],
    });
    expect(test.todos()).toEqual([
      { id: 'a', content: 'First', status: 'completed' },
      { id: 'b', content: 'Second', status: 'pending' },
      { id: 'c', content: 'Third', status: 'in_progress' },
    ]);
    expect(merged.content.split('\n')[0]).toBe('Todo list (1/3 completed, 1 in progress, 1 pending):');
    const missingContent = await test.run(todo, { merge: true, todos: [{ id: 'd', status: 'pending' }] });
    expect(missingContent.isError).toBe(true);
    expect(test.todos()).toHaveLength(3);
  });

  it('warns when more than one item is in progress', async () => {
    const test = await context();
    const result = await test.run(todo, {
      todos: [
        { id: '1', content: 'One', status: 'in_progress' },
        { id: '2', content: 'Two', status: 'in_progress' },
      ],
    });
    expect(result.content.split('\n').at(-1)).toBe(
      'Warning: 2 items are in_progress; keep only one item in progress at a time.',
    );
  });

  it('rejects duplicate ids and reports an empty list', async () => {
    const test = await context();
    expect(
      (
        await test.run(todo, {
          todos: [
            { id: 'x', content: 'a' },
            { id: 'x', content: 'b' },
          ],
        })
      ).isError,
    ).toBe(true);
    expect((await test.run(todo, {})).content).toBe('The todo list is empty.');
    expect((await test.run(todo, { todos: [] })).content).toBe('The todo list is empty.');
  });
});

describe('clarify', () => {
  it('is available only with a clarify callback and never to subagents', () => {
    const available = clarify.available as NonNullable<typeof clarify.available>;
    expect(available({ sessionId: 's', source: 'cli', hasClarify: true, isSubagent: false })).toBe(true);
    expect(available({ sessionId: 's', source: 'cli', hasClarify: false, isSubagent: false })).toBe(false);
    expect(available({ sessionId: 's', source: 'subagent', hasClarify: true, isSubagent: true })).toBe(false);
    expect(clarify.interactive).toBe(true);
  });

  it('passes the question and choices to the callback and returns the answer', async () => {
    const test = await context({ clarify: [{ answer: 'Postgres', timedOut: false, cancelled: false }] });
    const result = await test.run(clarify, { question: 'Which database?', choices: ['Postgres', 'SQLite'] });
    expect(test.clarifyRequests).toEqual([{ question: 'Which database?', choices: ['Postgres', 'SQLite'] }]);
    expect(result).toEqual({ content: 'User answered: Postgres', structured: { answer: 'Postgres', timedOut: false } });
  });

  it('joins multi-select answers', async () => {
    const test = await context({ clarify: [{ answer: ['a', 'b'], timedOut: false, cancelled: false }] });
    const result = await test.run(clarify, { question: 'Which?', choices: ['a', 'b', 'c'], multi_select: true });
    expect(test.clarifyRequests[0]).toMatchObject({ multiSelect: true });
    expect(result.content).toBe('User answered: a, b');
  });

  it('returns the timed-out text, the declined text, and cancels on interrupt', async () => {
    const test = await context({
      clarify: [
        { answer: null, timedOut: true, cancelled: false },
        { answer: null, timedOut: false, cancelled: false },
        { answer: null, timedOut: false, cancelled: true },
      ],
    });
    expect((await test.run(clarify, { question: 'Q?' })).content).toBe(
      'No answer within 300 s. Continue with your best judgement and state the assumption you made.',
    );
    expect((await test.run(clarify, { question: 'Q?' })).content).toBe('The user declined to answer.');
    expect((await test.run(clarify, { question: 'Q?' })).status).toBe('cancelled');
  });

  it('asks a batch of questions together and reports answers locked before a timeout', async () => {
    const test = await context({
      clarify: [{ answer: null, timedOut: true, cancelled: false, answers: { db: 'SQLite' } }],
    });
    const result = await test.run(clarify, {
      questions: [
        { id: 'db', question: 'Which database?', choices: ['SQLite', 'Postgres'] },
        { id: 'name', question: 'Project name?' },
      ],
    });
    expect(test.clarifyRequests[0]?.questions).toEqual([
      { id: 'db', question: 'Which database?', choices: ['SQLite', 'Postgres'] },
      { id: 'name', question: 'Project name?' },
    ]);
    expect(result.content).toBe(
      [
        'User answered:',
        '- db (Which database?): SQLite',
        'No answer within 300 s to: name. Continue with your best judgement and state the assumptions you made.',
      ].join('\n'),
    );
    expect(result.structured).toEqual({ answers: { db: 'SQLite' }, timedOut: true });
  });

  it('requires exactly one of question and questions', async () => {
    const test = await context();
    expect((await test.run(clarify, {})).isError).toBe(true);
    expect((await test.run(clarify, { question: 'a', questions: [{ id: 'x', question: 'b' }] })).isError).toBe(true);
  });
});

describe('delegate_task', () => {
  const summary = (index: number): JsonValue => ({
    task_index: index,
    status: 'completed',
    summary: `done ${index}`,
    exit_reason: 'text_response(finish_reason=stop)',
    child_session_id: `child_${index}`,
    iterations: 2,
    duration_ms: 10,
    usage: { input_tokens: 5, output_tokens: 3 },
    cost_usd: 0,
  });

  it('is not offered to subagents', () => {
    const available = delegateTask.available as NonNullable<typeof delegateTask.available>;
    expect(available({ sessionId: 's', source: 'cli', hasClarify: false, isSubagent: false })).toBe(true);
    expect(available({ sessionId: 's', source: 'subagent', hasClarify: false, isSubagent: true })).toBe(false);
  });

  it('runs the tasks through the delegate service and returns the results JSON in task order', async () => {
    const calls: Parameters<NonNullable<ToolServices['delegate']>>[0][] = [];
    const test = await context({
      delegate: async (tasks) => {
        calls.push(tasks);
        return { results: [summary(1), summary(0)] };
      },
    });
    const result = await test.run(delegateTask, {
      tasks: [{ goal: 'Research A', context: 'see docs/' }, { goal: 'Research B' }],
    });
    expect(calls).toEqual([[{ goal: 'Research A', context: 'see docs/' }, { goal: 'Research B' }]]);
    expect(JSON.parse(result.content)).toEqual({ results: [summary(0), summary(1)] });
    expect(result.structured).toEqual({ results: [summary(0), summary(1)] });

    const single = await test.run(delegateTask, { goal: 'One thing', context: 'ctx' });
    expect(calls[1]).toEqual([{ goal: 'One thing', context: 'ctx' }]);
    expect(single.isError).toBeUndefined();
  });

  it('four tasks give an error result; goal and tasks are exclusive', async () => {
    let called = false;
    const test = await context({
      delegate: async () => {
        called = true;
        return { results: [] };
      },
    });
    const four = await test.run(delegateTask, { tasks: [{ goal: 'a' }, { goal: 'b' }, { goal: 'c' }, { goal: 'd' }] });
    expect(four).toEqual({
      content: 'tasks holds 4 entries; give 1 to 3 tasks per call (delegation.max_concurrent_children).',
      isError: true,
    });
    expect((await test.run(delegateTask, { goal: 'a', tasks: [{ goal: 'b' }] })).isError).toBe(true);
    expect((await test.run(delegateTask, {})).isError).toBe(true);
    expect(called).toBe(false);
  });

  it('reports a missing delegate service and a delegation error', async () => {
    const without = await context();
    expect(await without.run(delegateTask, { goal: 'a' })).toEqual({
      content: 'delegate_task is not available in this session.',
      isError: true,
    });
    const failing = await context({ delegate: async () => ({ results: [], error: 'no model' }) });
    expect(await failing.run(delegateTask, { goal: 'a' })).toEqual({
      content: 'Delegation failed: no model',
      isError: true,
    });
  });
});
