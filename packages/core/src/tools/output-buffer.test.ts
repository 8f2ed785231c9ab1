import { describe, expect, it } from 'vitest';
import { HeadTailBuffer, RingBuffer } from './output-buffer.js';

describe('HeadTailBuffer', () => {
  it('keeps everything under the cap', () => {
    const buffer = new HeadTailBuffer(3, 5);
    buffer.append('abc');
    buffer.append('de');
    expect(buffer.text()).toEqual({ text: 'abcde', truncated: false });
  });

  it('keeps the head and the tail with a marker past the cap', () => {
    const buffer = new HeadTailBuffer(3, 4);
    for (const chunk of ['ab', 'cdefgh', 'ijklmn', 'op']) buffer.append(chunk);
    expect(buffer.text()).toEqual({ text: 'abc\n[… 9 characters of output omitted …]\nmnop', truncated: true });
  });
});

describe('RingBuffer', () => {
  it('keeps the last capacity characters and tracks reads by absolute offset', () => {
    const buffer = new RingBuffer(4);
    buffer.append('ab');
    expect(buffer.since(0)).toEqual({ text: 'ab', dropped: 0 });
    const offset = buffer.end;
    buffer.append('cdefghij');
    expect(buffer.contents()).toBe('ghij');
    expect(buffer.since(offset)).toEqual({ text: 'ghij', dropped: 4 });
    expect(buffer.since(buffer.end)).toEqual({ text: '', dropped: 0 });
    buffer.append('k');
    expect(buffer.since(buffer.end - 2)).toEqual({ text: 'jk', dropped: 0 });
  });
});
