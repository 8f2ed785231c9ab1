import { stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { relative, sep } from 'node:path';
import * as z from 'zod';
import { errorMessage } from './file-access.js';
import { statOrNull } from './file-lookup.js';
import { loadPicomatch } from './glob-match.js';
import { displayPath, resolveToolPath } from './paths.js';
import { createProtectedPathChecker, protectedPathRefusal } from './protected-paths.js';
import { findRipgrep } from './ripgrep-path.js';
import { createRipgrepEngine } from './search-ripgrep.js';
import { type FileMatches, type SearchEngine, TooManyMatchesError } from './search-types.js';
import { createWalkerEngine } from './search-walker.js';
import { cutLine } from './text.js';
import type { ToolContext, ToolDefinition, ToolResult } from './types.js';

const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 500;
const MAX_CONTEXT = 5;
/** Matching lines a content search may collect before it asks for a narrower search. */
export const MAX_CONTENT_MATCHES = 20_000;
/** Matched lines are cut here in the output (minified files have enormous lines). */
const MAX_RESULT_LINE_CHARS = 500;

const SearchFilesArgsSchema = z.object({
  pattern: z
    .string()
    .min(1)
    .describe(
      'For target "content": a regular expression (syntax common to ripgrep and JavaScript; no look-around or backreferences). For target "files": a glob such as "*.ts" or "src/**/test_*.py", or else a case-insensitive part of the file name.',
    ),
  target: z
    .enum(['content', 'files'])
    .optional()
    .describe('"content" (default) searches inside files; "files" finds files by name.'),
  path: z
    .string()
    .optional()
    .describe(
      'Directory or file to search: relative to the working directory, absolute, or starting with ~. Default: the working directory.',
    ),
  file_glob: z
    .string()
    .optional()
    .describe(
      'Only search files matching this glob, e.g. "*.py" (matched against the file name) or "src/**/*.ts" (matched against the path below the searched directory).',
    ),
  ignore_case: z.boolean().optional().describe('Case-insensitive matching. Default false.'),
  output_mode: z
    .enum(['content', 'files_only', 'count'])
    .optional()
    .describe(
      'For target "content": "content" (default) lists matching lines as path:line:text, "files_only" lists matching files, "count" gives path:count.',
    ),
  context: z
    .number()
    .int()
    .min(0)
    .optional()
    .describe(`Lines of context around each match, 0 to ${MAX_CONTEXT}. Default 0.`),
  limit: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe(`Maximum results to return. Default ${DEFAULT_LIMIT}, at most ${MAX_LIMIT}.`),
  offset: z.number().int().min(0).optional().describe('Number of results to skip, for paging. Default 0.'),
});

/** Arguments of `search_files` (spec/core.md §11.5). */
export type SearchFilesArgs = z.infer<typeof SearchFilesArgsSchema>;

/** Options of {@link createSearchFilesTool}. */
export interface SearchFilesOptions {
  /**
   * The ripgrep executable: a path, `false` to always use the built-in walker, or `'auto'`
   * (default) for the ripgrep shipped with the core (`@vscode/ripgrep`), else `rg` found on the
   * subprocess PATH at each call.
   */
  ripgrep?: string | false | 'auto';
}

/** The `search_files` tool (spec/core.md §11.5). Results are the same with and without ripgrep. */
export function createSearchFilesTool(options: SearchFilesOptions = {}): ToolDefinition<SearchFilesArgs> {
  return {
    name: 'search_files',
    description: [
      'Search file contents with a regular expression, or find files by name (target "files").',
      'Honours .gitignore and .ignore, skips .git and binary files. Content results are "path:line:text" sorted by path and line;',
      'file results are sorted by modification time, newest first. Results are paged with limit and offset.',
      'Prefer this over running grep or find in the terminal.',
    ].join(' '),
    inputSchema: SearchFilesArgsSchema,
    toolset: 'file',
    kind: 'search',
    readOnly: true,
    display(args, ctx) {
      const root = resolveToolPath(args.path ?? '.', ctx.cwd, ctx.homeDir ?? homedir());
      const where = args.path === undefined ? '' : ` in ${displayPath(root, ctx.cwd)}`;
      const title =
        args.target === 'files' ? `Find files "${args.pattern}"${where}` : `Search "${args.pattern}"${where}`;
      return { title: title.length > 120 ? `${title.slice(0, 119)}…` : title, locations: [{ path: root }] };
    },
    async execute(args, ctx) {
      return searchFiles(args, ctx, await selectEngine(options.ripgrep ?? 'auto', ctx));
    },
  };
}

async function selectEngine(ripgrep: string | false | 'auto', ctx: ToolContext): Promise<SearchEngine> {
  if (ripgrep === false) return createWalkerEngine();
  const executable = ripgrep === 'auto' ? await findRipgrep(ctx.env.PATH ?? process.env.PATH) : ripgrep;
  return executable === null ? createWalkerEngine() : createRipgrepEngine(executable);
}

/** Compiles the pattern as the walker will; `u` is dropped only when the pattern needs that. */
function compilePattern(pattern: string, ignoreCase: boolean): { flags: string } | { error: string } {
  if (/\(\?<?[=!]/.test(pattern) || /(^|[^\\])\\[1-9]/.test(pattern) || pattern.includes('\\k<')) {
    return {
      error:
        'The pattern uses look-around or a backreference, which search_files does not support (ripgrep has neither).',
    };
  }
  const base = ignoreCase ? 'i' : '';
  try {
    new RegExp(pattern, `${base}u`);
    return { flags: `${base}u` };
  } catch {
    try {
      new RegExp(pattern, base);
      return { flags: base };
    } catch (error) {
      return { error: `Invalid regular expression: ${errorMessage(error)}` };
    }
  }
}

const GLOB_CHARACTERS = /[*?[\]{}]/;

/** Matches a file against a glob: its name when the glob has no `/`, else its path below the root. */
async function globMatcher(glob: string): Promise<(absolutePath: string, root: string) => boolean> {
  const matcher = (await loadPicomatch())(glob, { dot: true });
  if (!glob.includes('/')) return (absolutePath) => matcher(absolutePath.slice(absolutePath.lastIndexOf(sep) + 1));
  return (absolutePath, root) => matcher(relative(root, absolutePath).split(sep).join('/'));
}

/** Runs a search with the given engine and formats the result (shared by both engines). */
export async function searchFiles(args: SearchFilesArgs, ctx: ToolContext, engine: SearchEngine): Promise<ToolResult> {
  const root = resolveToolPath(args.path ?? '.', ctx.cwd, ctx.settings.homeDir);
  const shownRoot = displayPath(root, ctx.cwd);
  const rootStats = await statOrNull(root);
  if (rootStats === null) return { content: `Path not found: ${shownRoot}`, isError: true };
  const rootIsFile = !rootStats.isDirectory();
  if (rootIsFile) {
    const refusal = await protectedPathRefusal(root, ctx, 'search');
    if (refusal !== null) return { content: refusal, isError: true };
  }
  // Protected files below the root are left out of every result, as if they did not exist.
  const protectedChecker = await createProtectedPathChecker(ctx.settings.protectedPaths ?? [], { root });
  const withoutProtected = async <T>(items: T[], pathOf: (item: T) => string): Promise<T[]> => {
    if (protectedChecker === null) return items;
    const verdicts = await Promise.all(items.map((item) => protectedChecker.match(pathOf(item))));
    return items.filter((_, index) => verdicts[index] === null);
  };
  const limit = Math.min(args.limit ?? DEFAULT_LIMIT, MAX_LIMIT);
  const offset = args.offset ?? 0;
  const show = (absolutePath: string) => displayPath(absolutePath, ctx.cwd);
  const fileGlob = args.file_glob === undefined || args.file_glob === '' ? null : await globMatcher(args.file_glob);
  const keepFile = (absolutePath: string) => rootIsFile || fileGlob === null || fileGlob(absolutePath, root);

  try {
    if (args.target === 'files') {
      const nameGlob = GLOB_CHARACTERS.test(args.pattern) ? await globMatcher(args.pattern) : null;
      const needle = args.pattern.toLowerCase();
      const listed = await withoutProtected(await engine.listFiles(root, rootIsFile, ctx.signal), (path) => path);
      const files = listed.filter((absolutePath) => {
        if (!keepFile(absolutePath)) return false;
        if (nameGlob !== null) return nameGlob(absolutePath, root);
        return absolutePath
          .slice(absolutePath.lastIndexOf(sep) + 1)
          .toLowerCase()
          .includes(needle);
      });
      const withTimes = await Promise.all(
        files.map(async (absolutePath) => ({ shown: show(absolutePath), mtime: await modificationTime(absolutePath) })),
      );
      withTimes.sort((left, right) => right.mtime - left.mtime || compareStrings(left.shown, right.shown));
      return page(
        withTimes.map((file) => file.shown),
        offset,
        limit,
        'No files found.',
      );
    }

    const compiled = compilePattern(args.pattern, args.ignore_case === true);
    if ('error' in compiled) return { content: compiled.error, isError: true };
    const outputMode = args.output_mode ?? 'content';
    const context = outputMode === 'content' ? Math.min(args.context ?? 0, MAX_CONTEXT) : 0;
    const basenameGlob =
      args.file_glob !== undefined && args.file_glob !== '' && !args.file_glob.includes('/') ? args.file_glob : null;
    const found = await withoutProtected(
      await engine.searchContent({
        root,
        rootIsFile,
        pattern: args.pattern,
        ignoreCase: args.ignore_case === true,
        regexFlags: compiled.flags,
        context,
        keepText: outputMode === 'content',
        basenameGlob,
        maxMatches: outputMode === 'content' ? MAX_CONTENT_MATCHES : null,
        signal: ctx.signal,
      }),
      (file) => file.absolutePath,
    );
    const files = found
      .filter((file) => keepFile(file.absolutePath))
      .map((file) => ({ ...file, shown: show(file.absolutePath) }))
      .sort((left, right) => compareStrings(left.shown, right.shown));

    if (outputMode === 'files_only')
      return page(
        files.map((file) => file.shown),
        offset,
        limit,
        'No matches found.',
      );
    if (outputMode === 'count')
      return page(
        files.map((file) => `${file.shown}:${file.matches.size}`),
        offset,
        limit,
        'No matches found.',
      );
    return contentPage(files, offset, limit, context);
  } catch (error) {
    if (error instanceof TooManyMatchesError) {
      return {
        content: `More than ${error.limit} matching lines. Narrow the pattern, the path or file_glob, or use output_mode "count" or "files_only".`,
        isError: true,
      };
    }
    if (ctx.signal.aborted) return { content: 'Search cancelled.', status: 'cancelled' };
    return { content: `Search failed: ${errorMessage(error)}`, isError: true };
  }
}

async function modificationTime(absolutePath: string): Promise<number> {
  try {
    return (await stat(absolutePath)).mtimeMs;
  } catch {
    return 0;
  }
}

/** Plain code-unit order, the same on every platform and locale. */
function compareStrings(left: string, right: string): number {
  return left < right ? -1 : left > right ? 1 : 0;
}

function footer(total: number, offset: number, returned: number): string | null {
  const remaining = total - offset - returned;
  return remaining > 0
    ? `[${remaining} more result${remaining === 1 ? '' : 's'}; use offset=${offset + returned}]`
    : null;
}

function page(entries: string[], offset: number, limit: number, empty: string): ToolResult {
  const total = entries.length;
  const slice = entries.slice(offset, offset + limit);
  const more = footer(total, offset, slice.length);
  let content: string;
  if (total === 0) content = empty;
  else if (slice.length === 0) content = `No results at offset ${offset}; there are ${total}.`;
  else content = [...slice, ...(more === null ? [] : [more])].join('\n');
  return { content, structured: { total, returned: slice.length, offset, truncated: more !== null } };
}

function contentPage(
  files: (FileMatches & { shown: string })[],
  offset: number,
  limit: number,
  context: number,
): ToolResult {
  const all: { file: FileMatches & { shown: string }; line: number }[] = [];
  for (const file of files) {
    for (const line of [...file.matches.keys()].sort((left, right) => left - right)) all.push({ file, line });
  }
  const total = all.length;
  const slice = all.slice(offset, offset + limit);
  const more = footer(total, offset, slice.length);
  if (total === 0)
    return { content: 'No matches found.', structured: { total: 0, returned: 0, offset, truncated: false } };
  if (slice.length === 0) {
    return {
      content: `No results at offset ${offset}; there are ${total}.`,
      structured: { total, returned: 0, offset, truncated: false },
    };
  }
  const output: string[] = [];
  const text = (value: string) => cutLine(value, MAX_RESULT_LINE_CHARS).text;
  if (context === 0) {
    for (const entry of slice)
      output.push(`${entry.file.shown}:${entry.line}:${text(entry.file.matches.get(entry.line) ?? '')}`);
  } else {
    // Context blocks of the page's matches, merged when they touch, separated by `--`.
    const blocks: { file: FileMatches & { shown: string }; first: number; last: number }[] = [];
    for (const entry of slice) {
      const first = Math.max(1, entry.line - context);
      const last = entry.line + context;
      const previous = blocks[blocks.length - 1];
      if (previous !== undefined && previous.file === entry.file && first <= previous.last + 1)
        previous.last = Math.max(previous.last, last);
      else blocks.push({ file: entry.file, first, last });
    }
    blocks.forEach((block, index) => {
      if (index > 0) output.push('--');
      for (let line = block.first; line <= block.last; line += 1) {
        const match = block.file.matches.get(line);
        if (match !== undefined) output.push(`${block.file.shown}:${line}:${text(match)}`);
        else {
          const contextLine = block.file.context.get(line);
          if (contextLine !== undefined) output.push(`${block.file.shown}-${line}-${text(contextLine)}`);
        }
      }
    });
  }
  if (more !== null) output.push(more);
  return {
    content: output.join('\n'),
    structured: { total, returned: slice.length, offset, truncated: more !== null },
  };
}
