import { randomHex } from '../ids.js';
import type { LiveSession, PendingEnvelope } from '../live-session.js';
import { ErrorCode } from '../wire/index.js';
import { booleanParam, fail, type MethodContext, requireSession, stringParam } from './context.js';
import { checkTruncation, rewindSession } from './rewind.js';

const MAX_QUEUED_SUBMISSIONS = 16;

/** The error text of an interrupt or steer whose turn runs on another instance that did not answer (ADR 0076). */
export const REMOTE_UNREACHABLE = (what: 'interrupt' | 'steer') =>
  `${what} failed: the instance running this turn did not answer; retry`;
const MAX_QUEUED_CHARACTERS = 100_000;

/** Adds input to the pending queue, merging with the last envelope of the same visibility (§8.3). */
export function enqueueInput(session: LiveSession, envelope: Omit<PendingEnvelope, 'submissions'>): void {
  const submissions = session.queue.reduce((sum, entry) => sum + entry.submissions, 0);
  const characters = session.queue.reduce((sum, entry) => sum + [...entry.text].length, 0);
  if (submissions + 1 > MAX_QUEUED_SUBMISSIONS)
    fail(ErrorCode.sessionBusy, 'pending input queue is full — retry after the current turn');
  if (characters + [...envelope.text].length > MAX_QUEUED_CHARACTERS)
    fail(ErrorCode.sessionBusy, 'pending input text capacity reached — retry after the current turn');
  const last = session.queue[session.queue.length - 1];
  if (last && last.hidden === envelope.hidden) {
    last.text = `${last.text}\n\n${envelope.text}`;
    last.images.push(...envelope.images);
    last.submissions += 1;
    if (envelope.connection) last.connection = envelope.connection;
    return;
  }
  session.queue.push({ ...envelope, submissions: 1 });
}

/** `prompt.submit` (§4.4, §7, §8). */
export async function promptSubmit(context: MethodContext) {
  const { gateway, params, connection } = context;
  const session = requireSession(context);
  const target = checkTruncation(params);
  if (session.settling) fail(ErrorCode.sessionBusy, 'session disconnect interrupt settling');
  const rawText = params.text;
  const text = typeof rawText === 'string' ? rawText : '';
  if (text.trim() === '' && session.images.length === 0) fail(ErrorCode.invalidValue, 'text is required');
  const hidden = stringParam(params, 'display_kind') === 'hidden';
  if (session.busy) {
    if (target) fail(ErrorCode.sessionBusy, 'session busy — interrupt the current turn before rewinding');
    const images = session.images.splice(0);
    let mode: string = booleanParam(params, 'queued') || session.compressing ? 'queue' : gateway.busyMode();
    const steerable = !hidden && images.length === 0;
    if (!steerable && mode !== 'queue') mode = mode === 'interrupt' ? 'interrupt-plain' : 'queue';
    gateway.attach(session, connection);
    // A turn of another instance is steered, redirected or interrupted there, through the hub (ADR 0076).
    if (session.remoteTurnId !== null && !session.running && (mode === 'interrupt' || mode === 'steer')) {
      const result = await session.steerRemoteTurn(text, mode === 'interrupt');
      if (result !== null && result !== 'unreachable' && result.status !== 'rejected')
        return { status: result.status === 'redirected' ? 'redirected' : 'steered' };
      if (mode === 'interrupt') mode = 'interrupt-plain';
    }
    if (mode === 'interrupt') {
      if (session.buildState === 'ready') {
        const partial = session.inflight?.assistant ?? '';
        const result = session.agent.redirect(text);
        if (result.status === 'redirected' || result.status === 'queued') {
          session.recordCorrection(text);
          if (result.status === 'redirected' && partial.length > 0) {
            session.emit('message.interim', { text: partial, already_streamed: true });
          }
          return { status: result.status === 'redirected' ? 'redirected' : 'steered' };
        }
      }
      mode = 'interrupt-plain';
    }
    if (mode === 'interrupt-plain') {
      enqueueInput(session, { text, hidden, images, connection });
      session.interruptTurn(false);
      if (session.remoteTurnId !== null && !session.running)
        void session.interruptRemoteTurn(false).then((outcome) => {
          if (outcome === 'unreachable') session.emit('error', { message: REMOTE_UNREACHABLE('interrupt') });
        });
      return { status: 'queued' };
    }
    if (mode === 'steer' && (session.running || session.foreignTurn)) {
      if (session.buildState !== 'ready') {
        session.heldSteers.push(text);
        session.recordCorrection(text);
        return { status: 'steered' };
      }
      const result = session.agent.steer(text);
      if (result.status === 'queued' || result.status === 'redirected') {
        session.recordCorrection(text);
        return { status: 'steered' };
      }
    }
    enqueueInput(session, { text, hidden, images, connection });
    return { status: 'queued' };
  }
  // The stored session is claimed before the rewind's awaits, so that no other surface starts a turn meanwhile.
  session.reserveTurn();
  let survivors: Record<string, unknown> = {};
  try {
    if (target) survivors = await rewindSession(session, target);
  } catch (error) {
    session.running = false;
    session.releaseTurn();
    throw error;
  }
  gateway.attach(session, connection);
  const images = session.images.splice(0);
  context.after(() => session.startTurn({ text, hidden, images }));
  return { status: 'streaming', ...survivors };
}

