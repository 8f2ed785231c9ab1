import type { ChatMessage } from '@hermes/core';
import { randomHex } from '../ids.js';
import { ErrorCode } from '../wire/index.js';
import { fail, type MethodContext, requireSession, stringParam } from './context.js';

/** The prompt a `/btw` side agent answers under: the snapshot is context, not work to continue. */
const BTW_INSTRUCTION =
  'Side question about the conversation above. Answer it briefly from that conversation; do not continue or redo its work.';

/**
 * `prompt.btw`: a side question about the conversation. A separate, unsaved agent gets a snapshot
 * of the session's user and assistant messages plus the question, with the session's model and
 * working directory; its answer arrives as `btw.complete {task_id, text}`. The session's own
 * transcript, busy state and queue are untouched.
 */
export async function promptBtw(context: MethodContext): Promise<Record<string, unknown>> {
  const session = requireSession(context);
  const text = stringParam(context.params, 'text')?.trim();
  if (!text) fail(ErrorCode.textRequired, 'text required');
  const rows = await session.agent.history();
  const seed: ChatMessage[] = rows
    .filter((row) => (row.role === 'user' || row.role === 'assistant') && row.content.trim() !== '')
    .map((row) => ({ role: row.role as 'user' | 'assistant', content: row.content }));
  const taskId = `btw_${randomHex(6)}`;
  const host = context.gateway.host;
  const model = session.agent.model?.spec ?? session.modelPin ?? undefined;
  context.after(() => {
    void (async () => {
      let answer: string;
      try {
        const side = await host.newSession({
          ephemeral: true,
          cwd: session.agent.cwd,
          callbacks: session.callbacks(),
          ...(seed.length > 0 ? { seed } : {}),
          ...(model ? { model } : {}),
        });
        const watcher = setInterval(() => {
          if (session.finalized) side.interrupt({ issuer: 'user', hard: true });
        }, 200);
        try {
          const run = side.runTurn({ text: `${BTW_INSTRUCTION}\n\n${text}` });
          for await (const _ of run) {
            // Only the final answer is reported.
          }
          const result = await run.result;
          answer =
            result.outcome === 'completed' ? result.finalText : `error: ${result.error?.message ?? result.exitReason}`;
        } finally {
          clearInterval(watcher);
          await side.close().catch(() => {});
        }
      } catch (error) {
        answer = `error: ${error instanceof Error ? error.message : String(error)}`;
      }
      if (!session.finalized) session.emit('btw.complete', { task_id: taskId, text: answer });
    })();
  });
  return { task_id: taskId };
}
