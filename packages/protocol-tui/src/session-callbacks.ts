import type {
  ApprovalChoice,
  ApprovalRequest,
  ClarifyRequest,
  ClientRequest,
  SecretRequest,
  SudoRequest,
} from '@hermes/core';
import { raiseClientRequest } from './client-requests.js';
import type { RequestSession, ServerRequestRegistry, WithdrawReason } from './server-requests.js';

/** What the model is told when an approval request was withdrawn before anyone answered it. */
const WITHDRAWN_POLICY: Record<WithdrawReason, string> = {
  resolved: 'the approval request was settled elsewhere before anyone answered it (no person denied it)',
  timeout: 'nobody answered the approval request in time (no person denied it)',
  interrupted: 'the approval request was withdrawn by an interrupt (no person denied it)',
  session_closed: 'the session closed before anyone answered the approval request (no person denied it)',
  shutdown: 'the gateway shut down before anyone answered the approval request (no person denied it)',
};

/** What a session's callbacks need of its gateway. */
export interface CallbackGateway {
  readonly serverRequests: ServerRequestRegistry;
  readonly options: { readonly secretTimeoutMs: number };
  /** Masks secrets in text shown to clients. */
  redact(text: string): string;
}

/** The params of an `approval` server request (§6.4) for a core approval request. */
export function approvalFields(
  request: ApprovalRequest,
  gateway: Pick<CallbackGateway, 'redact'>,
): Record<string, unknown> {
  const choices = request.choices;
  const fields: Record<string, unknown> = {
    request_id: request.requestId,
    command: gateway.redact(request.command),
    description: request.descriptions.join('; '),
    choices,
    allow_permanent: choices.includes('always'),
    allow_session: choices.includes('session'),
    tool_name: request.toolName,
    pattern_keys: request.patternKeys,
  };
  if (request.patternKeys[0]) fields.pattern_key = request.patternKeys[0];
  // `always` allows exactly this command from then on; a client shows "always allow `<always_scope>`".
  if (request.alwaysScope !== undefined) fields.always_scope = gateway.redact(request.alwaysScope);
  if (request.subagent) fields.subagent = { child_id: request.subagent.childId, goal: request.subagent.goal };
  return fields;
}

/** The client's answer to an approval as a choice the request offers; anything else is `deny` (§4.6). */
export function pickApprovalChoice(choice: unknown, choices: readonly ApprovalChoice[]): ApprovalChoice {
  return typeof choice === 'string' && (choices as readonly string[]).includes(choice)
    ? (choice as ApprovalChoice)
    : 'deny';
}

/** An answer with `all: true` settles every other open approval of the session with the same choice. */
export function settleAllApprovals(session: RequestSession, choice: ApprovalChoice): void {
  for (const other of [...session.openRequests.values()]) {
    if (other.method === 'approval') other.settle({ kind: 'result', result: { choice } });
  }
}

/** Host callbacks of a session: human prompts become server requests (§6). */
export function sessionCallbacks(session: RequestSession, gateway: CallbackGateway) {
  const registry = gateway.serverRequests;
  return {
    approve: async (request: ApprovalRequest, signal: AbortSignal) => {
      const choices = request.choices;
      // A turn another surface started on this agent without an approve callback of its own reaches these callbacks
      // too; the session already shows its approval from the core's hub, whose answer settles this wait (ADR 0053).
      const shown = [...session.openRequests.values()].some(
        (open) => open.method === 'approval' && open.params.request_id === request.requestId,
      );
      if (shown)
        return new Promise<never>((_resolve, reject) => {
          if (signal.aborted) reject(signal.reason);
          signal.addEventListener('abort', () => reject(signal.reason), { once: true });
        });
      const fields = approvalFields(request, gateway);
      const outcome = await registry.raise(session, 'approval', fields, { signal });
      if (outcome.kind === 'declined') throw new Error('no attached client can answer approval requests');
      // Nobody answered: the model is told the system refused it, never that the user denied it.
      if (outcome.kind === 'withdrawn') return { choice: 'deny' as const, policy: WITHDRAWN_POLICY[outcome.reason] };
      const picked = pickApprovalChoice(outcome.result.choice, choices);
      if (outcome.result.all === true) settleAllApprovals(session, picked);
      return picked;
    },
    clarify: async (request: ClarifyRequest, signal: AbortSignal) => {
      const batch = request.questions && request.questions.length >= 2 ? request.questions : null;
      const fields: Record<string, unknown> = batch
        ? {
            questions: batch.map((question) => ({
              qid: question.id,
              question: question.question,
              choices: question.choices && question.choices.length > 0 ? question.choices : null,
              multi_select: question.multiSelect ?? false,
            })),
          }
        : {
            question: request.question,
            choices: request.choices.length > 0 ? request.choices : null,
            ...(request.multiSelect ? { multi_select: true } : {}),
          };
      const outcome = await registry.raise(session, 'clarify', fields, {
        signal,
        ...(batch ? { batchQuestionIds: batch.map((question) => question.id) } : {}),
      });
      if (batch) {
        const answers: Record<string, string | string[] | null> = {};
        for (const question of batch) answers[question.id] = null;
        if (outcome.kind === 'result') {
          const locks = outcome.result.__locks as Record<string, string | null> | undefined;
          if (locks) Object.assign(answers, locks);
          const given = outcome.result.answers;
          if (typeof given === 'object' && given !== null) {
            for (const [qid, value] of Object.entries(given as Record<string, unknown>))
              answers[qid] = clarifyValue(value);
          }
        }
        return { answers };
      }
      if (outcome.kind !== 'result') return null;
      return clarifyValue(outcome.result.answer);
    },
    sudo: async (request: SudoRequest, signal: AbortSignal) => {
      const outcome = await registry.raise(
        session,
        'sudo',
        { command: gateway.redact(request.command) },
        {
          signal,
          timeoutMs: gateway.options.secretTimeoutMs,
        },
      );
      const value = outcome.kind === 'result' ? outcome.result.value : undefined;
      if (typeof value !== 'string' || value === '') throw new Error('declined');
      return { value };
    },
    secret: async (request: SecretRequest, signal: AbortSignal) => {
      const outcome = await registry.raise(
        session,
        'secret',
        { env_var: request.envVar, prompt: request.prompt },
        {
          signal,
          timeoutMs: gateway.options.secretTimeoutMs,
        },
      );
      const value = outcome.kind === 'result' ? outcome.result.value : undefined;
      if (typeof value !== 'string' || value === '') throw new Error('declined');
      return { value };
    },
    clientRequest: (request: ClientRequest, signal: AbortSignal) =>
      raiseClientRequest(registry, session, request, signal, gateway.options.secretTimeoutMs),
  };
}

function clarifyValue(value: unknown): string | string[] | null {
  if (value === undefined || value === null || value === '') return null;
  if (typeof value === 'string') return value;
  if (Array.isArray(value) && value.every((item) => typeof item === 'string')) return value as string[];
  return JSON.stringify(value);
}
