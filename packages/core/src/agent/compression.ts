import type { NewMessage } from '../store/types.js';
import { auxiliaryText } from './auxiliary.js';
import type { ActiveTurn, SessionInternals } from './internals.js';
import { isInterruptReason } from './interrupt.js';
import { rowChars, startsTurn, type TranscriptRow } from './transcript.js';
import type { CompressionResult } from './types.js';

type Trigger = 'preflight' | 'pressure' | 'post_tool' | 'overflow' | 'manual';

const COOLDOWNS_MS = [60_000, 300_000, 900_000];
const OMITTED_TOOL_OUTPUT = '[earlier tool output omitted]';

function rowTokens(row: TranscriptRow): number {
  return Math.ceil(rowChars(row) / 4);
}

/** Head, middle and tail of the transcript (spec/core.md §18.3 step 1). */
export function compressionBoundaries(
  rows: TranscriptRow[],
  options: { protectFirst: number; protectLast: number; contextWindow: number },
): { headEnd: number; tailStart: number } {
  const count = rows.length;
  let headEnd = Math.min(options.protectFirst, count);
  // Never split a tool call from its results: the head grows over results of its last call.
  while (headEnd < count && rows[headEnd]?.role === 'tool') headEnd += 1;
  let tailStart = Math.max(headEnd, count - options.protectLast);
  const tokensFrom = (start: number) => rows.slice(start).reduce((sum, row) => sum + rowTokens(row), 0);
  const max = options.contextWindow * 0.4;
  const min = options.contextWindow * 0.2;
  while (tailStart < count - 1 && tokensFrom(tailStart) > max) tailStart += 1;
  while (tailStart > headEnd && tokensFrom(tailStart - 1) <= min) tailStart -= 1;
  const lastTurnStart = rows.map((row) => startsTurn(row)).lastIndexOf(true);
  if (lastTurnStart >= headEnd && lastTurnStart < tailStart && tokensFrom(lastTurnStart) <= max)
    tailStart = lastTurnStart;
  // A tail may not start on a tool result: move back to the assistant row that called it.
  while (tailStart > headEnd && rows[tailStart]?.role === 'tool') tailStart -= 1;
  return { headEnd, tailStart };
}

function transcriptForSummary(rows: TranscriptRow[]): string {
  return rows
    .map((row) => {
      if (row.role === 'tool') {
        const text = row.content.length > 200 ? OMITTED_TOOL_OUTPUT : row.content;
        return `[tool ${row.toolName ?? ''} result]\n${text}`;
      }
      const calls = (row.toolCalls ?? [])
        .map((call) => `[calls ${call.name}(${call.arguments.slice(0, 500)})]`)
        .join('\n');
      return `[${row.role}]\n${row.content}${calls ? `\n${calls}` : ''}`;
    })
    .join('\n\n');
}

/**
 * Context compression (spec/core.md §18): checks the threshold and the cooldown, summarizes the
 * middle of the transcript with the auxiliary model, and commits head + summary + tail in one
 * transaction. A failure leaves the transcript untouched and starts a cooldown.
 */
