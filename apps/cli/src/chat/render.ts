import { stripVTControlCharacters as stripAnsiCodes } from 'node:util';
import type { Agent, AgentEvent, FileDiff, TurnResult, Usage } from '@hermes/core';
import { highlightCode, languageOf } from './highlight.js';
import { MarkdownStream } from './markdown-stream.js';
import type { ChatOutput } from './output.js';
import type { Palette } from './style.js';

/** Lines of one diff shown before the rest is summarized; a rewrite of a big file would flood the terminal. */
export const MAX_DIFF_LINES = 120;
/** Characters of a tool result shown on its end line. */
export const MAX_RESULT_CHARS = 100;

/**
 * Colors a unified diff: file headers bold, hunk headers cyan, the `+` and `-` markers green and
 * red. The code of each line is syntax-highlighted by the file's language, taken from the full old
 * and new texts so multi-line strings and comments stay right; a file of unknown language gets
 * whole lines green or red.
 */
export function renderDiff(diff: FileDiff, palette: Palette, maxLines = MAX_DIFF_LINES): string {
  const lines = diff.unified.replace(/\n$/, '').split('\n');
  const language = palette.enabled ? languageOf(diff.path, 'path') : null;
  const highlightSide = (text: string | null) =>
    language === null || text === null ? [] : highlightCode(text, language, palette).split('\n');
  const newSide = highlightSide(diff.newText);
  const oldSide = highlightSide(diff.oldText);
  let oldLine = 0;
  let newLine = 0;
  const code = (side: string[], index: number, plain: string) => {
    const highlighted = side[index - 1];
    // A line the texts disagree on (a diff of a truncated file) falls back to plain text.
    return highlighted !== undefined && palette.enabled && stripAnsiCodes(highlighted) === plain ? highlighted : plain;
  };
  const shown = lines.slice(0, maxLines).map((line) => {
    if (line.startsWith('+++') || line.startsWith('---')) return palette.bold(line);
    if (line.startsWith('@@')) {
      const numbers = /^@@ -(\d+)(?:,\d+)? \+(\d+)/.exec(line);
      oldLine = Number(numbers?.[1] ?? 0);
      newLine = Number(numbers?.[2] ?? 0);
      return palette.cyan(line);
    }
    if (line.startsWith('+')) {
      const text = line.slice(1);
      const result = language === null ? palette.green(line) : `${palette.green('+')}${code(newSide, newLine, text)}`;
      newLine += 1;
      return result;
    }
    if (line.startsWith('-')) {
      const text = line.slice(1);
      const result = language === null ? palette.red(line) : `${palette.red('-')}${code(oldSide, oldLine, text)}`;
      oldLine += 1;
      return result;
    }
    if (line.startsWith('\\')) return palette.dim(line);
    const result = language === null ? line : ` ${code(newSide, newLine, line.slice(1))}`;
    oldLine += 1;
    newLine += 1;
    return result;
  });
  const rest = lines.length - shown.length;
  if (rest > 0) shown.push(palette.dim(`… ${rest} more diff lines`));
  if (diff.truncated) shown.push(palette.dim('… (the file is too large to show in full)'));
  return shown.join('\n');
}

/** The first meaningful line of a tool result, cut to `maxChars`. */
export function summarizeResult(result: string, maxChars = MAX_RESULT_CHARS): string {
  const first = result
    .split('\n')
    .map((line) => line.trim())
    .find((line) => line !== '');
  if (first === undefined) return '';
  const more = result.trim().includes('\n') ? ' …' : '';
  return first.length > maxChars ? `${first.slice(0, maxChars - 1)}…` : `${first}${more}`;
}

/** 1234 → "1.2k", for the status line. */
export function formatTokens(count: number): string {
  if (count < 1000) return String(count);
  if (count < 1_000_000) return `${(count / 1000).toFixed(count < 10_000 ? 1 : 0)}k`;
  return `${(count / 1_000_000).toFixed(1)}M`;
}

function formatDuration(milliseconds: number): string {
  return milliseconds < 1000 ? `${Math.round(milliseconds)} ms` : `${(milliseconds / 1000).toFixed(1)} s`;
}

