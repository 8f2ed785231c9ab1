import type { StructuredPatch } from 'diff';
import type { FileDiff } from '../types.js';
import { lazyDependency } from '../util/import-on-first-use.js';

/** jsdiff, imported with the first diff a tool builds: start-up never needs it. */
const loadDiff = lazyDependency(() => import('diff'));

/** Full old and new texts travel in a FileDiff up to this many bytes each (spec/core.md §6.2). */
export const MAX_DIFF_TEXT_BYTES = 1024 * 1024;
/** The unified diff in a `write_file`/`patch` result text is cut here (spec/core.md §11.3). */
export const MAX_DIFF_RESULT_CHARS = 20_000;

/**
 * A unified diff with 3 lines of context and `--- a/<path>` / `+++ b/<path>` headers
 * (`--- /dev/null` for a created file). Empty when nothing changed.
 */
export async function unifiedDiff(path: string, oldText: string | null, newText: string): Promise<string> {
  if (oldText === newText) return '';
  const { formatPatch, structuredPatch } = await loadDiff();
  const oldName = oldText === null ? '/dev/null' : `a/${path}`;
  const newName = `b/${path}`;
  const before = oldText ?? '';
  // Myers' diff costs about (old + new lines) × edit length; past this budget the whole file is
  // shown as replaced, which is still a correct diff and keeps a big rewrite from stalling a turn.
  const lines = countDiffLines(before) + countDiffLines(newText);
  const maxEditLength = Math.max(200, Math.floor(DIFF_WORK_BUDGET / Math.max(1, lines)));
  const patch =
    structuredPatch(oldName, newName, before, newText, undefined, undefined, { context: 3, maxEditLength }) ??
    replaceAllPatch(oldName, newName, before, newText);
  // formatPatch starts with a row of `=`; the headers are what tools and people expect.
  return formatPatch(patch).replace(/^(Index: [^\n]*\n)?=+\n/, '');
}

/** Upper bound of (lines × edit length) spent on one diff. */
const DIFF_WORK_BUDGET = 10_000_000;

function countDiffLines(text: string): number {
  let count = 1;
  for (let index = text.indexOf('\n'); index !== -1; index = text.indexOf('\n', index + 1)) count += 1;
  return count;
}

function diffLinesOf(text: string): { lines: string[]; missingFinalNewline: boolean } {
  if (text === '') return { lines: [], missingFinalNewline: false };
  const lines = text.split('\n');
  const missingFinalNewline = lines[lines.length - 1] !== '';
  if (!missingFinalNewline) lines.pop();
  return { lines, missingFinalNewline };
}

/** One hunk that removes every old line and adds every new one. */
function replaceAllPatch(oldName: string, newName: string, oldText: string, newText: string): StructuredPatch {
  const before = diffLinesOf(oldText);
  const after = diffLinesOf(newText);
  const lines = before.lines.map((line) => `-${line}`);
  if (before.missingFinalNewline) lines.push('\\ No newline at end of file');
  lines.push(...after.lines.map((line) => `+${line}`));
  if (after.missingFinalNewline) lines.push('\\ No newline at end of file');
  return {
    oldFileName: oldName,
    newFileName: newName,
    oldHeader: undefined,
    newHeader: undefined,
    hunks: [
      {
        oldStart: before.lines.length === 0 ? 0 : 1,
        oldLines: before.lines.length,
        newStart: after.lines.length === 0 ? 0 : 1,
        newLines: after.lines.length,
        lines,
      },
    ],
  };
}

/**
 * Builds the FileDiff of an edit: full texts when both sides are at most 1 MiB, otherwise only
 * the unified diff with `truncated` set (and empty texts; consumers render `unified` then).
 */
export async function buildFileDiff(input: {
  absolutePath: string;
  displayPath: string;
  oldText: string | null;
  newText: string;
}): Promise<FileDiff> {
  const unified = await unifiedDiff(input.displayPath, input.oldText, input.newText);
  const tooLarge =
    Buffer.byteLength(input.newText) > MAX_DIFF_TEXT_BYTES ||
    (input.oldText !== null && Buffer.byteLength(input.oldText) > MAX_DIFF_TEXT_BYTES);
  if (tooLarge) {
    return {
      path: input.absolutePath,
      oldText: input.oldText === null ? null : '',
      newText: '',
      unified,
      truncated: true,
    };
  }
  return { path: input.absolutePath, oldText: input.oldText, newText: input.newText, unified };
}
