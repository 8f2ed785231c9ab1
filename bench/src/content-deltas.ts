/**
 * Counts the model's deltas in a streamed chat completion as the client reads it. A chunk may carry several deltas
 * (the server coalesces those that arrive in one burst, spec/openai-api.md §13.6), so the text is counted, not the
 * chunks: the bench's scripted model sends deltas of `deltaLength` plain ASCII characters. Frames split across reads
 * are counted once they are whole.
 */
export class ContentDeltaCounter {
  private rest = '';

  constructor(private readonly deltaLength: number) {}

  /** The deltas in the frames this piece of the body completes. */
  push(text: string): number {
    const all = this.rest + text;
    const end = all.lastIndexOf('\n\n');
    if (end < 0) {
      this.rest = all;
      return 0;
    }
    this.rest = all.slice(end + 2);
    let characters = 0;
    for (const match of all.slice(0, end).matchAll(/"content":"([^"]*)"/g)) characters += match[1]?.length ?? 0;
    return characters / this.deltaLength;
  }
}
