import type { Palette } from './style.js';

const SPINNER_FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const SPINNER_INTERVAL_MS = 80;

/**
 * The chat's view of the terminal: it remembers whether the cursor sits at the start of a line, so
 * block output (tool lines, notices) never glues onto streamed text, and it owns the spinner, which
 * must be erased before anything else is written.
 */
export class ChatOutput {
  readonly palette: Palette;
  readonly #stream: NodeJS.WritableStream;
  readonly #animate: boolean;
  #atLineStart = true;
  #spinnerTimer: NodeJS.Timeout | null = null;
  #spinnerText = '';
  #spinnerFrame = 0;

  /** `animate` enables the spinner; only a terminal can redraw a line in place. */
  constructor(stream: NodeJS.WritableStream, palette: Palette, animate: boolean) {
    this.#stream = stream;
    this.palette = palette;
    this.#animate = animate;
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
    if (!this.#animate) return;
    this.stopSpinner();
    this.endLine();
    this.#spinnerText = text;
    this.#drawSpinner();
    this.#spinnerTimer = setInterval(() => this.#drawSpinner(), SPINNER_INTERVAL_MS);
    // A spinner must never keep the process alive on its own.
    this.#spinnerTimer.unref();
  }

  /** Erases the spinner line, if one is shown. */
  stopSpinner(): void {
    if (this.#spinnerTimer === null) return;
    clearInterval(this.#spinnerTimer);
    this.#spinnerTimer = null;
    this.#stream.write('\r\x1b[K');
  }

  /** True while the spinner is shown. */
  get spinning(): boolean {
    return this.#spinnerTimer !== null;
  }

  #drawSpinner(): void {
    const frame = SPINNER_FRAMES[this.#spinnerFrame % SPINNER_FRAMES.length] ?? '';
    this.#spinnerFrame += 1;
    this.#stream.write(`\r\x1b[K${this.palette.cyan(frame)} ${this.palette.dim(this.#spinnerText)}`);
  }
}
