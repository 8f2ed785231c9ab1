/** Chunks gathered before they are joined onto the text: one join per this many chunks. */
const FOLD_EVERY = 512;

/**
 * The text of a streamed answer, built from its deltas. Appending each delta with `+=` builds a rope of one node per
 * delta that lives as long as the answer: a 50,000-delta answer promoted 1.6 MB of rope nodes per copy into the old
 * generation (ADR 0059). Here the deltas are joined a few hundred at a time.
 */
export class TextChunks {
  private joined = '';
  private readonly pending: string[] = [];

  /** Adds the next chunk of text. */
  push(chunk: string): void {
    this.pending.push(chunk);
    if (this.pending.length >= FOLD_EVERY) this.fold();
  }

  /** The whole text so far. */
  toString(): string {
    if (this.pending.length > 0) this.fold();
    return this.joined;
  }

  private fold(): void {
    this.joined += this.pending.join('');
    this.pending.length = 0;
  }
}
