import headless from '@xterm/headless';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadHighlighter } from '../src/chat/highlight.js';
import { renderMarkdown } from '../src/chat/markdown.js';
import { MarkdownStream } from '../src/chat/markdown-stream.js';
import { renderDiff } from '../src/chat/render.js';
import { createPalette, stripAnsi } from '../src/chat/style.js';

beforeAll(loadHighlighter);

const { Terminal } = headless;

/** A headless xterm.js terminal: what a person would see after the stream's redraws. */
function screen(columns: number, rows = 60) {
  const terminal = new Terminal({ cols: columns, rows, convertEol: true, allowProposedApi: true });
  let written = '';
  const pending: Promise<void>[] = [];
  return {
    write(text: string) {
      written += text;
      pending.push(new Promise((resolve) => terminal.write(text, resolve)));
    },
    erase(rows: number) {
      this.write(`\r${rows > 1 ? `\x1b[${rows - 1}A` : ''}\x1b[J`);
    },
    get written() {
      return written;
    },
    async lines(): Promise<string[]> {
      await Promise.all(pending);
      const buffer = terminal.buffer.active;
      const lines: string[] = [];
      for (let index = 0; index < buffer.length; index += 1)
        lines.push(buffer.getLine(index)?.translateToString(true) ?? '');
      while (lines.length > 0 && lines.at(-1) === '') lines.pop();
      return lines;
    },
  };
}

function streamInto(target: ReturnType<typeof screen>, columns: number, color: boolean, live = true) {
  return new MarkdownStream({
    palette: createPalette(color),
    live,
    write: (text) => target.write(text),
    erase: (rows) => target.erase(rows),
    columns: () => columns,
    rows: () => 60,
    redrawIntervalMs: 0,
  });
}

/** Splits text into deltas of `size` characters, as a model streams tokens. */
function deltas(text: string, size: number): string[] {
  const parts: string[] = [];
  for (let index = 0; index < text.length; index += size) parts.push(text.slice(index, index + size));
  return parts;
}

const ANSWER = [
  '# Plan',
  '',
  'Here is **the plan** for `build.ts`, with a [link](https://example.com/docs) and *emphasis*.',
  '',
  '1. Read the file',
  '2. Change the loop',
  '',
  '- one',
  '- two',
  '',
  '| name | size |',
  '| --- | ---: |',
  '| a.ts | 12 |',
  '| longer-name.ts | 3 |',
  '',
  '```ts',
  'const answer: number = 42;',
  '/* a comment',
  '   on two lines */',
  'export function main() { return answer; }',
  '```',
  '',
  'That is all.',
].join('\n');

describe('MarkdownStream (answers rendered while they stream)', () => {
  it('shows on screen exactly what rendering the whole answer at once shows, at any delta size', async () => {
    const expected = renderMarkdown(ANSWER, createPalette(false), { width: 59, blockGap: true }).split('\n');
    for (const size of [1, 3, 17, ANSWER.length]) {
      const target = screen(60);
      const stream = streamInto(target, 60, false);
      for (const delta of deltas(ANSWER, size)) stream.push(delta);
      stream.end();
      expect(await target.lines()).toEqual(expected);
    }
    // Headings, bullets, numbers, aligned table columns and indented code, no Markdown syntax.
    expect(expected).toContain('Plan');
    expect(expected).toContain('1. Read the file');
    expect(expected).toContain('• one');
    expect(expected.join(' ')).toContain(
      'Here is the plan for build.ts, with a link (https://example.com/docs) and emphasis.',
    );
    expect(expected).toContain('name           │ size');
    expect(expected).toContain('longer-name.ts │    3');
    expect(expected).toContain('    const answer: number = 42;');
    expect(expected.join('\n')).not.toMatch(/```|\*\*|`/);
  });

  it('commits a long list item by item: it shows while written, even taller than the screen', async () => {
    const items = Array.from({ length: 60 }, (_, index) => `${index + 1}. item number ${index + 1}`);
    const loose = '- first\n\n  more of the first\n\n- second\n  - nested under second\n- third';
    const answer = `Steps:\n${items.join('\n')}\n\nAfter.\n\n${loose}\n\n> quoted **text**\n\n---\n\n~~~\nplain fence\n~~~`;
    const expected = renderMarkdown(answer, createPalette(false), { width: 59, blockGap: true }).split('\n');
    const target = screen(60, 20);
    const stream = new MarkdownStream({
      palette: createPalette(false),
      live: true,
      write: (text) => target.write(text),
      erase: (rows) => target.erase(rows),
      columns: () => 60,
      rows: () => 20,
      redrawIntervalMs: 0,
    });
    const parts = deltas(answer, 6);
    const half = Math.floor(parts.length / 4);
    for (const delta of parts.slice(0, half)) stream.push(delta);
    // A quarter of the way through, the first items are on screen already.
    expect(target.written).toContain('10. item number 10');
    for (const delta of parts.slice(half)) stream.push(delta);
    stream.end();
    expect(await target.lines()).toEqual(expected);
    expect(expected).toContain('60. item number 60');
    expect(expected).toContain('  more of the first');
    expect(expected).toContain('  • nested under second');
    expect(expected).toContain('│ quoted text');
  });

  it('highlights fenced code by its language, in colors on a terminal', async () => {
    const target = screen(80);
    const stream = streamInto(target, 80, true);
    for (const delta of deltas(ANSWER, 5)) stream.push(delta);
    stream.end();
    // `const` is a keyword (magenta), 42 a number (cyan), the comment gray, the heading bold.
    expect(target.written).toContain('\x1b[35mconst\x1b[39m');
    expect(target.written).toContain('\x1b[36m42\x1b[39m');
    expect(target.written).toContain('\x1b[90m/* a comment\x1b[39m');
    expect(target.written).toContain('\x1b[90m   on two lines */\x1b[39m');
    expect(target.written).toContain('\x1b[1mthe plan\x1b[22m');
    expect(stripAnsi((await target.lines()).join('\n'))).toContain('    export function main() { return answer; }');
  });

  it('word-wraps to the terminal width without breaking words', async () => {
    const words = Array.from({ length: 60 }, (_, index) => `word${index}`);
    const target = screen(40);
    const stream = streamInto(target, 40, false);
    for (const delta of deltas(`- ${words.join(' ')}\n\nafter`, 7)) stream.push(delta);
    stream.end();
    const lines = await target.lines();
    for (const line of lines) expect(line.length).toBeLessThan(40);
    // Every word is whole on one line, and continuation lines hang under the item's text.
    const shown = lines.join(' ').split(/\s+/);
    for (const word of words) expect(shown).toContain(word);
    expect(lines[0]?.startsWith('• word0 word1')).toBe(true);
    expect(lines[1]?.startsWith('  word')).toBe(true);
    expect(lines.at(-1)).toBe('after');
  });

  it('writes each completed block once: the bytes written grow with the answer, not with deltas × answer', () => {
    const paragraph = (index: number) => `Paragraph ${index} has a few words of text in it, nothing more.\n\n`;
    const answer = Array.from({ length: 200 }, (_, index) => paragraph(index)).join('');
    const target = screen(100, 50);
    const stream = streamInto(target, 100, false);
    for (const delta of deltas(answer, 4)) stream.push(delta);
    stream.end();
    // Each delta redraws only its open paragraph (redraws are not even batched here): a full
    // re-render per delta would write about (answer length)² / 8 ≈ 40 MB.
    expect(target.written.length).toBeLessThan(answer.length * 40);
    // A committed paragraph is never written again after the next one starts.
    expect(target.written.split('Paragraph 0 ').length - 1).toBeLessThan(30);
  });

  it('reasoning is rendered the same way, every line dimmed', async () => {
    const palette = createPalette(true);
    const target = screen(30);
    const stream = new MarkdownStream({
      palette,
      live: true,
      write: (text) => target.write(text),
      erase: (rows) => target.erase(rows),
      columns: () => 30,
      rows: () => 60,
      decorate: palette.dim,
      redrawIntervalMs: 0,
    });
    for (const delta of deltas('I should check **both** files before I answer the question.', 5)) stream.push(delta);
    stream.end();
    const lines = await target.lines();
    expect(lines).toEqual(['I should check both files', 'before I answer the question.']);
    const committed = target.written.slice(target.written.lastIndexOf('\x1b[J') + 3);
    for (const line of committed.trimEnd().split('\n')) expect(line.startsWith('\x1b[2m')).toBe(true);
  });

  it('off a terminal writes the Markdown unchanged as it arrives', async () => {
    const target = screen(60);
    const stream = streamInto(target, 60, false, false);
    for (const delta of deltas(ANSWER, 4)) stream.push(delta);
    stream.end();
    expect(target.written).toBe(ANSWER);
  });
});

describe('renderDiff (syntax-highlighted diffs)', () => {
  it('colors the markers and highlights the code of a known language, whole lines otherwise', () => {
    const colored = createPalette(true);
    const oldText = 'const a = 1;\nconst b = "x";\n';
    const newText = 'const a = 2;\nconst b = "x";\n';
    const unified = [
      '--- a/x.ts',
      '+++ b/x.ts',
      '@@ -1,2 +1,2 @@',
      '-const a = 1;',
      '+const a = 2;',
      ' const b = "x";',
    ].join('\n');
    const shown = renderDiff({ path: 'src/x.ts', oldText, newText, unified }, colored);
    const lines = shown.split('\n');
    expect(lines[3]).toBe('\x1b[31m-\x1b[39m\x1b[35mconst\x1b[39m a = \x1b[36m1\x1b[39m;');
    expect(lines[4]).toBe('\x1b[32m+\x1b[39m\x1b[35mconst\x1b[39m a = \x1b[36m2\x1b[39m;');
    expect(lines[5]).toBe(' \x1b[35mconst\x1b[39m b = \x1b[32m"x"\x1b[39m;');
    expect(stripAnsi(shown)).toBe(unified);
    const text = renderDiff(
      { path: 'notes.txt', oldText: null, newText: 'hi\n', unified: '@@ -0,0 +1 @@\n+hi' },
      colored,
    );
    expect(text).toContain('\x1b[32m+hi\x1b[39m');
    expect(renderDiff({ path: 'src/x.ts', oldText, newText, unified }, createPalette(false))).toBe(unified);
  });
});
