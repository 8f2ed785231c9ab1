import { highlightCode, languageOf } from './highlight.js';
import { renderMarkdown } from './markdown.js';
import type { Palette } from './style.js';

/** Where a {@link MarkdownStream} draws and how. */
export interface MarkdownStreamOptions {
  palette: Palette;
  /** Writes to the terminal (the chat's output, which tracks the cursor). */
  write(text: string): void;
  /** Terminal columns, read at each block so a resize applies to what follows. */
  columns(): number;
  /** Terminal rows; the open block is previewed only while it fits on the screen. */
  rows(): number;
  /** Moves the cursor to the start of the row `rows - 1` above and clears to the end of the screen. */
  erase(rows: number): void;
  /**
   * Renders and redraws the open block in place (a terminal). Off a terminal the Markdown is
   * written as it arrives, unchanged: a pipe or a log gets the model's text.
   */
  live: boolean;
  /** Styles each rendered line (reasoning is dimmed); default none. */
  decorate?: (line: string) => string;
  /** Milliseconds between two redraws of the open block (default {@link REDRAW_INTERVAL_MS}). */
  redrawIntervalMs?: number;
}

/** Milliseconds between two redraws of the open block: deltas arriving faster are batched. */
const REDRAW_INTERVAL_MS = 40;

/** A list item at the margin (a bullet or a number; an indented one is nested); group 1 is its marker. */
const LIST_ITEM = /^([-*+]|\d{1,9}[.)])(?:[ \t]|$)/;

/** What makes two items one list: the same bullet, or numbers with the same delimiter. */
function listKind(line: string): string | null {
  const marker = LIST_ITEM.exec(line)?.[1];
  if (marker === undefined) return null;
  return /\d/.test(marker) ? `1${marker.at(-1)}` : marker;
}

