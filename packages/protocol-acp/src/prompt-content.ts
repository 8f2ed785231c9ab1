import { fileURLToPath } from 'node:url';
import { type ContentBlock, RequestError } from '@agentclientprotocol/sdk/unstable';
import type { ContentPart, FileAccess, JsonObject, JsonValue } from '@hermes/core';

/** The core's limit on one image part (spec/acp.md §6.2). */
export const IMAGE_LIMIT_BYTES = 5 * 1024 * 1024;
/** Linked files up to this size are inlined into the prompt. */
export const INLINE_FILE_LIMIT_BYTES = 512 * 1024;
/** Embedded data larger than this is replaced by a link in the stored prompt blocks. */
export const STORED_BLOCK_LIMIT_BYTES = 64 * 1024;

const IMAGE_EXTENSIONS: Record<string, string> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
};

function decodedLength(base64: string): number {
  const padding = base64.endsWith('==') ? 2 : base64.endsWith('=') ? 1 : 0;
  return Math.floor((base64.length * 3) / 4) - padding;
}

/**
 * Rejects prompts the agent cannot run before anything is queued (spec/acp.md §6.2): empty
 * prompts, audio blocks, images over the core's limit.
 */
export function validatePrompt(prompt: readonly ContentBlock[]): void {
  if (prompt.length === 0) throw RequestError.invalidParams(undefined, 'The prompt is empty');
  for (const block of prompt) {
    if (block.type === 'audio') throw RequestError.invalidParams(undefined, 'audio content is not supported');
    if (block.type === 'image' && decodedLength(block.data) > IMAGE_LIMIT_BYTES) {
      throw RequestError.invalidParams(undefined, 'The image is larger than 5 MiB');
    }
    if (
      block.type === 'resource' &&
      'blob' in block.resource &&
      block.resource.mimeType?.startsWith('image/') &&
      decodedLength(block.resource.blob) > IMAGE_LIMIT_BYTES
    ) {
      throw RequestError.invalidParams(undefined, 'The image is larger than 5 MiB');
    }
  }
}

/** A prompt converted for the core: content parts plus the text and display data stored. */
export interface ConvertedPrompt {
  content: ContentPart[];
  /**
   * Absent for prompts with non-text blocks: the core replaces the model-visible content with
   * `persistAs.text` and drops the parts, so such prompts are stored as their parts instead
   * (a core gap, see the package README).
   */
  persistAs?: { text: string; displayMetadata: JsonObject };
}

async function linkedFilePart(uri: string, reader: { files: FileAccess; sessionId: string }): Promise<ContentPart> {
  let path: string;
  try {
    path = fileURLToPath(uri);
  } catch {
    return { type: 'text', text: `File ${uri}: not a valid file URI.` };
  }
  const extension = path.split('.').pop()?.toLowerCase() ?? '';
  const imageType = IMAGE_EXTENSIONS[extension];
  try {
    const { stat, readFile } = await import('node:fs/promises');
    const info = await stat(path);
    if (info.size > INLINE_FILE_LIMIT_BYTES) {
      return { type: 'text', text: `File ${path}: larger than 512 KiB, not inlined; read it with the file tools.` };
    }
    if (imageType !== undefined) {
      const data = await readFile(path);
      return { type: 'image', mediaType: imageType, data: data.toString('base64') };
    }
    const sample = await readFile(path);
    if (sample.includes(0)) return { type: 'text', text: `File ${path}: binary file, not inlined.` };
  } catch (error) {
    // Missing locally: the client's buffer may still exist, so ask the seam.
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') {
      return { type: 'text', text: `File ${path}: unreadable (${(error as Error).message}).` };
    }
  }
  try {
    const text = await reader.files.readText({ sessionId: reader.sessionId, callId: 'prompt', path });
    return { type: 'text', text: `File ${path}:\n${text}` };
  } catch (error) {
    return { type: 'text', text: `File ${path}: unreadable (${(error as Error).message}).` };
  }
}

function storedBlock(block: ContentBlock): JsonValue {
  if (block.type === 'image' && decodedLength(block.data) > STORED_BLOCK_LIMIT_BYTES) {
    return block.uri ? { type: 'resource_link', uri: block.uri, name: block.uri } : { type: 'text', text: '[image]' };
  }
  if (block.type === 'resource') {
    const size = 'text' in block.resource ? Buffer.byteLength(block.resource.text) : decodedLength(block.resource.blob);
    if (size > STORED_BLOCK_LIMIT_BYTES) {
      return { type: 'resource_link', uri: block.resource.uri, name: block.resource.uri };
    }
  }
  return JSON.parse(JSON.stringify(block)) as JsonValue;
}

/** Converts validated ACP blocks to core content parts, in order (spec/acp.md §6.2). */
export async function convertPrompt(
  prompt: readonly ContentBlock[],
  reader: { files: FileAccess; sessionId: string },
): Promise<ConvertedPrompt> {
  const content: ContentPart[] = [];
  const texts: string[] = [];
  const references: string[] = [];
  for (const block of prompt) {
    switch (block.type) {
      case 'text':
        content.push({ type: 'text', text: block.text });
        texts.push(block.text);
        break;
      case 'image':
        content.push({ type: 'image', mediaType: block.mimeType, data: block.data });
        break;
      case 'resource_link':
        references.push(`@${block.uri}`);
        if (block.uri.startsWith('file:')) content.push(await linkedFilePart(block.uri, reader));
        else {
          const title = block.title ? ` (${block.title})` : '';
          content.push({ type: 'text', text: `Link ${block.uri}: ${block.name}${title}` });
        }
        break;
      case 'resource': {
        const resource = block.resource;
        references.push(`@${resource.uri}`);
        if ('text' in resource) content.push({ type: 'text', text: `Resource ${resource.uri}:\n${resource.text}` });
        else if (resource.mimeType?.startsWith('image/')) {
          content.push({ type: 'image', mediaType: resource.mimeType, data: resource.blob });
        } else {
          content.push({
            type: 'text',
            text: `Resource ${resource.uri} (${resource.mimeType ?? 'binary'}): binary data not inlined.`,
          });
        }
        break;
      }
      default:
        break;
    }
  }
  const text = [texts.join('\n\n'), references.join('\n')].filter((part) => part !== '').join('\n');
  const textOnly = prompt.every((block) => block.type === 'text');
  return textOnly
    ? { content, persistAs: { text, displayMetadata: { acp: { prompt: prompt.map(storedBlock) } } } }
    : { content };
}
