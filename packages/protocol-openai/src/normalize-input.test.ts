import { describe, expect, it } from 'vitest';
import { ApiError } from './http-error.js';
import { isValidSessionId, normalizeContent, normalizeConversation, parseStreamFlag } from './normalize-input.js';

describe('input normalisation', () => {
  it('joins text parts with a newline, keeps images, and ignores unknown part types', () => {
    const content = normalizeContent(
      [
        'a',
        { type: 'input_text', text: 'b' },
        { type: 'mystery' },
        { type: 'image_url', image_url: 'https://x/y.png' },
      ],
      'messages[0].content',
    );
    expect(content.text).toBe('a\nb');
    expect(content.images).toEqual([{ type: 'image', mediaType: 'image/*', url: 'https://x/y.png' }]);
  });

  it('refuses a non-image data URL with unsupported_content_type and names the content path', () => {
    const error = (() => {
      try {
        normalizeContent([{ type: 'input_image', image_url: 'data:text/plain;base64,eA==' }], 'input[1].content');
      } catch (caught) {
        return caught;
      }
    })();
    expect(ApiError.isInstance(error) && [error.code, error.param]).toEqual([
      'unsupported_content_type',
      'input[1].content',
    ]);
  });

  it('caps each text at 65,536 characters and reads at most 1,000 parts', () => {
    expect(normalizeContent('a'.repeat(70_000), 'x').text).toHaveLength(65_536);
    const parts = Array.from({ length: 1_500 }, () => 'p');
    expect(normalizeContent(parts, 'x').text.split('\n')).toHaveLength(1_000);
  });

  it('layers system and developer text, drops tool messages, and requires a final user message', () => {
    const conversation = normalizeConversation(
      [
        { role: 'system', content: 'S' },
        { role: 'developer', content: 'D' },
        { role: 'user', content: 'hi' },
        { role: 'tool', content: 'ignored' },
        { role: 'assistant', content: 'yo' },
        { role: 'user', content: 'again' },
      ],
      (index) => `messages[${index}]`,
      'No user message found in messages',
    );
    expect(conversation.systemText).toBe('S\nD');
    expect(conversation.history.map((message) => message.text)).toEqual(['hi', 'yo']);
    expect(conversation.input.text).toBe('again');
    expect(() =>
      normalizeConversation(
        [
          { role: 'user', content: 'hi' },
          { role: 'assistant', content: 'yo' },
        ],
        String,
        'none',
      ),
    ).toThrow('none');
  });

  it('coerces stream flags and refuses other values', () => {
    expect(['true', 'ON', 1, true].map(parseStreamFlag)).toEqual([true, true, true, true]);
    expect([undefined, null, 'off', 0, false].map(parseStreamFlag)).toEqual([false, false, false, false, false]);
    expect(() => parseStreamFlag('maybe')).toThrow();
  });

  it('validates session ids like the session header', () => {
    expect(['conf-s1', 'a'.repeat(256)].map(isValidSessionId)).toEqual([true, true]);
    expect(['', '.', '..', 'a/b', 'a\\b', 'a\nb', 'a'.repeat(257)].some(isValidSessionId)).toBe(false);
  });
});
