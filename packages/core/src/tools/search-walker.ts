import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { loadPicomatch } from './glob-match.js';
import { IgnoreRules } from './search-ignore.js';
import { type FileMatches, type SearchEngine, TooManyMatchesError } from './search-types.js';

/**
 * The built-in search engine used when ripgrep is not installed. It reproduces what ripgrep
 * returns with the flags the ripgrep engine passes: hidden files included, `.git` skipped,
 * symbolic links not followed, `.gitignore`/`.ignore`/`.rgignore` honoured, files holding a NUL
 * byte skipped as binary, a UTF-8 BOM dropped and UTF-16 files with a BOM decoded.
 */
export function createWalkerEngine(): SearchEngine {
  return {
    name: 'walker',
    async listFiles(root, rootIsFile, signal) {
      if (rootIsFile) return [root];
      const files: string[] = [];
      await walk(root, new IgnoreRules(), files, signal);
      return files;
    },
    async searchContent(request) {
      const files = request.rootIsFile ? [request.root] : await this.listFiles(request.root, false, request.signal);
      const keep = request.basenameGlob === null ? null : (await loadPicomatch())(request.basenameGlob, { dot: true });
      const regex = new RegExp(request.pattern, request.regexFlags);
      const results: FileMatches[] = [];
      let total = 0;
      for (const file of files) {
        request.signal.throwIfAborted();
        if (keep !== null && !request.rootIsFile && !keep(baseNameOf(file))) continue;
        const text = await readSearchableText(file);
        if (text === null) continue;
        const lines = text.split('\n');
        if (lines[lines.length - 1] === '') lines.pop();
        const matched: number[] = [];
        for (let index = 0; index < lines.length; index += 1) {
          const line = stripCarriageReturn(lines[index] as string);
          if (regex.test(line)) matched.push(index);
        }
        if (matched.length === 0) continue;
        total += matched.length;
        if (request.maxMatches !== null && total > request.maxMatches)
          throw new TooManyMatchesError(request.maxMatches);
        const result: FileMatches = { absolutePath: file, matches: new Map(), context: new Map() };
        for (const index of matched)
          result.matches.set(index + 1, request.keepText ? stripCarriageReturn(lines[index] as string) : '');
        if (request.context > 0) {
          for (const index of matched) {
            const first = Math.max(0, index - request.context);
            const last = Math.min(lines.length - 1, index + request.context);
            for (let contextIndex = first; contextIndex <= last; contextIndex += 1) {
              if (!result.matches.has(contextIndex + 1)) {
                result.context.set(contextIndex + 1, stripCarriageReturn(lines[contextIndex] as string));
              }
            }
          }
        }
        results.push(result);
      }
      return results;
    },
  };
}

function baseNameOf(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

function stripCarriageReturn(line: string): string {
  return line.endsWith('\r') ? line.slice(0, -1) : line;
}

async function walk(directory: string, rules: IgnoreRules, files: string[], signal: AbortSignal): Promise<void> {
  signal.throwIfAborted();
  let entries: import('node:fs').Dirent[];
  try {
    entries = await readdir(directory, { withFileTypes: true });
  } catch {
    // Unreadable directories are skipped, as ripgrep does (it only warns).
    return;
  }
  for (const entry of entries) {
    if (entry.name === '.git') continue;
    const path = join(directory, entry.name);
    if (entry.isDirectory()) {
      if (!(await rules.isIgnored(path, true))) await walk(path, rules, files, signal);
    } else if (entry.isFile()) {
      if (!(await rules.isIgnored(path, false))) files.push(path);
    }
    // Symbolic links and special files are not followed, as ripgrep does by default.
  }
}

/**
 * The text ripgrep would search, or null for a binary file (a NUL byte anywhere, after
 * transcoding a UTF-16 file that starts with a BOM) or an unreadable one.
 */
export async function readSearchableText(path: string): Promise<string | null> {
  let buffer: Buffer;
  try {
    const stats = await stat(path);
    if (!stats.isFile()) return null;
    buffer = await readFile(path);
  } catch {
    return null;
  }
  let text: string;
  if (buffer[0] === 0xff && buffer[1] === 0xfe) text = new TextDecoder('utf-16le').decode(buffer.subarray(2));
  else if (buffer[0] === 0xfe && buffer[1] === 0xff) text = new TextDecoder('utf-16be').decode(buffer.subarray(2));
  else {
    if (buffer.includes(0)) return null;
    text = buffer.toString('utf8');
    if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    return text;
  }
  return text.includes('\0') ? null : text;
}
