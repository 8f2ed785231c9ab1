import { homedir } from 'node:os';
import * as z from 'zod';
import { errorMessage, isNotFoundError } from './file-access.js';
import { buildFileDiff, MAX_DIFF_RESULT_CHARS } from './file-diff.js';
import { describeMissingFile, statOrNull } from './file-lookup.js';
import { applyPatchMatches, closestCandidates, findPatchMatches, type PatchStrategy } from './patch-matching.js';
import { displayPath, resolveToolPath } from './paths.js';
import { policyChangeRefusal } from './protected-paths.js';
import { cutLine, cutText, numberedLine } from './text.js';
import type { ToolDefinition, ToolResult } from './types.js';
import { writeRefusal } from './write-file.js';

const PatchArgsSchema = z.object({
  path: z
    .string()
    .min(1)
    .describe('Path of the file to edit: relative to the working directory, absolute, or starting with ~.'),
  old_string: z
    .string()
    .describe(
      'The exact text to replace, copied from the file without the line-number prefixes of read_file. Include enough surrounding lines to make it unique.',
    ),
  new_string: z.string().describe('The text to put in its place (may be empty to delete old_string).'),
  replace_all: z
    .boolean()
    .optional()
    .describe('Replace every occurrence instead of requiring exactly one. Default false.'),
});

/** Arguments of `patch` (spec/core.md §11.4). */
export type PatchArgs = z.infer<typeof PatchArgsSchema>;

const STRATEGY_LABELS: Record<PatchStrategy, string> = {
  exact: 'exact',
  line_endings: 'line-ending-insensitive',
  trailing_whitespace: 'trailing-whitespace-insensitive',
  indentation: 'indentation-insensitive',
};

/** The `patch` tool (spec/core.md §11.4). */
export function createPatchTool(): ToolDefinition<PatchArgs> {
  return {
    name: 'patch',
    description: [
      'Edit a file by replacing old_string with new_string. old_string must match exactly one place unless replace_all is set;',
      'if it matches several, add surrounding lines to make it unique. Differences in line endings, trailing whitespace and',
      'indentation are tolerated (the replacement is re-indented to match). Read the file first. The result shows a unified diff.',
      'Use write_file to create files.',
    ].join(' '),
    inputSchema: PatchArgsSchema,
    toolset: 'file',
    kind: 'edit',
    readOnly: false,
    display(args, ctx) {
      const absolutePath = resolveToolPath(args.path, ctx.cwd, ctx.homeDir ?? homedir());
      return { title: `Patch ${displayPath(absolutePath, ctx.cwd)}`, locations: [{ path: absolutePath }] };
    },
    async execute(args, ctx): Promise<ToolResult> {
      const absolutePath = resolveToolPath(args.path, ctx.cwd, ctx.settings.homeDir);
      const shown = displayPath(absolutePath, ctx.cwd);
      const locations = [{ path: absolutePath }];
      const fail = (content: string): ToolResult => ({ content, isError: true, locations });
      if (args.old_string === '')
        return fail('old_string is empty. To create a file or replace all of it, use write_file.');
      if (args.old_string === args.new_string)
        return fail('old_string and new_string are identical; there is nothing to change.');
      const refusal = await writeRefusal(absolutePath, ctx);
      if (refusal !== null) return fail(refusal);
      const stats = await statOrNull(absolutePath);
      if (stats === null) return fail(await describeMissingFile(absolutePath, ctx.cwd));
      if (stats.isDirectory()) return fail(`${shown} is a directory, not a file.`);

      let oldText: string;
      try {
        oldText = await ctx.files.readText({ sessionId: ctx.sessionId, callId: ctx.callId, path: absolutePath });
      } catch (error) {
        if (isNotFoundError(error)) return fail(await describeMissingFile(absolutePath, ctx.cwd));
        return fail(`Could not read ${shown}: ${errorMessage(error)}`);
      }
      const found = findPatchMatches(oldText, args.old_string, args.new_string);
      if (found === null) return fail(notFoundText(shown, oldText, args.old_string));
      const replacements = found.matches.length;
      if (replacements > 1 && args.replace_all !== true) {
        return fail(
          `old_string matches ${replacements} places in ${shown}; add surrounding context or set replace_all.`,
        );
      }
      const newText = applyPatchMatches(oldText, found.matches);
      const policyRefusal = await policyChangeRefusal(absolutePath, ctx, 'patch');
      if (policyRefusal !== null) return { ...policyRefusal, locations };
      try {
        await ctx.files.writeText({
          sessionId: ctx.sessionId,
          callId: ctx.callId,
          path: absolutePath,
          content: newText,
        });
      } catch (error) {
        return fail(`Could not write ${shown}: ${errorMessage(error)}`);
      }

      const firstLine = oldText.slice(0, (found.matches[0] as { start: number }).start).split('\n').length;
      const strategyNote = found.strategy === 'exact' ? '' : ` (matched ${STRATEGY_LABELS[found.strategy]})`;
      // One diff serves the result text and the FileDiff.
      const fileDiff = await buildFileDiff({ absolutePath, displayPath: shown, oldText, newText });
      return {
        content: `Patched ${shown}: ${replacements} replacement${replacements === 1 ? '' : 's'}${strategyNote}\n\n${cutText(fileDiff.unified, MAX_DIFF_RESULT_CHARS, 'diff').text}`,
        diffs: [fileDiff],
        structured: { path: shown, replacements, strategy: found.strategy },
        locations: [{ path: absolutePath, line: firstLine }],
      };
    },
  };
}

function notFoundText(shown: string, content: string, oldString: string): string {
  const candidates = closestCandidates(content, oldString);
  const head = `old_string was not found in ${shown}. The file was not changed; read it again to copy the exact current text.`;
  if (candidates.length === 0) return `${head}\nNo similar text was found.`;
  const blocks = candidates.map((candidate) => {
    const endLine = candidate.startLine + candidate.lines.length - 1;
    const lines = candidate.lines.map((line, index) =>
      numberedLine(candidate.startLine + index, cutLine(line, 500).text),
    );
    return `Lines ${candidate.startLine}–${endLine} (${Math.round(candidate.similarity * 100)}% similar):\n${lines.join('\n')}`;
  });
  return `${head}\nClosest candidates:\n\n${blocks.join('\n\n')}`;
}
