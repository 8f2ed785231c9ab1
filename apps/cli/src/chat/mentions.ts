import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, extname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import type { ContentPart } from '@hermes/core';

/** Bytes of one mentioned file attached to a message; the rest is cut with a note. */
export const MAX_MENTION_BYTES = 100_000;

/** Bytes of one mentioned image; the core refuses larger attachments. */
export const MAX_IMAGE_BYTES = 5 * 1024 * 1024;

/** Image files a mention sends as an image, by extension. */
const IMAGE_TYPES: Record<string, string> = {
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
};

/** A file attached to a message through an `@path` mention. */
export interface Mention {
  /** The path as written after `@`. */
  written: string;
  absolute: string;
  /** Lines of a text file; 0 for an image. */
  lines: number;
  truncated: boolean;
  /** The media type of an image sent as an image. */
  image?: string;
  /** Why the file was not attached (an image over 5 MiB). */
  skipped?: string;
}

/** `@path` words: an @ at the start or after whitespace, then the path up to whitespace. */
const MENTION = /(?:^|\s)@((?:\\ |[^\s])+)/g;

/**
 * Finds the `@path` mentions of existing files in `text` and returns the message with each text
 * file's content appended, so the model sees it without a tool call, and each image file (PNG,
 * JPEG, GIF, WebP) as an image part. Words that are not files (an e-mail address, `@someone`) and
 * other binary files are left alone.
 */
export function attachMentions(
  text: string,
  cwd: string,
): { text: string; mentions: Mention[]; images: ContentPart[] } {
  const mentions: Mention[] = [];
  const blocks: string[] = [];
  const images: ContentPart[] = [];
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
    const imageType = IMAGE_TYPES[extname(absolute).toLowerCase()];
    if (imageType !== undefined) {
      // Terminals cannot paste images, so an image is attached by mentioning its file.
      if (content.length > MAX_IMAGE_BYTES) {
        mentions.push({ written, absolute, lines: 0, truncated: false, image: imageType, skipped: 'over 5 MiB' });
        continue;
      }
      images.push({ type: 'image', mediaType: imageType, data: content.toString('base64') });
      mentions.push({ written, absolute, lines: 0, truncated: false, image: imageType });
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
  if (blocks.length === 0) return { text, mentions, images };
  return { text: `${text}\n\nFiles mentioned above:\n${blocks.join('\n')}`, mentions, images };
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
