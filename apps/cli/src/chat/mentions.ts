import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';

/** Bytes of one mentioned file attached to a message; the rest is cut with a note. */
export const MAX_MENTION_BYTES = 100_000;

/** A file attached to a message through an `@path` mention. */
export interface Mention {
  /** The path as written after `@`. */
  written: string;
  absolute: string;
  lines: number;
  truncated: boolean;
}

/** `@path` words: an @ at the start or after whitespace, then the path up to whitespace. */
const MENTION = /(?:^|\s)@((?:\\ |[^\s])+)/g;

/**
 * Finds the `@path` mentions of existing files in `text` and returns the message with each file's
 * content appended, so the model sees it without a tool call. Words that are not files (an e-mail
 * address, `@someone`) are left alone.
 */
export function attachMentions(text: string, cwd: string): { text: string; mentions: Mention[] } {
  const mentions: Mention[] = [];
  const blocks: string[] = [];
  for (const match of text.matchAll(MENTION)) {
    const written = (match[1] ?? '').replace(/[.,;:!?)]+$/, '');
    const absolute = resolve(cwd, written.replaceAll('\\ ', ' '));
    if (mentions.some((mention) => mention.absolute === absolute)) continue;
    let content: Buffer;
    try {
      if (!statSync(absolute).isFile()) continue;
      content = readFileSync(absolute);
    } catch {
      continue;
    }
    if (content.includes(0)) continue;
    const truncated = content.length > MAX_MENTION_BYTES;
    const body = content.subarray(0, MAX_MENTION_BYTES).toString('utf8');
    const shown = isAbsolute(written) ? absolute : relative(cwd, absolute);
    blocks.push(
      `<file path="${shown}">\n${body}${body.endsWith('\n') ? '' : '\n'}${truncated ? `… (cut at ${MAX_MENTION_BYTES} bytes)\n` : ''}</file>`,
    );
    mentions.push({ written, absolute, lines: body.split('\n').length - (body.endsWith('\n') ? 1 : 0), truncated });
  }
  if (blocks.length === 0) return { text, mentions };
  return { text: `${text}\n\nFiles mentioned above:\n${blocks.join('\n')}`, mentions };
}

/**
 * Tab completion of the `@path` word at the end of `line`: the entries of its folder that start
 * with what is typed, folders with a trailing slash. Null when the last word is not a mention.
 */
export function completeMention(line: string, cwd: string): [string[], string] | null {
  const match = /(?:^|\s)@((?:\\ |[^\s])*)$/.exec(line);
  if (!match) return null;
  const typed = (match[1] ?? '').replaceAll('\\ ', ' ');
  const folderPart = typed.endsWith('/')
    ? typed
    : dirname(typed) === '.' && !typed.startsWith('.')
      ? ''
      : dirname(typed);
  const prefix = typed.slice(folderPart === '' ? 0 : folderPart.length + (folderPart.endsWith('/') ? 0 : 1));
  const folder = resolve(cwd, folderPart === '' ? '.' : folderPart);
  let names: string[];
  try {
    names = readdirSync(folder, { withFileTypes: true })
      .filter((entry) => entry.name.startsWith(prefix) && (prefix.startsWith('.') || !entry.name.startsWith('.')))
      .map((entry) => {
        const base = folderPart === '' ? entry.name : join(folderPart, entry.name);
        return `@${base.replaceAll(' ', '\\ ')}${entry.isDirectory() ? sep : ''}`;
      })
      .sort();
  } catch {
    return [[], line];
  }
  return [names, `@${match[1] ?? ''}`];
}
