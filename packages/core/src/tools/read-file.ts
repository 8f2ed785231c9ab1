import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import * as z from 'zod';
import { errorMessage, isNotFoundError } from './file-access.js';
import { describeMissingFile, looksBinary, statOrNull } from './file-lookup.js';
import { displayPath, resolveToolPath } from './paths.js';
import { protectedPathRefusal } from './protected-paths.js';
import { countLines, cutLine, numberedLine, splitLines } from './text.js';
import type { ToolDefinition, ToolResult } from './types.js';

const DEFAULT_LIMIT = 500;
const MAX_LIMIT = 2000;

const ReadFileArgsSchema = z.object({
  path: z
    .string()
    .min(1)
    .describe(
      'Path of the file: relative to the working directory, absolute, or starting with ~ for the home directory.',
    ),
  offset: z.number().int().min(1).optional().describe('1-based line number to start reading at. Default 1.'),
  limit: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe(
      `Maximum number of lines to return. Default ${DEFAULT_LIMIT}; larger values are reduced to ${MAX_LIMIT}.`,
    ),
});

/** Arguments of `read_file` (spec/core.md §11.2). */
export type ReadFileArgs = z.infer<typeof ReadFileArgsSchema>;

/** The `read_file` tool (spec/core.md §11.2). */
export function createReadFileTool(): ToolDefinition<ReadFileArgs> {
  return {
    name: 'read_file',
    description: [
      'Read a text file. Each returned line is "<line number>|<text>"; the number and the bar are not part of the file, so leave them out of patch arguments.',
      `Returns up to ${DEFAULT_LIMIT} lines by default; when more follow, a footer gives the offset to continue from.`,
      'Read a file before editing it. Binary files and directories are refused (use search_files to list files).',
    ].join(' '),
    inputSchema: ReadFileArgsSchema,
    toolset: 'file',
    kind: 'read',
    readOnly: true,
    display(args, ctx) {
      const absolutePath = resolveToolPath(args.path, ctx.cwd, ctx.homeDir ?? homedir());
      const range = args.offset !== undefined || args.limit !== undefined ? ` (from line ${args.offset ?? 1})` : '';
      return {
        title: `Read ${displayPath(absolutePath, ctx.cwd)}${range}`,
        locations: [{ path: absolutePath, line: args.offset ?? 1 }],
      };
    },
    async execute(args, ctx): Promise<ToolResult> {
      const absolutePath = resolveToolPath(args.path, ctx.cwd, ctx.settings.homeDir);
      const shown = displayPath(absolutePath, ctx.cwd);
      const offset = args.offset ?? 1;
      const limit = Math.min(args.limit ?? DEFAULT_LIMIT, MAX_LIMIT);
      const locations = [{ path: absolutePath, line: offset }];
      const refusal = await protectedPathRefusal(absolutePath, ctx, 'read');
      if (refusal !== null) return { content: refusal, isError: true, locations };
      // Existence, directories and binary detection use the local file system, also when an
      // editor supplies the text (ACP `fs/*`): the seam only reads and writes text.
      const stats = await statOrNull(absolutePath);
      if (stats === null)
        return { content: await describeMissingFile(absolutePath, ctx.cwd), isError: true, locations };
      if (stats.isDirectory()) {
        return {
          content: `${shown} is a directory, not a file. Use search_files with target "files" to list the files in it.`,
          isError: true,
          locations,
        };
      }
      if (await looksBinary(absolutePath)) {
        return {
          content: `${shown} is a binary file (${stats.size} bytes); read_file reads text files only.`,
          isError: true,
          locations,
        };
      }

      let lines: string[];
      let totalLines: number;
      try {
        if (args.offset !== undefined || args.limit !== undefined) {
          const range = await ctx.files.readText({
            sessionId: ctx.sessionId,
            callId: ctx.callId,
            path: absolutePath,
            line: offset,
            limit,
          });
          lines = splitLines(range);
          totalLines = countLines(await readFile(absolutePath, 'utf8'));
          // An editor buffer can be longer than the saved file.
          if (lines.length > 0) totalLines = Math.max(totalLines, offset - 1 + lines.length);
        } else {
          const text = await ctx.files.readText({ sessionId: ctx.sessionId, callId: ctx.callId, path: absolutePath });
          const all = splitLines(text);
          totalLines = all.length;
          lines = all.slice(offset - 1, offset - 1 + limit);
        }
      } catch (error) {
        if (isNotFoundError(error))
          return { content: await describeMissingFile(absolutePath, ctx.cwd), isError: true, locations };
        return { content: `Could not read ${shown}: ${errorMessage(error)}`, isError: true, locations };
      }

      if (totalLines === 0) {
        return {
          content: '[empty file]',
          structured: { path: shown, startLine: 0, endLine: 0, totalLines: 0, truncated: false },
          locations,
        };
      }
      if (offset > totalLines) {
        return {
          content: `offset ${offset} is past the end of ${shown}, which has ${totalLines} line${totalLines === 1 ? '' : 's'}.`,
          isError: true,
          locations,
        };
      }
      lines = lines.slice(0, limit);
      const endLine = offset + lines.length - 1;
      let anyLineCut = false;
      const output = lines.map((line, index) => {
        const cut = cutLine(line);
        anyLineCut ||= cut.cut;
        return numberedLine(offset + index, cut.text);
      });
      const more = endLine < totalLines;
      if (more)
        output.push(`[Showing lines ${offset}–${endLine} of ${totalLines}. Use offset=${endLine + 1} to continue.]`);
      return {
        content: output.join('\n'),
        structured: { path: shown, startLine: offset, endLine, totalLines, truncated: more || anyLineCut },
        locations,
      };
    },
  };
}