/** What the status line shows about a session. */
export interface StatusLineInput {
  model: string | null;
  session: string;
  usage: Usage;
  contextRatio: number | null;
  costUsd: number | null;
  /** The chat's approval mode, shown when it is not the default. */
  approvalMode?: 'manual' | 'yolo';
}

/** "model · session · 1.2k in / 300 out · context 4% · $0.0012", dimmed. */
export function formatStatusLine(input: StatusLineInput, palette: Palette): string {
  const parts = [
    input.model ?? 'no model',
    input.session,
    `${formatTokens(input.usage.inputTokens)} in / ${formatTokens(input.usage.outputTokens)} out`,
  ];
  if (input.contextRatio !== null) parts.push(`context ${Math.round(input.contextRatio * 100)}%`);
  if (input.costUsd !== null && input.costUsd > 0) parts.push(`$${input.costUsd.toFixed(4)}`);
  const line = palette.dim(`─ ${parts.join(' · ')}`);
  if (input.approvalMode === 'yolo') return `${line}${palette.dim(' · ')}${palette.yellow('yolo')}`;
  return input.approvalMode === 'manual' ? `${line}${palette.dim(' · approvals: manual')}` : line;
}

/** The status line of an agent, from its live usage snapshot. */
export function statusLineOf(agent: Agent, palette: Palette, approvalMode?: 'manual' | 'yolo'): string {
  const usage = agent.usage();
  return formatStatusLine(
    {
      ...(approvalMode === undefined ? {} : { approvalMode }),
      model: agent.model?.spec ?? null,
      session: agent.title() ?? agent.sessionId,
      usage: usage.session,
      contextRatio: usage.context.contextWindow > 0 ? usage.context.ratio : null,
      costUsd: usage.costStatus === 'unknown' ? null : usage.costUsd,
    },
    palette,
  );
}

/**
 * Turns the events of one turn into terminal output: streamed text, dimmed reasoning, tool lines
 * with a short result and colored diffs, notices. Approval and clarify prompts are not rendered
 * here: the callbacks that answer them own the input line.
 */
export class TurnRenderer {
  readonly #output: ChatOutput;
  readonly #palette: Palette;
  #streaming: 'text' | 'reasoning' | null = null;
  #markdown: MarkdownStream | null = null;

  constructor(output: ChatOutput) {
    this.#output = output;
    this.#palette = output.palette;
  }

