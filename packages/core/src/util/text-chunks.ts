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

  /**
   * The whole text so far. With chunks pending it is joined with them in one flat string: folded onto the joined
   * text it would be a rope, and the first reader that needs it flat (the core's check for an empty answer, a JSON
   * encoding, a database binding) copies it whole once more; at a long answer's end that second copy is promoted
   * garbage (ADR 0097).
   */
  toString(): string {
    if (this.pending.length > 0) {
      if (this.joined !== '') this.pending.unshift(this.joined);
      this.joined = this.pending.join('');
      this.pending.length = 0;
    }
    return this.joined;
  }

  private fold(): void {
    this.joined += this.pending.join('');
    this.pending.length = 0;
  }
}