/** A fence line (``` or ~~~, up to three spaces in) and its info string. */
const FENCE = /^ {0,3}(`{3,}|~{3,})(.*)$/;

/**
 * Renders a streamed answer as Markdown without re-printing it per delta. Completed blocks (a
 * paragraph followed by an empty line and unindented text, a closed code fence) are rendered once
 * and committed; lines of an open code fence are committed one by one, highlighted; only the open
 * block is re-rendered, at most every {@link REDRAW_INTERVAL_MS}, and redrawn in place by moving the
 * cursor up over its previous rows.
 */
export class MarkdownStream {
  readonly #options: MarkdownStreamOptions;
  /** Text of the open (not yet committed) block, outside a code fence. */
  #pending = '';
  /** The open code fence: its closing marker, its language and the code lines seen so far. */
  #fence: { marker: string; language: string | null; lines: string[]; printed: number; indent: string } | null = null;
  /** The unfinished last line of the input (no newline yet). */
  #partial = '';
  /** Terminal rows the live preview occupies (the cursor is on its last row). */
  #liveRows = 0;
  #committedBlocks = 0;
  /** The last commit was an item of a list that goes on: the next item follows without a gap. */
  #listOpen = false;
  #dirty = false;
  #lastDraw = 0;
  #timer: NodeJS.Timeout | null = null;

  constructor(options: MarkdownStreamOptions) {
    this.#options = options;
  }

  /** Adds a delta of the answer. */
  push(delta: string): void {
    if (delta === '') return;
    if (!this.#options.live) {
      this.#options.write(this.#options.decorate ? this.#options.decorate(delta) : delta);
      return;
    }
    const text = this.#partial + delta;
    const lines = text.split('\n');
    this.#partial = lines.pop() ?? '';
    for (const line of lines) this.#line(line);
    this.#dirty = true;
    this.#scheduleDraw();
  }

  /** Ends the answer: renders and commits whatever is open. */
  end(): void {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    if (!this.#options.live) return;
    if (this.#partial !== '') this.#line(this.#partial);
    this.#partial = '';
    if (this.#fence !== null) this.#commitFenceLines();
    this.#fence = null;
    this.#commitPending();
    this.#eraseLive();
  }

  /** One complete input line. */
  #line(line: string): void {
    const fence = this.#fence;
    if (fence !== null) {
      const closing = FENCE.exec(line);
      if (closing?.[1]?.startsWith(fence.marker) && (closing[2] ?? '').trim() === '') {
        this.#commitFenceLines();
        this.#fence = null;
        return;
      }
      fence.lines.push(line);
      return;
    }
    const opening = FENCE.exec(line);
    if (opening && !(opening[1]?.startsWith('`') && opening[2]?.includes('`'))) {
      this.#commitPending();
      const marker = opening[1] ?? '```';
      this.#fence = {
        marker: marker.slice(0, 3),
        language: languageOf(opening[2]),
        lines: [],
        printed: 0,
        indent: '',
      };
      this.#startBlock();
      return;
    }
    // A new item of a list commits the items before it, so a long list shows as it is written
    // (rendered alone, each item keeps its number). Otherwise a block ends at an empty line
    // followed by text at the margin: an indented line after an empty one continues a list item.
    const previousBlank = this.#pending.endsWith('\n\n') || this.#pending === '\n';
    const kind = listKind(line);
    if (kind !== null && this.#pending.split('\n').some((pending) => listKind(pending) === kind))
      this.#commitPending(true);
    else if (previousBlank && line.trim() !== '' && !/^\s/.test(line)) this.#commitPending();
    this.#pending += `${line}\n`;
  }

  /** Commits the open text block, rendered; `listGoesOn` when the next line is another item. */
  #commitPending(listGoesOn = false): void {
    if (this.#pending.trim() === '') {
      this.#pending = '';
      return;
    }
    const rendered = renderMarkdown(this.#pending, this.#options.palette, { width: this.#width(), blockGap: true });
    this.#pending = '';
    if (rendered === '') return;
    this.#startBlock();
    this.#eraseLive();
    this.#options.write(`${this.#decorate(rendered)}\n`);
    this.#listOpen = listGoesOn;
  }

  /** Commits the code lines of the open fence that are not shown yet, highlighted in context. */
  #commitFenceLines(): void {
    const fence = this.#fence;
    if (fence === null || fence.printed === fence.lines.length) return;
    // Highlighting all the code so far keeps multi-line strings and comments right.
    const highlighted = highlightCode(fence.lines.join('\n'), fence.language, this.#options.palette).split('\n');
    const fresh = highlighted.slice(fence.printed).map((line) => `    ${line}`);
    fence.printed = fence.lines.length;
    this.#eraseLive();
    this.#options.write(`${this.#decorate(fresh.join('\n'))}\n`);
  }

  /** An empty line between two committed blocks (none between two items of one list). */
  #startBlock(): void {
    const sameList = this.#listOpen && this.#fence === null;
    this.#listOpen = false;
    if (this.#committedBlocks > 0 && !sameList && !(this.#fence !== null && this.#fence.printed > 0)) {
      this.#eraseLive();
      this.#options.write('\n');
    }
    this.#committedBlocks += 1;
  }

  #decorate(text: string): string {
    const decorate = this.#options.decorate;
    if (decorate === undefined) return text;
    return text
      .split('\n')
      .map((line) => (line === '' ? line : decorate(line)))
      .join('\n');
  }

  #width(): number {
    // One column spare: a line exactly as wide as the terminal leaves the cursor in a pending wrap.
    return Math.max(20, this.#options.columns() - 1);
  }

  #scheduleDraw(): void {
    const wait = (this.#options.redrawIntervalMs ?? REDRAW_INTERVAL_MS) - (Date.now() - this.#lastDraw);
    if (wait <= 0) {
      this.#draw();
      return;
    }
    if (this.#timer !== null) return;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#draw();
    }, wait);
    // A pending redraw must never keep the process alive.
    this.#timer.unref();
  }

  /** Redraws the open block in place: committed fence lines first, then the preview. */
  #draw(): void {
    if (!this.#dirty) return;
    this.#dirty = false;
    this.#lastDraw = Date.now();
    if (this.#fence !== null) {
      this.#commitFenceLines();
      this.#drawLive(this.#partial === '' ? '' : `    ${this.#partial}`);
      return;
    }
    const open = this.#pending + this.#partial;
    if (open.trim() === '') {
      this.#drawLive('');
      return;
    }
    this.#drawLive(renderMarkdown(open, this.#options.palette, { width: this.#width(), blockGap: true }));
  }

  #drawLive(text: string): void {
    const rows = text === '' ? 0 : text.split('\n').length;
    // Taller than the screen, the preview could not be erased: the block shows when it is complete.
    const shown = rows < this.#options.rows() - 1 ? text : '';
    const gap = shown !== '' && this.#committedBlocks > 0 && this.#fence === null && !this.#listOpen ? '\n' : '';
    this.#eraseLive();
    if (shown === '') return;
    this.#options.write(gap + this.#decorate(shown));
    this.#liveRows = rows + (gap === '' ? 0 : 1);
  }

  #eraseLive(): void {
    if (this.#liveRows === 0) return;
    this.#options.erase(this.#liveRows);
    this.#liveRows = 0;
  }
}