/** `prompt.background` (§4.4). */
export async function promptBackground(context: MethodContext) {
  const session = requireSession(context);
  const text = stringParam(context.params, 'text');
  if (!text) fail(ErrorCode.textRequired, 'text required');
  const taskId = `bg_${randomHex(6)}`;
  const host = context.gateway.host;
  context.after(() => {
    void (async () => {
      let message: string;
      try {
        const side = await host.newSession({ ephemeral: true, cwd: session.agent.cwd, callbacks: session.callbacks() });
        const stop = () => side.interrupt({ issuer: 'user', hard: true });
        const watcher = setInterval(() => {
          if (session.finalized) stop();
        }, 200);
        try {
          const run = side.runTurn({ text });
          for await (const _ of run) {
            // Only the final answer is reported.
          }
          const result = await run.result;
          message =
            result.outcome === 'completed' ? result.finalText : `error: ${result.error?.message ?? result.exitReason}`;
        } finally {
          clearInterval(watcher);
          await side.close().catch(() => {});
        }
      } catch (error) {
        message = `error: ${error instanceof Error ? error.message : String(error)}`;
      }
      if (!session.finalized) session.emit('background.complete', { task_id: taskId, text: message });
    })();
  });
  return { task_id: taskId };
}

/**
 * `session.interrupt` (§4.4). A turn another instance runs on the stored session is interrupted there, through the
 * hub: the answer waits for that instance, and is an error when it does not answer (ADR 0076).
 */
export async function sessionInterrupt(context: MethodContext) {
  const session = requireSession(context);
  session.queue = [];
  session.heldSteers = [];
  context.gateway.serverRequests.withdrawAll(session, 'interrupted');
  session.interruptTurn(true);
  if (!session.running && (await session.interruptRemoteTurn(true)) === 'unreachable')
    fail(ErrorCode.genericFailure, REMOTE_UNREACHABLE('interrupt'));
  return { status: 'interrupted' };
}

/** `session.steer` (§4.4); a turn another instance runs on the stored session is steered there (ADR 0076). */
export async function sessionSteer(context: MethodContext) {
  const text = stringParam(context.params, 'text');
  if (!text) fail(ErrorCode.invalidValue, 'text is required');
  const session = requireSession(context);
  if (!session.running && session.remoteTurnId !== null) {
    const remote = await session.steerRemoteTurn(text, false);
    if (remote === 'unreachable') fail(ErrorCode.genericFailure, REMOTE_UNREACHABLE('steer'));
    return { status: remote === null || remote.status === 'rejected' ? 'rejected' : 'queued', text };
  }
  if (!session.running) return { status: 'rejected', text };
  if (session.buildState !== 'ready') {
    session.heldSteers.push(text);
    session.recordCorrection(text);
    return { status: 'queued', text };
  }
  let result: ReturnType<typeof session.agent.steer>;
  try {
    result = session.agent.steer(text);
  } catch (error) {
    fail(ErrorCode.genericFailure, `steer failed: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (result.status === 'rejected') return { status: 'rejected', text };
  session.recordCorrection(text);
  return { status: 'queued', text };
}
