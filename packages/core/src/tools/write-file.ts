import { mkdir } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname } from 'node:path';
import * as z from 'zod';
import { errorMessage, isNotFoundError } from './file-access.js';
import { buildFileDiff, MAX_DIFF_RESULT_CHARS } from './file-diff.js';
import { statOrNull } from './file-lookup.js';
import { displayPath, matchWriteDenylist, resolveToolPath } from './paths.js';
import { policyChangeRefusal, protectedPathRefusal } from './protected-paths.js';
import { countLines, cutText } from './text.js';
import type { ToolContext, ToolDefinition, ToolResult } from './types.js';

const WriteFileArgsSchema = z.object({
  path: z
    .string()
    .min(1)
    .describe(
      'Path of the file to create or replace: relative to the working directory, absolute, or starting with ~.',
    ),
  content: z.string().describe('The complete new content of the file.'),
});

/** Arguments of `write_file` (spec/core.md §11.3). */
export type WriteFileArgs = z.infer<typeof WriteFileArgsSchema>;

/** The `write_file` tool (spec/core.md §11.3). */
export function createWriteFileTool(): ToolDefinition<WriteFileArgs> {
  return {
    name: 'write_file',
    description: [
      'Create a file or replace its whole content. Missing parent directories are created; an existing file keeps its permissions.',
      'For changes to part of an existing file prefer patch, and read the file first.',
      'The result shows a unified diff of what changed.',
    ].join(' '),
    inputSchema: WriteFileArgsSchema,
    toolset: 'file',
    kind: 'edit',
    readOnly: false,
    display(args, ctx) {
      const absolutePath = resolveToolPath(args.path, ctx.cwd, ctx.homeDir ?? homedir());
      return { title: `Write ${displayPath(absolutePath, ctx.cwd)}`, locations: [{ path: absolutePath }] };
    },
    async execute(args, ctx): Promise<ToolResult> {
      const absolutePath = resolveToolPath(args.path, ctx.cwd, ctx.settings.homeDir);
      const shown = displayPath(absolutePath, ctx.cwd);
      const locations = [{ path: absolutePath }];
      const refusal = await writeRefusal(absolutePath, ctx);
      if (refusal !== null) return { content: refusal, isError: true, locations };
      const policyRefusal = await policyChangeRefusal(absolutePath, ctx, 'write_file');
      if (policyRefusal !== null) return { ...policyRefusal, locations };

      const stats = await statOrNull(absolutePath);
      if (stats?.isDirectory())
        return { content: `${shown} is a directory; write_file writes files.`, isError: true, locations };
      let oldText: string | null = null;
      try {
        if (stats !== null)
          oldText = await ctx.files.readText({ sessionId: ctx.sessionId, callId: ctx.callId, path: absolutePath });
      } catch (error) {
        if (!isNotFoundError(error))
          return { content: `Could not read ${shown}: ${errorMessage(error)}`, isError: true, locations };
      }
      try {
        await mkdir(dirname(absolutePath), { recursive: true });
        await ctx.files.writeText({
          sessionId: ctx.sessionId,
          callId: ctx.callId,
          path: absolutePath,
          content: args.content,
        });
      } catch (error) {
        return { content: `Could not write ${shown}: ${errorMessage(error)}`, isError: true, locations };
      }

      const created = oldText === null;
      const lineCount = countLines(args.content);
      let content = `${created ? 'Created' : 'Updated'} ${shown} (${lineCount} line${lineCount === 1 ? '' : 's'})`;
      // One diff serves the result text and the FileDiff.
      const fileDiff = await buildFileDiff({ absolutePath, displayPath: shown, oldText, newText: args.content });
      if (!created) {
        content +=
          fileDiff.unified === ''
            ? '\n\nNo changes: the new content is identical.'
            : `\n\n${cutText(fileDiff.unified, MAX_DIFF_RESULT_CHARS, 'diff').text}`;
      }
      return {
        content,
        diffs: [fileDiff],
        structured: { path: shown, created, bytes: Buffer.byteLength(args.content) },
        locations,
      };
    },
  };
}

/** The refusal text when `file.protected_paths` or `file.write_denylist` covers the path, else null. */
export async function writeRefusal(absolutePath: string, ctx: ToolContext): Promise<string | null> {
  const protectedRefusal = await protectedPathRefusal(absolutePath, ctx, 'write');
  if (protectedRefusal !== null) return protectedRefusal;
  const glob = await matchWriteDenylist(absolutePath, {
    denylist: ctx.settings.writeDenylist,
    cwd: ctx.cwd,
    homeDir: ctx.settings.homeDir,
  });
  if (glob === null) return null;
  return `Refused: ${displayPath(absolutePath, ctx.cwd)} matches file.write_denylist (${glob}). The file was not touched; choose another path or ask the user.`;
}
