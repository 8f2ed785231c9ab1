import { describe, expect, it } from 'vitest';
import { TextChunks } from '../../src/util/text-chunks.js';

describe('TextChunks', () => {
  it('gives the text of every chunk in order, however many folds it took and however often it is read', () => {
    const chunks = new TextChunks();
    const parts: string[] = [];
    expect(chunks.toString()).toBe('');
    for (let index = 0; index < 1_300; index += 1) {
      const part = `${index},`;
      parts.push(part);
      chunks.push(part);
      // Read mid-way (a snapshot of the streaming text) and at a fold's boundary.
      if (index === 700 || index === 1_023) expect(chunks.toString()).toBe(parts.join(''));
    }
    expect(chunks.toString()).toBe(parts.join(''));
    expect(chunks.toString()).toBe(parts.join(''));
  });
});
