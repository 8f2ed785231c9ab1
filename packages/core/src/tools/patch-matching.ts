/**
 * The matching strategies of `patch` (spec/core.md §11.4), tried in order; the first that finds
 * matches wins: exact; line endings normalized; trailing whitespace ignored per line;
 * indentation ignored per line (the replacement re-indented by the same offset).
 */

/** Names of the strategies, as reported in `structured.strategy`. */
export type PatchStrategy = 'exact' | 'line_endings' | 'trailing_whitespace' | 'indentation';

/** One region of the original text to replace. */
export interface PatchMatch {
  start: number;
  end: number;
  replacement: string;
}

/** Matches found by the first successful strategy. */
export interface PatchMatches {
  strategy: PatchStrategy;
  matches: PatchMatch[];
}

/** Finds the regions `oldString` matches in `content`, or null when no strategy finds any. */
export function findPatchMatches(content: string, oldString: string, newString: string): PatchMatches | null {
  const exact = findExact(content, oldString, newString);
  if (exact.length > 0) return { strategy: 'exact', matches: exact };
  const crlf = content.includes('\r\n');
  if (crlf || oldString.includes('\r\n')) {
    const normalized = findNormalizedLineEndings(content, oldString, newString, crlf);
    if (normalized.length > 0) return { strategy: 'line_endings', matches: normalized };
  }
  const trailing = findByLines(content, oldString, newString, 'trailing_whitespace');
  if (trailing.length > 0) return { strategy: 'trailing_whitespace', matches: trailing };
  const indentation = findByLines(content, oldString, newString, 'indentation');
  if (indentation.length > 0) return { strategy: 'indentation', matches: indentation };
  return null;
}

/** Applies non-overlapping matches (in ascending order). */
export function applyPatchMatches(content: string, matches: readonly PatchMatch[]): string {
  let result = '';
  let position = 0;
  for (const match of matches) {
    result += content.slice(position, match.start) + match.replacement;
    position = match.end;
  }
  return result + content.slice(position);
}

function findExact(content: string, oldString: string, newString: string): PatchMatch[] {
  const matches: PatchMatch[] = [];
  for (
    let index = content.indexOf(oldString);
    index !== -1;
    index = content.indexOf(oldString, index + oldString.length)
  ) {
    matches.push({ start: index, end: index + oldString.length, replacement: newString });
  }
  return matches;
}

function toLf(text: string): string {
  return text.replace(/\r\n/g, '\n');
}

function toFileLineEndings(text: string, crlf: boolean): string {
  const lf = toLf(text);
  return crlf ? lf.replace(/\n/g, '\r\n') : lf;
}

function findNormalizedLineEndings(content: string, oldString: string, newString: string, crlf: boolean): PatchMatch[] {
  // Offsets in the LF-normalized text map back to the original through this table.
  const originalOffsets: number[] = [];
  let normalized = '';
  for (let index = 0; index < content.length; index += 1) {
    if (content[index] === '\r' && content[index + 1] === '\n') continue;
    originalOffsets.push(index);
    normalized += content[index];
  }
  originalOffsets.push(content.length);
  const wanted = toLf(oldString);
  const replacement = toFileLineEndings(newString, crlf);
  const matches: PatchMatch[] = [];
  for (
    let index = normalized.indexOf(wanted);
    index !== -1;
    index = normalized.indexOf(wanted, index + wanted.length)
  ) {
    let start = originalOffsets[index] as number;
    // A match that starts at a line break takes its "\r" along; the end is just past the last
    // matched character, so a final "\r\n" stays whole.
    if (content[start] === '\n' && content[start - 1] === '\r') start -= 1;
    const end = (originalOffsets[index + wanted.length - 1] as number) + 1;
    matches.push({ start, end, replacement });
  }
  return matches;
}

interface FileLine {
  start: number;
  /** End of the text, before `\r\n` or `\n`. */
  textEnd: number;
  /** End including the terminator. */
  end: number;
  text: string;
}

function fileLinesOf(content: string): FileLine[] {
  const lines: FileLine[] = [];
  let start = 0;
  while (start < content.length) {
    const newline = content.indexOf('\n', start);
    const end = newline === -1 ? content.length : newline + 1;
    let textEnd = newline === -1 ? content.length : newline;
    if (textEnd > start && content[textEnd - 1] === '\r') textEnd -= 1;
    lines.push({ start, textEnd, end, text: content.slice(start, textEnd) });
    start = end;
  }
  return lines;
}

function leadingWhitespace(text: string): string {
  return /^[ \t]*/.exec(text)?.[0] ?? '';
}

