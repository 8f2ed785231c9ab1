import { createLocalFileAccess } from '@hermes/core';
import { describe, expect, it } from 'vitest';
import { convertPrompt, validatePrompt } from './prompt-content.js';

describe('prompt content', () => {
  it('rejects empty prompts, audio and oversized images with -32602', () => {
    for (const prompt of [
      [],
      [{ type: 'audio' as const, mimeType: 'audio/wav', data: 'AAAA' }],
      [{ type: 'image' as const, mimeType: 'image/png', data: 'A'.repeat(8 * 1024 * 1024) }],
    ]) {
      expect(() => validatePrompt(prompt)).toThrow(expect.objectContaining({ code: -32602 }));
    }
  });

  it('stores text prompts with their original blocks and links as @uri lines', async () => {
    const converted = await convertPrompt(
      [
        { type: 'text', text: 'one' },
        { type: 'text', text: 'two' },
      ],
      { files: createLocalFileAccess(), sessionId: 's' },
    );
    expect(converted.persistAs?.text).toBe('one\n\ntwo');
    expect(converted.persistAs?.displayMetadata).toEqual({
      acp: {
        prompt: [
          { type: 'text', text: 'one' },
          { type: 'text', text: 'two' },
        ],
      },
    });
  });

  it('non-file links become a text part that is not fetched', async () => {
    const converted = await convertPrompt(
      [{ type: 'resource_link', uri: 'https://example.com/x', name: 'x', title: 'Example' }],
      { files: createLocalFileAccess(), sessionId: 's' },
    );
    expect(converted.content).toEqual([{ type: 'text', text: 'Link https://example.com/x: x (Example)' }]);
  });
});
