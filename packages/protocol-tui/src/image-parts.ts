import { readFileSync } from 'node:fs';
import type { ContentPart } from '@hermes/core';

/** Media type of an image by its leading bytes (the types `image.attach` accepts, §4.5). */
function mediaTypeOf(bytes: Buffer): string | null {
  if (bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return 'image/png';
  if (bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return 'image/jpeg';
  if (bytes.subarray(0, 4).toString('latin1') === 'GIF8') return 'image/gif';
  if (bytes.subarray(0, 4).toString('latin1') === 'RIFF' && bytes.subarray(8, 12).toString('latin1') === 'WEBP')
    return 'image/webp';
  return null;
}

/**
 * The user message of a turn with its queued images (`image.attach`, `clipboard.paste`): the text,
 * then each image inline. An image that vanished or changed type since it was queued is named in
 * the text instead of silently dropped.
 */
export function contentWithImages(text: string, paths: readonly string[]): ContentPart[] {
  const parts: ContentPart[] = [];
  const missing: string[] = [];
  const images: ContentPart[] = [];
  for (const path of paths) {
    let bytes: Buffer;
    try {
      bytes = readFileSync(path);
    } catch {
      missing.push(path);
      continue;
    }
    const mediaType = mediaTypeOf(bytes);
    if (!mediaType) {
      missing.push(path);
      continue;
    }
    images.push({ type: 'image', mediaType, data: bytes.toString('base64') });
  }
  const note = missing.length > 0 ? `\n\n[Images that could not be read: ${missing.join(', ')}]` : '';
  if (text !== '' || note !== '') parts.push({ type: 'text', text: `${text}${note}` });
  parts.push(...images);
  return parts;
}
