import type { ChatMessage, ContentPart } from '@hermes/core';
import { ApiError } from './http-error.js';

/** Caps of section 6.2: they truncate silently and never reject. */
const TEXT_CAP = 65_536;
const PART_CAP = 1_000;
const DEPTH_CAP = 10;

/** One message's content after normalisation (spec §11). */
export interface NormalizedContent {
  text: string;
  images: ContentPart[];
}

/** A message kept after the role rules of section 11. */
export interface NormalizedMessage extends NormalizedContent {
  role: 'user' | 'assistant';
  /** The message's position in the list of items it was read from. */
  index: number;
}

/** The turn a body describes: ephemeral system text, history and the turn input. */
export interface NormalizedConversation {
  systemText: string;
  history: NormalizedMessage[];
  input: NormalizedMessage;
  /** The first user message's text, for the derived session id (spec §13.3). */
  firstUserText: string;
}

const DATA_IMAGE = /^data:image\/[A-Za-z0-9.+-]+;base64,(.*)$/s;

function image(url: string, path: string): ContentPart {
  if (/^https?:\/\//i.test(url)) return { type: 'image', mediaType: 'image/*', url };
  const match = DATA_IMAGE.exec(url);
  if (match) {
    const mediaType = url.slice(5, url.indexOf(';'));
    return { type: 'image', mediaType, data: match[1] ?? '' };
  }
  if (url.startsWith('data:'))
    throw new ApiError(400, 'unsupported_content_type', 'Only image data URLs are supported.', { param: path });
  throw new ApiError(400, 'invalid_image_url', 'Image URLs must be http(s) or data:image URLs.', { param: path });
}

/** Reads content (a string or an array of parts) into text and images, with the caps of 6.2. */
export function normalizeContent(content: unknown, path: string): NormalizedContent {
  const texts: string[] = [];
  const images: ContentPart[] = [];
  const visit = (value: unknown, depth: number) => {
    if (depth > DEPTH_CAP) return;
    if (typeof value === 'string') {
      texts.push(value.slice(0, TEXT_CAP));
      return;
    }
    if (Array.isArray(value)) {
      for (const part of value.slice(0, PART_CAP)) visit(part, depth + 1);
      return;
    }
    if (typeof value !== 'object' || value === null) return;
    const part = value as Record<string, unknown>;
    const type = part.type;
    if (type === 'text' || type === 'input_text' || type === 'output_text') {
      if (typeof part.text === 'string') texts.push(part.text.slice(0, TEXT_CAP));
    } else if (type === 'image_url') {
      const raw = part.image_url;
      const url = typeof raw === 'string' ? raw : (raw as { url?: unknown } | null)?.url;
      if (typeof url === 'string') images.push(image(url, path));
      else throw new ApiError(400, 'invalid_image_url', 'Missing image URL.', { param: path });
    } else if (type === 'input_image') {
      if (typeof part.image_url === 'string') images.push(image(part.image_url, path));
      else throw new ApiError(400, 'invalid_image_url', 'Missing image URL.', { param: path });
    } else if (type === 'file' || type === 'input_file' || type === 'input_audio') {
      throw new ApiError(400, 'unsupported_content_type', `Content type '${String(type)}' is not supported.`, {
        param: path,
      });
    }
  };
  if (Array.isArray(content)) visit(content, 0);
  else visit(content, 1);
  return { text: texts.join('\n').slice(0, TEXT_CAP), images };
}

/**
 * Applies the role rules of section 11 to a list of `{role, content}` items. `itemPath` names an item for `param`
 * (`messages[2]`). The last kept message must be a user message with text or an image.
 */
export function normalizeConversation(
  items: { role: unknown; content: unknown }[],
  itemPath: (index: number) => string,
  noUserMessage: string,
  leadingSystem: string[] = [],
): NormalizedConversation {
  const system = [...leadingSystem];
  const kept: NormalizedMessage[] = [];
  let firstUserText: string | null = null;
  items.forEach((item, index) => {
    const path = `${itemPath(index)}.content`;
    if (item.role === 'system' || item.role === 'developer') {
      const { text } = normalizeContent(item.content, path);
      if (text) system.push(text);
      return;
    }
    if (item.role !== 'user' && item.role !== 'assistant') return;
    const content = normalizeContent(item.content, path);
    if (item.role === 'user' && firstUserText === null) firstUserText = content.text;
    // Images are kept on user messages only (spec §11).
    const images = item.role === 'user' ? content.images : [];
    if (!content.text && images.length === 0) return;
    kept.push({ role: item.role, text: content.text, images, index });
  });
  const input = kept.at(-1);
  if (input?.role !== 'user') throw new ApiError(400, 'no_user_message', noUserMessage);
  return {
    systemText: system.join('\n'),
    history: kept.slice(0, -1),
    input: input as NormalizedMessage,
    firstUserText: firstUserText ?? '',
  };
}

/** A normalised message as a core chat message. */
export function toChatMessage(message: NormalizedMessage): ChatMessage {
  if (message.images.length === 0) return { role: message.role, content: message.text };
  return {
    role: message.role,
    content: [...(message.text ? [{ type: 'text' as const, text: message.text }] : []), ...message.images],
  };
}

/** The turn input for the core. */
export function toTurnInput(message: NormalizedContent, systemText: string) {
  return {
    text: message.text,
    ...(message.images.length > 0
      ? { content: [...(message.text ? [{ type: 'text' as const, text: message.text }] : []), ...message.images] }
      : {}),
    ...(systemText ? { ephemeralSystemPrompt: systemText } : {}),
  };
}

/** Validation shared by `X-Hermes-Session-Id`, `session_id` and session ids from clients (spec §9.1). */
export function isValidSessionId(value: string): boolean {
  if (value.length < 1 || value.length > 256) return false;
  if (value === '.' || value === '..') return false;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what is refused.
  return !/[\u0000-\u001f\u007f/\\]/.test(value);
}

/** Validation of `X-Hermes-Session-Key` (spec §9.2). */
export function isValidSessionKey(value: string): boolean {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what is refused.
  return value.length >= 1 && value.length <= 256 && !/[\u0000-\u001f\u007f]/.test(value);
}

/** Coerces `stream` as section 13.1 says. */
export function parseStreamFlag(value: unknown): boolean {
  if (value === undefined || value === null || value === false || value === 0) return false;
  if (value === true || value === 1) return true;
  if (typeof value === 'string') {
    const lower = value.toLowerCase();
    if (['true', '1', 'yes', 'on'].includes(lower)) return true;
    if (['false', '0', 'no', 'off'].includes(lower)) return false;
  }
  throw new ApiError(400, 'invalid_field', "'stream' must be a boolean.", { param: 'stream' });
}