export async function runCompression(
  agent: SessionInternals,
  request: {
    trigger: Trigger;
    force: boolean;
    focus?: string | undefined;
    keepLastN?: number | undefined;
    turn: ActiveTurn | null;
  },
): Promise<CompressionResult> {
  const settings = agent.host.settings();
  const clock = agent.host.clock;
  const tokensBefore = agent.contextEstimate();
  const window = agent.contextWindow();
  const threshold = settings.compression.threshold;
  const skip = (skipped: CompressionResult['skipped']): CompressionResult => ({
    ok: false,
    skipped,
    tokensBefore,
    tokensAfter: tokensBefore,
    archivedRows: 0,
    summaryRowId: null,
  });
  const automatic = request.trigger !== 'manual' && request.trigger !== 'overflow';
  if (automatic && !settings.compression.enabled) return skip('below_threshold');
  if (!request.force && tokensBefore < threshold * window) return skip('below_threshold');
  const modelConfig = agent.getModelConfig();
  if (
    automatic &&
    typeof modelConfig.compression_cooldown_until === 'number' &&
    clock.now() < modelConfig.compression_cooldown_until
  ) {
    return skip('cooldown');
  }
  const rows = agent.transcript;
  const { headEnd, tailStart } = compressionBoundaries(rows, {
    protectFirst: settings.compression.protect_first_n,
    protectLast: request.keepLastN ?? settings.compression.protect_last_n,
    contextWindow: window,
  });
  const middle = rows.slice(headEnd, tailStart);
  if (middle.length < 2) return skip('too_short');

  const emit = (type: 'compaction.start' | 'compaction.end', payload: Record<string, unknown>) => {
    if (request.turn) agent.emitTurnEvent(request.turn, type, payload as never);
    else agent.emitEvent(type, payload as never);
  };
  emit('compaction.start', { trigger: request.trigger, tokensBefore, threshold });
  const previousPhase = request.turn?.phase;
  if (request.turn) request.turn.phase = 'compressing';

  // A hard interrupt aborts the summary call; a soft one lets it finish and commit.
  const summaryController = new AbortController();
  const turnSignal = request.turn?.signal;
  const onTurnAbort = () => {
    const reason = turnSignal?.reason as unknown;
    if (isInterruptReason(reason) && reason.hard) summaryController.abort(reason);
  };
  turnSignal?.addEventListener('abort', onTurnAbort);
  try {
    const middleTokens = middle.reduce((sum, row) => sum + rowTokens(row), 0);
    const budget = Math.round(Math.max(2000, Math.min(Math.min(12_000, window * 0.05), middleTokens * 0.2)));
    const hasSummary = middle.some((row) => row.displayKind === 'compaction_summary');
    const instruction = [
      'Summarize the conversation excerpt below so the work can continue without it.',
      hasSummary
        ? 'It contains an earlier summary: update that summary with the newer messages rather than starting over.'
        : '',
      'Use exactly these sections: Goal; Constraints and preferences; Progress (done, in progress, blocked); Key decisions; Relevant files; Next steps; Critical context.',
      `Keep it under about ${budget} tokens.`,
      request.focus ? `Focus especially on: ${request.focus}` : '',
    ]
      .filter(Boolean)
      .join(' ');
    const summary = await auxiliaryText(
      agent,
      'compression',
      [
        { role: 'system', content: instruction },
        { role: 'user', content: [{ type: 'text', text: transcriptForSummary(middle) }] },
      ],
      { signal: summaryController.signal, maxOutputTokens: budget },
    );
    if (summary.trim() === '') throw new Error('The summarizer returned an empty summary.');
    const firstTail = rows[tailStart];
    const summaryRow: NewMessage = {
      role: firstTail?.role === 'assistant' ? 'user' : 'assistant',
      content: `[Summary of ${middle.length} earlier messages]\n\n${summary.trim()}`,
      displayKind: 'compaction_summary',
      turnId: request.turn?.turnId ?? null,
    };
    let summaryRowId: number | null = null;
    if (agent.persisted) {
      // The plan names rows by id: what the turn has not stored yet is stored first.
      await agent.commitWrites();
      const commit = await agent.host.store
        .compactInPlace(
          agent.sessionId,
          {
            middleRowIds: middle.map((row) => row.rowId).filter((id): id is number => id !== null),
            tailRowIds: rows
              .slice(tailStart)
              .map((row) => row.rowId)
              .filter((id): id is number => id !== null),
            summary: summaryRow,
          },
          agent.writeOptions(),
        )
        .catch((error: unknown) => {
          agent.noteRefusedWrite(error);
          throw error;
        });
      summaryRowId = commit.summaryRowId;
    } else {
      const inMemory: TranscriptRow = {
        rowId: null,
        turnId: summaryRow.turnId ?? null,
        role: summaryRow.role,
        content: summaryRow.content,
        contentParts: null,
        toolCalls: null,
        toolCallId: null,
        toolName: null,
        reasoning: null,
        providerMetadata: null,
        finishReason: null,
        displayKind: 'compaction_summary',
        displayMetadata: null,
        timestamp: clock.now(),
      };
      agent.transcript = [...rows.slice(0, headEnd), inMemory, ...rows.slice(tailStart)];
    }
    delete modelConfig.compression_cooldown_until;
    delete modelConfig.compression_failures;
    await agent.afterCompaction();
    await agent.saveModelConfig();
    const tokensAfter = agent.contextEstimate();
    emit('compaction.end', { ok: true, tokensAfter, archivedRows: middle.length, summaryRowId });
    return { ok: true, tokensBefore, tokensAfter, archivedRows: middle.length, summaryRowId };
  } catch (error) {
    const failures = (typeof modelConfig.compression_failures === 'number' ? modelConfig.compression_failures : 0) + 1;
    modelConfig.compression_failures = failures;
    modelConfig.compression_cooldown_until =
      clock.now() + (COOLDOWNS_MS[Math.min(failures, COOLDOWNS_MS.length) - 1] ?? 900_000);
    try {
      await agent.saveModelConfig();
    } catch {
      // the cooldown still holds in memory
    }
    const failure = { code: 'compression_failed', message: error instanceof Error ? error.message : String(error) };
    emit('compaction.end', {
      ok: false,
      tokensAfter: tokensBefore,
      archivedRows: 0,
      summaryRowId: null,
      error: failure,
    });
    return { ok: false, tokensBefore, tokensAfter: tokensBefore, archivedRows: 0, summaryRowId: null, error: failure };
  } finally {
    turnSignal?.removeEventListener('abort', onTurnAbort);
    if (request.turn && previousPhase !== undefined) request.turn.phase = previousPhase;
  }
}
