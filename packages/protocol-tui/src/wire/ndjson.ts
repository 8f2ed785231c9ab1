/** A frame read from a transport: a parsed JSON value, or a line that was not JSON. */
export type InboundFrame = { kind: 'message'; message: unknown } | { kind: 'parse_error'; reason: string };

/**
 * Default cap on one inbound line: the 16 MiB the spec requires at least (§1.1). A longer line is discarded as it
 * arrives, never held whole.
 */
export const DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024;

/** The exact frame the spec prescribes for a line that is not JSON (§1.2). */
export const PARSE_ERROR_FRAME = '{"jsonrpc":"2.0","error":{"code":-32700,"message":"parse error"},"id":null}';

/**
 * Parses one frame's text: trims surrounding whitespace, skips empty text (returns null), and
 * reports JSON errors as data instead of throwing.
 */
export function parseFrameText(text: string): InboundFrame | null {
  const trimmed = text.trim();
  if (trimmed.length === 0) return null;
  try {
    return { kind: 'message', message: JSON.parse(trimmed) as unknown };
  } catch (error) {
    return { kind: 'parse_error', reason: error instanceof Error ? error.message : String(error) };
  }
}

/**
 * An outbound frame serialized once, for a frame that goes to several connections (a session event
 * fans out to every attached client, ADR 0023): each transport writes `text` instead of encoding
 * the frame again. Anything that JSON-encodes it another way gets the frame it stands for.
 */
export class EncodedFrame {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
  toJSON(): unknown {
    return JSON.parse(this.text);
  }
}

/** Serializes one outbound frame. JSON escaping keeps raw line breaks out; non-ASCII stays raw UTF-8. */
export function encodeFrame(message: unknown): string {
  return message instanceof EncodedFrame ? message.text : JSON.stringify(message);
}

/** The synchronous core of the NDJSON decoder: bytes in, the frames they complete out. */
export interface NdjsonLineReader {
  /** Takes the next chunk and returns the frames of the lines it completes, in order (often none, or many). */
  push(chunk: Uint8Array | string): InboundFrame[];
  /** The input ended: the frame of a last line without its LF, if any. */
  end(): InboundFrame[];
}

/**
 * Splits a byte stream on LF only (never on U+2028 or CR, unlike readline), with a cap on line
 * size: an over-long line is discarded up to its LF and reported as a parse error, so one bad
 * frame cannot exhaust memory. Each line is decoded as UTF-8 on its own.
 */
export function createNdjsonLineReader(options: { maxLineBytes?: number } = {}): NdjsonLineReader {
  const maxLineBytes = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
  const decoder = new TextDecoder('utf-8');
  const encoder = new TextEncoder();
  let chunks: Uint8Array[] = [];
  let size = 0;
  let overflowing = false;

  const flushLine = (out: InboundFrame[]) => {
    if (overflowing) {
      overflowing = false;
      out.push({ kind: 'parse_error', reason: `line exceeds ${maxLineBytes} bytes` });
    } else {
      const frame = parseFrameText(decoder.decode(concat(chunks, size)));
      if (frame) out.push(frame);
    }
    chunks = [];
    size = 0;
  };

  return {
    push(chunk) {
      const out: InboundFrame[] = [];
      const bytes = typeof chunk === 'string' ? encoder.encode(chunk) : chunk;
      let start = 0;
      for (;;) {
        const newline = bytes.indexOf(10, start);
        const end = newline === -1 ? bytes.length : newline;
        if (end > start && !overflowing) {
          if (size + (end - start) > maxLineBytes) {
            overflowing = true;
            chunks = [];
            size = 0;
          } else {
            chunks.push(bytes.subarray(start, end));
            size += end - start;
          }
        }
        if (newline === -1) break;
        flushLine(out);
        start = newline + 1;
      }
      return out;
    },
    end() {
      const out: InboundFrame[] = [];
      if (size > 0 || overflowing) flushLine(out);
      return out;
    },
  };
}

/** {@link createNdjsonLineReader} as a web stream: one frame per output chunk. */
export function createNdjsonDecoder(
  options: { maxLineBytes?: number } = {},
): TransformStream<Uint8Array | string, InboundFrame> {
  const lines = createNdjsonLineReader(options);
  return new TransformStream<Uint8Array | string, InboundFrame>({
    transform(chunk, controller) {
      for (const frame of lines.push(chunk)) controller.enqueue(frame);
    },
    flush(controller) {
      for (const frame of lines.end()) controller.enqueue(frame);
    },
  });
}

function concat(chunks: Uint8Array[], size: number): Uint8Array {
  if (chunks.length === 1 && chunks[0]) return chunks[0];
  const out = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.length;
  }
  return out;
}
