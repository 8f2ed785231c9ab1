import { type AgentEvent, redactSecrets } from '@hermes/core';
import { approvalPayload } from './approval-payload.js';

/** Maps the core's `approval.resolved` source to the wire's (spec §19.7). */
export function approvalSource(source: string): 'client' | 'timeout' | 'stop' | 'error' {
  if (source === 'user') return 'client';
  if (source === 'timeout') return 'timeout';
  if (source === 'cancelled') return 'stop';
  return 'error';
}

/**
 * Maps the core events of one turn to the run events of spec §19.4, for a run (`RunRegistry`) and for a turn no run
 * started, shown through the runs API (ADR 0076). Stateful: it remembers which approvals the run announced (only
 * those get `approval.responded`) and which model messages streamed their reasoning.
 */
export class RunEventMapper {
  private readonly requested = new Set<string>();
  private readonly reasoned = new Set<string>();

  constructor(
    /** Receives each run event: its name and its payload (spec §19.4). */
    private readonly emit: (event: string, payload: Record<string, unknown>) => void,
    private readonly runId: string,
    private readonly showReasoning: boolean,
    /**
     * Whether the core's `approval.request` becomes the run's `approval.request`. A run announces its approvals from
     * its own approve callback instead; a turn shown through the runs API from the hub's events.
     */
    private readonly announceApprovals: boolean,
  ) {}

  /** Remembers an approval as announced on the run; false when it already was (a replayed request is sent once). */
  announce(requestId: string): boolean {
    if (this.requested.has(requestId)) return false;
    this.requested.add(requestId);
    return true;
  }

  /** Emits the run event of a core event, if the run stream shows anything of it. */
  push(event: AgentEvent): void {
    const mapped = this.map(event);
    if (mapped !== null) this.emit(mapped[0], mapped[1]);
  }

  private map(event: AgentEvent): readonly [string, Record<string, unknown>] | null {
    // The common case first, without building a pair for it: a streamed reply is thousands of deltas.
    if (event.type === 'message.delta') {
      if (event.text) this.emit('message.delta', { delta: event.text });
      return null;
    }
    switch (event.type) {
      case 'message.end':
        return event.hasToolCalls && event.text
          ? ['message.interim', { text: event.text, already_streamed: true }]
          : null;
      case 'reasoning.delta':
        this.reasoned.add(event.messageId);
        return this.showReasoning ? ['reasoning.delta', { delta: event.text }] : null;
      case 'reasoning.end':
        // Reasoning that was not streamed arrives whole (spec §22.2).
        return this.showReasoning && !this.reasoned.has(event.messageId) && event.text
          ? ['reasoning.available', { text: event.text }]
          : null;
      case 'tool.start':
        return [
          'tool.started',
          { tool: event.name, tool_call_id: event.callId, preview: redactSecrets(event.title).slice(0, 200) },
        ];
      case 'tool.end':
        return [
          'tool.completed',
          {
            tool: event.name,
            tool_call_id: event.callId,
            duration: Math.round(event.durationMs) / 1000,
            error: event.status !== 'completed',
            preview: redactSecrets(event.result).slice(0, 500),
          },
        ];
      case 'subagent.start':
        return [
          'subagent.start',
          {
            subagent_id: event.childId,
            child_session_id: event.childSessionId,
            task_index: event.taskIndex,
            goal: redactSecrets(event.goal),
            model: event.model?.spec ?? null,
          },
        ];
      case 'subagent.end':
        return [
          'subagent.complete',
          {
            subagent_id: event.childId,
            status: event.status,
            summary: redactSecrets(event.summary),
            exit_reason: event.exitReason,
            input_tokens: event.usage.inputTokens,
            output_tokens: event.usage.outputTokens,
          },
        ];
      case 'approval.request': {
        if (!this.announceApprovals) {
          this.requested.add(event.request.requestId);
          return null;
        }
        if (!this.announce(event.request.requestId)) return null;
        const { run_id: _runId, ...payload } = approvalPayload(this.runId, event.request);
        return ['approval.request', payload];
      }
      case 'approval.resolved':
        return this.requested.has(event.requestId)
          ? [
              'approval.responded',
              {
                choice: event.choice ?? 'deny',
                request_id: event.requestId,
                resolved: 1,
                source: approvalSource(event.source),
              },
            ]
          : null;
      default:
        return null;
    }
  }
}
