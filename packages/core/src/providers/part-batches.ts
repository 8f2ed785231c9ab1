import type { LanguageModelV3StreamPart } from '@ai-sdk/provider';

/**
 * The parts of a model stream in batches, for a reader that takes them a batch at a time (the turn loop, ADR 0024):
 * the lean OpenAI-compatible stream yields every part of one body chunk at once, and reading them one by one
 * through its `ReadableStream` cost a queue entry, a promise and a microtask per part (a 10,000-delta answer is
 * 10,000 parts).
 */
export interface PartBatches {
  /** The parts of the next body chunk (never empty), or null once the stream has ended. */
  read(): Promise<LanguageModelV3StreamPart[] | null>;
  /** Stops the stream: a pending `read` settles with null, and later ones too. */
  cancel(reason?: unknown): Promise<void>;
}

/**
 * The key of a model stream's batch reader, when its source has one. A registered symbol: the lean stream that sets it
 * is built into a bundle of its own with its own copy of this module (ADR 0092), and the turn loop reads it here.
 */
export const PART_BATCHES: unique symbol = Symbol.for('hermes.partBatches');

/**
 * The batch reader of a model stream whose source offers one, taken instead of a `getReader()`: the stream itself
 * is then locked, as it would be by a reader, so the two are never both read. Null for any other stream. Given a
 * `doStream` result, the result's own batch reader is taken when it has one (the lean stream's: its `ReadableStream`
 * is then never made, ADR 0108), else its stream's.
 */
export function partBatchesOf(
  source: ReadableStream<LanguageModelV3StreamPart> | { stream: ReadableStream<LanguageModelV3StreamPart> },
): PartBatches | null {
  const take = (source as { [PART_BATCHES]?: () => PartBatches | null })[PART_BATCHES];
  if (typeof take === 'function') return take.call(source);
  const stream = (source as { stream?: unknown }).stream;
  return typeof stream === 'object' && stream !== null
    ? partBatchesOf(stream as ReadableStream<LanguageModelV3StreamPart>)
    : null;
}
