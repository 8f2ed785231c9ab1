/** Lines longer than this are cut in `read_file` output. */
export const MAX_LINE_CHARS = 2000;

/**
 * Splits text into lines without their terminators. A final line terminator does not start an
 * extra empty line, and an empty text has no lines.
 */
export function splitLines(text: string): string[] {
  if (text === '') return [];
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines.map((line) => (line.endsWith('\r') ? line.slice(0, -1) : line));
}

/** Number of lines as {@link splitLines} counts them. */
export function countLines(text: string): number {
  if (text === '') return 0;
  let count = 0;
  for (let index = text.indexOf('\n'); index !== -1; index = text.indexOf('\n', index + 1)) count += 1;
  return text.endsWith('\n') ? count : count + 1;
}

/** Cuts a line over `limit` characters, with a marker saying how long it was. */
export function cutLine(line: string, limit = MAX_LINE_CHARS): { text: string; cut: boolean } {
  if (line.length <= limit) return { text: line, cut: false };
  return { text: `${line.slice(0, limit)}… [line cut: ${line.length} characters]`, cut: true };
}

/** `<line number right-aligned to 6>|<text>` (spec/core.md §11.2). */
export function numberedLine(lineNumber: number, text: string): string {
  return `${String(lineNumber).padStart(6)}|${text}`;
}

/** Keeps a string's head and tail around an omission marker when it is longer than `maxChars`. */
export function keepHeadAndTail(text: string, maxChars: number, headShare: number): string {
  if (text.length <= maxChars) return text;
  // The marker's length depends on the omitted count; two passes settle it.
  let budget = maxChars;
  let marker = '';
  for (let pass = 0; pass < 2; pass += 1) {
    marker = `\n\n[… ${text.length - budget} characters omitted …]\n\n`;
    budget = Math.max(0, maxChars - marker.length);
  }
  let head = Math.floor(budget * headShare);
  let tailStart = text.length - (budget - head);
  // Never split a surrogate pair.
  if (head > 0 && isHighSurrogate(text.charCodeAt(head - 1))) head -= 1;
  if (tailStart < text.length && isLowSurrogate(text.charCodeAt(tailStart))) tailStart += 1;
  marker = `\n\n[… ${tailStart - head} characters omitted …]\n\n`;
  return `${text.slice(0, head)}${marker}${text.slice(tailStart)}`;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

/**
 * Caps a tool result sent to the model at `maxChars`, keeping the first 80% and the last 20%
 * around an omission marker (spec/core.md §7.8). Returns the text unchanged when it fits; the
 * caller knows it was truncated when the returned string differs.
 */
export function capToolResult(text: string, maxChars: number): string {
  return keepHeadAndTail(text, maxChars, 0.8);
}

/** Cuts `text` at `maxChars` with a trailing marker (for diffs and fetched pages). */
export function cutText(text: string, maxChars: number, what: string): { text: string; truncated: boolean } {
  if (text.length <= maxChars) return { text, truncated: false };
  let end = maxChars;
  if (isHighSurrogate(text.charCodeAt(end - 1))) end -= 1;
  return { text: `${text.slice(0, end)}\n[${what} cut at ${maxChars} of ${text.length} characters]`, truncated: true };
}
