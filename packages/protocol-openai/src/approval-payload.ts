import { type ApprovalRequest, redactSecrets } from '@hermes/core';

/** The approval payload of section 19.7 (without the `event`, `timestamp` and `seq` envelope). */
export function approvalPayload(runId: string, request: ApprovalRequest, now: number = Date.now()) {
  return {
    run_id: runId,
    request_id: request.requestId,
    tool_call_id: request.callId,
    command: redactSecrets(request.command),
    description: redactSecrets(request.descriptions.join('; ')),
    pattern_key: request.patternKeys[0] ?? null,
    pattern_keys: request.patternKeys,
    allow_session: request.choices.includes('session'),
    allow_permanent: request.choices.includes('always'),
    // What `always` allows from then on: exactly this command (ADR 0034).
    ...(request.alwaysScope !== undefined ? { always_scope: redactSecrets(request.alwaysScope) } : {}),
    choices: request.choices,
    timeout_s: Math.max(0, Math.floor((request.expiresAt - now) / 1000)),
    ...(request.subagent
      ? { subagent: { subagent_id: request.subagent.childId, goal: redactSecrets(request.subagent.goal) } }
      : {}),
  };
}
