import { ErrorCode } from '../wire/index.js';
import { fail, type MethodContext, requireSession, stringParam } from './context.js';

const CHOICES = ['once', 'session', 'always', 'deny'];

/** `clarify.lock` (§4.6). */
export function clarifyLock(context: MethodContext) {
  const requestId = stringParam(context.params, 'request_id');
  const questionId = stringParam(context.params, 'question_id');
  if (!requestId || !questionId) fail(ErrorCode.invalidValue, 'request_id and question_id are required');
  const request = context.gateway.serverRequests.get(requestId);
  if (!request) return { status: 'expired' };
  const questions = Array.isArray(request.params.questions)
    ? (request.params.questions as { qid: string }[]).map((question) => question.qid)
    : [];
  if (request.method !== 'clarify' || !request.locks || !questions.includes(questionId))
    fail(ErrorCode.invalidValue, `unknown question_id: ${questionId}`);
  const raw = 'answer' in context.params ? context.params.answer : '';
  const value = raw === null ? null : typeof raw === 'string' ? raw : JSON.stringify(raw);
  request.locks.set(questionId, value === '' ? null : value);
  request.session.noteActivity();
  const remaining = questions.filter((qid) => !request.locks?.has(qid));
  if (remaining.length === 0)
    request.settle({ kind: 'result', result: { __locks: Object.fromEntries(request.locks) } });
  return { status: 'ok', remaining };
}

/** `request.answer` (§4.6). */
export function requestAnswer(context: MethodContext) {
  const id = stringParam(context.params, 'id');
  const result = context.params.result;
  if (!id || typeof result !== 'object' || result === null || Array.isArray(result))
    fail(ErrorCode.invalidValue, 'id and result are required');
  if (!context.gateway.serverRequests.get(id)) return { status: 'expired' };
  const settled = context.gateway.serverRequests.answer(id, context.connection, { result });
  return { status: settled ? 'ok' : 'expired' };
}

/** `approval.pending` (§4.6). */
export function approvalPending(context: MethodContext) {
  const session = requireSession(context);
  const approvals = [...session.openRequests.values()]
    .filter((request) => request.method === 'approval')
    .map((request) => {
      const { session_id: _sessionId, subagent: _subagent, ...rest } = request.params;
      return rest;
    });
  return { approvals };
}

/** `approval.respond` (§4.6). */
export function approvalRespond(context: MethodContext) {
  const { gateway, params } = context;
  const choice = 'choice' in params && params.choice !== null ? params.choice : 'deny';
  if (typeof choice !== 'string' || !CHOICES.includes(choice))
    fail(ErrorCode.invalidValue, `invalid choice: ${String(choice)}`);
  const sessionId = stringParam(params, 'session_id');
  const requestId = stringParam(params, 'request_id');
  const approvalsOf = (session: { openRequests: Map<string, import('../server-requests.js').OpenServerRequest> }) =>
    [...session.openRequests.values()].filter((request) => request.method === 'approval');
  let session = sessionId ? gateway.sessions.get(sessionId) : undefined;
  if (!session && requestId)
    session = [...gateway.sessions.values()].find((candidate) =>
      approvalsOf(candidate).some((request) => request.params.request_id === requestId),
    );
  if (!session && sessionId) session = gateway.sessionByStoredId(sessionId);
  if (!session) return { resolved: 0 };
  const pending = approvalsOf(session);
  const targets =
    params.all === true
      ? pending
      : requestId
        ? pending.filter((request) => request.params.request_id === requestId)
        : pending.slice(0, 1);
  try {
    for (const request of targets) request.settle({ kind: 'result', result: { choice } });
  } catch (error) {
    fail(ErrorCode.approvalFailed, `approval failed: ${error instanceof Error ? error.message : String(error)}`);
  }
  return { resolved: targets.length };
}