function findByLines(
  content: string,
  oldString: string,
  newString: string,
  strategy: 'trailing_whitespace' | 'indentation',
): PatchMatch[] {
  const crlf = content.includes('\r\n');
  const oldLf = toLf(oldString);
  const endsWithNewline = oldLf.endsWith('\n');
  const oldLines = (endsWithNewline ? oldLf.slice(0, -1) : oldLf).split('\n');
  const firstContentLine = oldLines.findIndex((line) => line.trim() !== '');
  // Only blank lines would match almost anywhere.
  if (firstContentLine === -1) return [];
  const normalize =
    strategy === 'trailing_whitespace' ? (line: string) => line.trimEnd() : (line: string) => line.trim();
  const wanted = oldLines.map(normalize);
  const lines = fileLinesOf(content);
  const matches: PatchMatch[] = [];
  const count = oldLines.length;
  for (let index = 0; index + count <= lines.length; ) {
    let matched = true;
    for (let offset = 0; offset < count; offset += 1) {
      if (normalize((lines[index + offset] as FileLine).text) !== wanted[offset]) {
        matched = false;
        break;
      }
    }
    if (!matched) {
      index += 1;
      continue;
    }
    const first = lines[index] as FileLine;
    const last = lines[index + count - 1] as FileLine;
    let replacement = toLf(newString);
    if (strategy === 'indentation') {
      const fileIndent = leadingWhitespace((lines[index + firstContentLine] as FileLine).text);
      const oldIndent = leadingWhitespace(oldLines[firstContentLine] as string);
      replacement = reindent(replacement, oldIndent, fileIndent);
    }
    matches.push({
      start: first.start,
      end: endsWithNewline ? last.end : last.textEnd,
      replacement: toFileLineEndings(replacement, crlf),
    });
    index += count;
  }
  return matches;
}

/** Shifts every non-blank line of `text` from `oldIndent` to `fileIndent`. */
export function reindent(text: string, oldIndent: string, fileIndent: string): string {
  if (oldIndent === fileIndent) return text;
  return text
    .split('\n')
    .map((line) => {
      if (line.trim() === '') return line;
      if (fileIndent.startsWith(oldIndent)) return fileIndent.slice(oldIndent.length) + line;
      if (oldIndent.startsWith(fileIndent)) {
        const remove = oldIndent.slice(fileIndent.length);
        if (line.startsWith(remove)) return line.slice(remove.length);
        const available = leadingWhitespace(line).length;
        return line.slice(Math.min(available, remove.length));
      }
      // Tabs against spaces: swap the prefix where the line carries it.
      return line.startsWith(oldIndent) ? fileIndent + line.slice(oldIndent.length) : line;
    })
    .join('\n');
}

/** A stretch of the file close to the text that was not found. */
export interface PatchCandidate {
  startLine: number;
  lines: string[];
  similarity: number;
}

/** Most windows compared when looking for close candidates; larger files are sampled. */
const CANDIDATE_WORK_LIMIT = 400_000;

/**
 * Up to `count` non-overlapping windows of the file most similar to `oldString` (Dice
 * coefficient of character bigrams over whitespace-trimmed lines), similarity at least 0.5.
 */
export function closestCandidates(content: string, oldString: string, count = 3): PatchCandidate[] {
  const fileLines = fileLinesOf(content).map((line) => line.text);
  const oldLines = toLf(oldString).replace(/\n$/, '').split('\n');
  const window = Math.max(1, oldLines.length);
  if (fileLines.length === 0) return [];
  const wantedBigrams = bigrams(oldLines.map((line) => line.trim()).join('\n'));
  const windows = Math.max(1, fileLines.length - window + 1);
  const stride = Math.max(1, Math.ceil((windows * window) / CANDIDATE_WORK_LIMIT));
  const scored: PatchCandidate[] = [];
  for (let start = 0; start < windows; start += stride) {
    const lines = fileLines.slice(start, start + window);
    const similarity = dice(wantedBigrams, bigrams(lines.map((line) => line.trim()).join('\n')));
    if (similarity >= 0.5) scored.push({ startLine: start + 1, lines, similarity });
  }
  scored.sort((left, right) => right.similarity - left.similarity || left.startLine - right.startLine);
  const chosen: PatchCandidate[] = [];
  for (const candidate of scored) {
    const overlaps = chosen.some(
      (other) =>
        candidate.startLine < other.startLine + other.lines.length &&
        other.startLine < candidate.startLine + candidate.lines.length,
    );
    if (!overlaps) chosen.push(candidate);
    if (chosen.length === count) break;
  }
  return chosen.sort((left, right) => left.startLine - right.startLine);
}

function bigrams(text: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (let index = 0; index + 1 < text.length; index += 1) {
    const pair = text.slice(index, index + 2);
    counts.set(pair, (counts.get(pair) ?? 0) + 1);
  }
  return counts;
}

function dice(left: Map<string, number>, right: Map<string, number>): number {
  let leftTotal = 0;
  let rightTotal = 0;
  let shared = 0;
  for (const value of left.values()) leftTotal += value;
  for (const value of right.values()) rightTotal += value;
  if (leftTotal + rightTotal === 0) return 0;
  for (const [pair, value] of left) shared += Math.min(value, right.get(pair) ?? 0);
  return (2 * shared) / (leftTotal + rightTotal);
}
