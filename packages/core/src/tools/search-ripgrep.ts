import { spawn } from 'node:child_process';
import { dirname } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { type FileMatches, type SearchEngine, TooManyMatchesError } from './search-types.js';

/**
 * Flags that make ripgrep's file selection match the built-in walker and ignore the user's
 * configuration: hidden files included, `.git` skipped, `.gitignore` honoured outside git
 * repositories too, no global gitignore, no `.git/info/exclude`, no `RIPGREP_CONFIG_PATH`.
 */
const SELECTION_FLAGS = [
  '--no-config',
  '--hidden',
  '--no-require-git',
  '--no-ignore-global',
  '--no-ignore-exclude',
  '--glob',
  '!.git',
];

/** The ripgrep search engine (`rg` at `executable`). */
export function createRipgrepEngine(executable: string): SearchEngine {
  return {
    name: 'ripgrep',
    async listFiles(root, rootIsFile, signal) {
      const output: Buffer[] = [];
      await runRipgrep(
        executable,
        ['--files', '--null', ...SELECTION_FLAGS, '--', root],
        rootIsFile ? dirname(root) : root,
        signal,
        (chunk) => {
          output.push(chunk);
        },
      );
      return Buffer.concat(output)
        .toString('utf8')
        .split('\0')
        .filter((path) => path !== '');
    },
    async searchContent(request) {
      const args = ['--json', '--crlf', ...SELECTION_FLAGS];
      if (request.ignoreCase) args.push('--ignore-case');
      if (request.context > 0) args.push('--context', String(request.context));
      // A file type (not a --glob, which would override the ignore files) narrows the search.
      if (request.basenameGlob !== null && !request.rootIsFile && !request.basenameGlob.includes(':')) {
        args.push('--type-add', `hermesglob:${request.basenameGlob}`, '--type', 'hermesglob');
      }
      args.push('--regexp', request.pattern, '--', request.root);
      const files = new Map<string, FileMatches>();
      const binary = new Set<string>();
      let total = 0;
      let pending = '';
      const decoder = new StringDecoder('utf8');
      const controller = new AbortController();
      const onAbort = () => controller.abort(request.signal.reason);
      request.signal.addEventListener('abort', onAbort, { once: true });
      let tooMany = false;
      const handleLine = (line: string) => {
        if (line === '') return;
        const message = JSON.parse(line) as RipgrepMessage;
        if (message.type !== 'match' && message.type !== 'context' && message.type !== 'end') return;
        const path = textOf(message.data.path);
        if (message.type === 'end') {
          if (message.data.binary_offset !== null && message.data.binary_offset !== undefined) binary.add(path);
          return;
        }
        const lineNumber = message.data.line_number;
        if (lineNumber === null || lineNumber === undefined) return;
        let file = files.get(path);
        if (file === undefined) {
          file = { absolutePath: path, matches: new Map(), context: new Map() };
          files.set(path, file);
        }
        const text =
          request.keepText || message.type === 'context' ? textOf(message.data.lines).replace(/\r?\n$/, '') : '';
        if (message.type === 'match') {
          file.matches.set(lineNumber, text);
          file.context.delete(lineNumber);
          total += 1;
          if (request.maxMatches !== null && total > request.maxMatches && !tooMany) {
            tooMany = true;
            controller.abort();
          }
        } else if (!file.matches.has(lineNumber)) {
          file.context.set(lineNumber, text);
        }
      };
      try {
        await runRipgrep(
          executable,
          args,
          request.rootIsFile ? dirname(request.root) : request.root,
          controller.signal,
          (chunk) => {
            pending += decoder.write(chunk);
            const lines = pending.split('\n');
            pending = lines.pop() ?? '';
            for (const line of lines) handleLine(line);
          },
        );
        handleLine(pending + decoder.end());
      } catch (error) {
        if (tooMany) throw new TooManyMatchesError(request.maxMatches as number);
        throw error;
      } finally {
        request.signal.removeEventListener('abort', onAbort);
      }
      if (tooMany) throw new TooManyMatchesError(request.maxMatches as number);
      return [...files.values()].filter((file) => !binary.has(file.absolutePath) && file.matches.size > 0);
    },
  };
}

type RipgrepText = { text: string } | { bytes: string };

type RipgrepMessage =
  | { type: 'begin' | 'summary'; data: unknown }
  | { type: 'match' | 'context'; data: { path: RipgrepText; lines: RipgrepText; line_number: number | null } }
  | { type: 'end'; data: { path: RipgrepText; binary_offset: number | null } };

/** ripgrep sends paths and lines that are not valid UTF-8 as base64 bytes. */
function textOf(value: RipgrepText): string {
  return 'text' in value ? value.text : Buffer.from(value.bytes, 'base64').toString('utf8');
}

function runRipgrep(
  executable: string,
  args: string[],
  cwd: string,
  signal: AbortSignal,
  onStdout: (chunk: Buffer) => void,
): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const child = spawn(executable, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    const onAbort = () => child.kill('SIGKILL');
    signal.addEventListener('abort', onAbort, { once: true });
    child.stdout.on('data', onStdout);
    child.stderr.on('data', (chunk: Buffer) => {
      if (stderr.length < 4000) stderr += chunk.toString('utf8');
    });
    child.on('error', (error) => {
      signal.removeEventListener('abort', onAbort);
      reject(error);
    });
    child.on('close', (code) => {
      signal.removeEventListener('abort', onAbort);
      if (signal.aborted) {
        reject(signal.reason ?? new Error('aborted'));
        return;
      }
      // 0: matches, 1: none, 2: an error such as an unreadable file, which the walker skips too;
      // only a pattern ripgrep cannot parse is fatal.
      if (code === 2 && /regex parse error|error parsing regex|look-around|backreferences/i.test(stderr)) {
        reject(new Error(`ripgrep rejected the pattern: ${stderr.trim().split('\n').slice(0, 6).join('\n')}`));
        return;
      }
      if (code !== 0 && code !== 1 && code !== 2) {
        reject(new Error(`ripgrep exited with code ${code}: ${stderr.trim()}`));
        return;
      }
      resolve();
    });
  });
}
