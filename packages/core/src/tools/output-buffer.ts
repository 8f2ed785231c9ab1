/**
 * Output kept as its first `headChars` and its last `tailChars` characters (the terminal's
 * foreground cap: first 20,000 and last 80,000, spec/core.md §11.6).
 */
export class HeadTailBuffer {
  private head = '';
  private tail = '';
  private total = 0;

  constructor(
    private readonly headChars: number,
    private readonly tailChars: number,
  ) {}

  append(chunk: string): void {
    this.total += chunk.length;
    let rest = chunk;
    if (this.head.length < this.headChars) {
      const room = this.headChars - this.head.length;
      this.head += rest.slice(0, room);
      rest = rest.slice(room);
    }
    if (rest === '') return;
    this.tail += rest;
    // Trimming only past twice the size keeps appends amortized linear.
    if (this.tail.length > this.tailChars * 2) this.tail = this.tail.slice(-this.tailChars);
  }

  /** The kept text, with an omission marker when something in the middle was dropped. */
  text(): { text: string; truncated: boolean } {
    const tail = this.tail.length > this.tailChars ? this.tail.slice(-this.tailChars) : this.tail;
    const omitted = this.total - this.head.length - tail.length;
    if (omitted <= 0) return { text: this.head + tail, truncated: false };
    return { text: `${this.head}\n[… ${omitted} characters of output omitted …]\n${tail}`, truncated: true };
  }
}

/**
 * The last `capacity` characters of a stream, with absolute offsets so a reader can ask for
 * what arrived since its previous read (the background process buffer, spec/core.md §11.7).
 */
export class RingBuffer {
  private text = '';
  /** Absolute offset of the first character of `text`. */
  private start = 0;

  constructor(private readonly capacity: number) {}

  append(chunk: string): void {
    this.text += chunk;
    if (this.text.length > this.capacity * 2) {
      const drop = this.text.length - this.capacity;
      this.text = this.text.slice(drop);
      this.start += drop;
    }
  }

  /** Absolute offset just past the last character written. */
  get end(): number {
    return this.start + this.text.length;
  }

  /** The retained text (at most `capacity` characters). */
  contents(): string {
    return this.text.length > this.capacity ? this.text.slice(-this.capacity) : this.text;
  }

  /** Text written since absolute offset `offset`, and how many characters of it were lost. */
  since(offset: number): { text: string; dropped: number } {
    const firstKept = this.end - this.contents().length;
    if (offset < firstKept) return { text: this.contents(), dropped: firstKept - offset };
    return { text: this.text.slice(offset - this.start), dropped: 0 };
  }
}