  /** Renders one event. */
  render(event: AgentEvent): void {
    const palette = this.#palette;
    const output = this.#output;
    switch (event.type) {
      case 'status':
        // Waiting for the model is the only silent phase: show the spinner until its first output.
        if (event.phase === 'model') {
          this.#endStream();
          output.startSpinner(event.text || 'Thinking…');
        }
        return;
      case 'reasoning.delta':
        if (this.#streaming !== 'reasoning') {
          this.#endStream();
          this.#streaming = 'reasoning';
          this.#markdown = this.#markdownStream(palette.dim);
        }
        this.#markdown?.push(event.text);
        return;
      case 'reasoning.end':
        if (this.#streaming === 'reasoning') this.#endStream();
        return;
      case 'message.delta':
        if (this.#streaming !== 'text') {
          this.#endStream();
          this.#streaming = 'text';
          this.#markdown = this.#markdownStream();
        }
        this.#markdown?.push(event.text);
        return;
      case 'message.end':
        this.#endStream();
        return;
      case 'tool.generating':
        output.stopSpinner();
        return;
      case 'tool.start':
        this.#endStream();
        output.line(`${palette.cyan('⚙')} ${palette.bold(event.title || event.name)}`);
        return;
      case 'tool.progress':
        if (event.message) output.line(palette.dim(`  ${event.message}`));
        return;
      case 'tool.end':
        this.#renderToolEnd(event);
        return;
      case 'approval.resolved':
        if (event.source !== 'user' && event.source !== 'cancelled') {
          const verdict = event.choice === 'deny' ? 'denied' : 'approved';
          output.line(palette.dim(`  ${verdict} (${event.source.replace('_', ' ')})`));
        }
        return;
      case 'clarify.resolved':
        if (event.source === 'timeout') output.line(palette.yellow('  no answer in time; the question was skipped'));
        return;
      case 'todo.updated':
        this.#endStream();
        for (const todo of event.todos) {
          const mark =
            todo.status === 'completed'
              ? palette.green('✓')
              : todo.status === 'in_progress'
                ? palette.yellow('▸')
                : todo.status === 'cancelled'
                  ? palette.dim('✗')
                  : palette.dim('○');
          output.line(`  ${mark} ${todo.status === 'cancelled' ? palette.dim(todo.content) : todo.content}`);
        }
        return;
      case 'retry':
        output.line(
          palette.yellow(
            `retrying (${event.reason.replace('_', ' ')}, attempt ${event.attempt}/${event.maxRetries}) in ${formatDuration(event.delayMs)}…`,
          ),
        );
        return;
      case 'fallback':
        output.line(
          palette.yellow(`switched to the fallback model ${event.to.spec} (${event.reason.replace('_', ' ')})`),
        );
        return;
      case 'steer.delivered':
        output.line(palette.dim(`steer delivered: ${event.text}`));
        return;
      case 'compaction.start':
        output.line(palette.dim('compressing the conversation…'));
        return;
      case 'compaction.end':
        output.line(
          event.ok
            ? palette.dim(`compressed ${event.archivedRows} messages (now ${formatTokens(event.tokensAfter)} tokens)`)
            : palette.yellow(`compression failed: ${event.error?.message ?? 'unknown error'}`),
        );
        return;
      case 'model.switched':
        output.line(palette.dim(`model: ${event.to.spec}`));
        return;
      case 'subagent.start':
        output.line(palette.dim(`  ↳ subagent: ${event.goal}`));
        return;
      case 'subagent.end':
        output.line(palette.dim(`  ↳ subagent ${event.status}: ${summarizeResult(event.summary)}`));
        return;
      case 'notice': {
        const color = event.level === 'error' ? palette.red : event.level === 'warning' ? palette.yellow : palette.dim;
        output.line(color(event.text));
        return;
      }
      default:
        return;
    }
  }

  /** Prints how the turn ended when it did not simply complete. */
  finish(result: TurnResult): void {
    this.#endStream();
    this.#output.stopSpinner();
    const palette = this.#palette;
    if (result.outcome === 'cancelled') {
      const why = result.interruptedBy?.reason ? ` (${result.interruptedBy.reason})` : '';
      this.#output.line(palette.yellow(`Interrupted${why}: the turn was cancelled.`));
    } else if (result.outcome === 'failed') {
      this.#output.line(palette.red(`Error: ${result.error?.message ?? result.exitReason}`));
    }
  }

  /** A Markdown renderer for one streamed answer (or reasoning, dimmed) on this output. */
  #markdownStream(decorate?: (line: string) => string): MarkdownStream {
    const output = this.#output;
    return new MarkdownStream({
      palette: this.#palette,
      live: output.animated,
      write: (text) => output.write(text),
      erase: (rows) => output.eraseRows(rows),
      columns: () => output.columns,
      rows: () => output.rows,
      ...(decorate === undefined ? {} : { decorate }),
    });
  }

  #endStream(): void {
    this.#markdown?.end();
    this.#markdown = null;
    if (this.#streaming !== null) this.#output.endLine();
    this.#streaming = null;
  }

  #renderToolEnd(event: Extract<AgentEvent, { type: 'tool.end' }>): void {
    const palette = this.#palette;
    const output = this.#output;
    this.#endStream();
    const summary = summarizeResult(event.result);
    const duration = palette.dim(`(${formatDuration(event.durationMs)})`);
    if (event.status === 'completed') {
      output.line(`  ${palette.green('✓')} ${event.name} ${duration}${summary ? ` ${palette.dim(summary)}` : ''}`);
    } else {
      const color = event.status === 'failed' ? palette.red : palette.yellow;
      output.line(`  ${color(`✗ ${event.name} ${event.status}`)} ${duration}${summary ? ` ${summary}` : ''}`);
    }
    for (const diff of event.diffs ?? []) output.line(renderDiff(diff, palette));
  }
}
