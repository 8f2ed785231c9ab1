import yoctoSpinner, { type Spinner } from 'yocto-spinner';
import type { Palette } from './style.js';

/**
 * The chat's view of the terminal: it remembers whether the cursor sits at the start of a line, so
 * block output (tool lines, notices) never glues onto streamed text, and it owns the spinner, which
 * must be erased before anything else is written.
 */
export class ChatOutput {
  readonly palette: Palette;
  readonly #stream: NodeJS.WritableStream & { columns?: number; rows?: number };
  readonly #animate: boolean;
  #atLineStart = true;
  #spinner: Spinner | null = null;

  /** `animate` enables the spinner and in-place redraws; only a terminal can redraw a line. */
  constructor(stream: NodeJS.WritableStream & { columns?: number; rows?: number }, palette: Palette, animate: boolean) {
    this.#stream = stream;
    this.palette = palette;
    this.#animate = animate;
  }

  /** True when the output is a terminal that can redraw (spinner, live Markdown preview). */
  get animated(): boolean {
    return this.#animate;
  }

  /** Terminal columns (80 when unknown). */
  get columns(): number {
    return this.#stream.columns && this.#stream.columns > 0 ? this.#stream.columns : 80;
  }

  /** Terminal rows (24 when unknown). */
  get rows(): number {
    return this.#stream.rows && this.#stream.rows > 0 ? this.#stream.rows : 24;
  }

  /** True when nothing has been written on the current line. */
  get atLineStart(): boolean {
    return this.#atLineStart;
  }

  /**
   * Records where the cursor is after something else (readline's prompt and echo) wrote to the
   * terminal behind this object's back.
   */
  assumeLineStart(atLineStart: boolean): void {
    this.#atLineStart = atLineStart;
  }

  /** Writes text as it comes (streamed deltas). */
  write(text: string): void {
    if (text === '') return;
    this.stopSpinner();
    this.#stream.write(text);
    this.#atLineStart = text.endsWith('\n');
  }

  /**
   * Erases the last `rows` rows, the cursor being on the last of them, and leaves the cursor at
   * the start of the first: how a live preview is redrawn.
   */
  eraseRows(rows: number): void {
    if (rows <= 0) return;
    this.stopSpinner();
    const up = rows - 1;
    this.#stream.write(`\r${up > 0 ? `\x1b[${up}A` : ''}\x1b[J`);
    this.#atLineStart = true;
  }

  /** Ends the current line if something is on it. */
  endLine(): void {
    if (!this.#atLineStart) this.write('\n');
  }

  /** Writes whole lines, starting on a fresh line. */
  line(text: string): void {
    this.endLine();
    this.write(text.endsWith('\n') ? text : `${text}\n`);
  }

  /** Shows an animated "waiting" line until the next write; does nothing off a terminal. */
  startSpinner(text: string): void {
    // yocto-spinner draws frames as separate lines where it judges the terminal non-interactive.
    if (!this.#animate || 'CI' in process.env || process.env.TERM === 'dumb') return;
    this.stopSpinner();
    this.endLine();
    // The chat handles Ctrl-C itself; the spinner must not install signal handlers of its own.
    this.#spinner = yoctoSpinner({
      text: this.palette.dim(text),
      stream: this.#stream as NodeJS.WriteStream,
      handleSignals: false,
      color: 'cyan',
    }).start();
  }

  /** Erases the spinner line, if one is shown. */
  stopSpinner(): void {
    const spinner = this.#spinner;
    if (spinner === null) return;
    this.#spinner = null;
    spinner.clear();
    spinner.stop();
  }

  /** True while the spinner is shown. */
  get spinning(): boolean {
    return this.#spinner !== null;
  }
}
