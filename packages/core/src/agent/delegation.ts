import { newId } from '../ids.js';
import type { JsonValue } from '../types.js';
import type { ActiveTurn, SessionInternals } from './internals.js';
import { makeInterruptReason } from './interrupt.js';
import type { SubagentInfo } from './types.js';

const PROGRESS_INTERVAL_MS = 250;

/**
 * Runs `delegate_task` children (spec/core.md §14): hidden subagent sessions, all tasks at once,
 * each with its own budget, lease and usage; the call waits for every child and no child outlives it.
 */
export async function runDelegation(
  parent: SessionInternals,
  turn: ActiveTurn,
  callId: string,
  tasks: { goal: string; context?: string }[],
  signal: AbortSignal,
): Promise<{ results: JsonValue[] }> {
  const host = parent.host;
  const settings = host.settings();
  const root = parent.approvalRoot ?? parent;
  const spec = settings.delegation.model === 'main' ? (parent.route?.spec ?? null) : settings.delegation.model;

  const runOne = async (task: { goal: string; context?: string }, taskIndex: number): Promise<JsonValue> => {
    const childId = newId('sub_', 12);
    // delegation.pause: the child does not exist until the gate opens; an interrupt while held
    // ends the task without ever starting it.
    if (!(await host.spawnGate.wait(signal))) {
      return {
        task_index: taskIndex,
        status: 'interrupted',
        summary: '',
        exit_reason: 'interrupted before the subagent started (delegation was paused)',
        child_session_id: null,
        iterations: 0,
      };
    }
    const startedAt = host.clock.now();
    const child = await parent.spawnChild({
      goal: task.goal,
      childId,
      callId,
      model: spec,
      maxIterations: settings.delegation.max_iterations,
      approvalRoot: root,
    });
    let status: SubagentInfo['status'] = 'running';
    let iterations = 0;
    const info: SubagentInfo = {
      childId,
      childSessionId: child.sessionId,
      parentCallId: callId,
      goal: task.goal,
      get status() {
        return status;
      },
      startedAt,
      get iterations() {
        return iterations;
      },
      steer: (text) => child.steer(text),
      interrupt: (options) => child.interrupt(options),
    };
    parent.registerChild(info);
    parent.emitTurnEvent(turn, 'subagent.start', {
      childId,
      childSessionId: child.sessionId,
      parentCallId: callId,
      taskIndex,
      goal: task.goal,
      model: child.model,
    });
    let lastProgress = 0;
    const unsubscribe = child.subscribe((event) => {
      const now = host.clock.now();
      if (event.type === 'status') iterations = child.status().iteration;
      if (now - lastProgress < PROGRESS_INTERVAL_MS) return;
      if (event.type === 'tool.start') {
        lastProgress = now;
        parent.emitTurnEvent(turn, 'subagent.progress', { childId, kind: 'tool', name: event.name, text: event.title });
      } else if (event.type === 'status') {
        lastProgress = now;
        parent.emitTurnEvent(turn, 'subagent.progress', { childId, kind: 'status', text: event.text });
      }
    });
    const onAbort = () => child.interrupt({ issuer: 'parent_interrupted', reason: 'the parent turn was interrupted' });
    signal.addEventListener('abort', onAbort, { once: true });
    const input = task.context ? `${task.goal}\n\nContext:\n${task.context}` : task.goal;
    try {
      // Children act for the same user, so they keep the parent turn's memory scope.
      const run = child.runTurn(
        { text: input },
        {
          ...(signal.aborted ? { signal } : {}),
          ...(turn.memoryScope !== null ? { memoryScope: turn.memoryScope } : {}),
        },
      );
      const result = await run.result;
      iterations = result.iterations;
      status = result.outcome === 'completed' ? 'completed' : result.outcome === 'cancelled' ? 'interrupted' : 'failed';
      const { costUsd, status: costStatus } = { costUsd: result.cost.turnUsd ?? 0, status: result.cost.status };
      await parent.noteSubagentUsage(child.route, result.usage.turn, costUsd, costStatus);
      parent.emitTurnEvent(turn, 'subagent.end', {
        childId,
        status,
        summary: result.finalText,
        exitReason: result.exitReason,
        usage: result.usage.turn,
      });
      return {
        task_index: taskIndex,
        status,
        summary: result.finalText,
        exit_reason: result.exitReason,
        child_session_id: child.sessionId,
        iterations: result.iterations,
        duration_ms: result.durationMs,
        usage: { input_tokens: result.usage.turn.inputTokens, output_tokens: result.usage.turn.outputTokens },
        cost_usd: costUsd,
      };
    } finally {
      signal.removeEventListener('abort', onAbort);
      unsubscribe();
      // Processes started by a child die with it (spec/core.md §14).
      await child.close({ endReason: 'subagent_finished' });
    }
  };

  const results = await Promise.all(tasks.map((task, index) => runOne(task, index)));
  if (signal.aborted) {
    for (const info of parent.subagents())
      if (info.status === 'running') info.interrupt(makeInterruptReason({ issuer: 'parent_interrupted' }));
  }
  return { results };
}
