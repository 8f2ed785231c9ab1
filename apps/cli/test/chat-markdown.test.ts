import { beforeAll, describe, expect, it } from 'vitest';
import { loadHighlighter } from '../src/chat/highlight.js';
import { renderMarkdown } from '../src/chat/markdown.js';
import { createPalette, stripAnsi } from '../src/chat/style.js';

beforeAll(loadHighlighter);

const plain = createPalette(false);
const colored = createPalette(true);

describe('renderMarkdown (command output in the terminal chat)', () => {
  it('draws code spans without backticks, in cyan when colors are on, and list items with bullets', () => {
    const markdown =
      'Commands:\n- `/model [provider:model]` (alias /m): Switch the **model**.\n- `/help`: List the commands.';
    expect(renderMarkdown(markdown, plain)).toBe(
      ['Commands:', '• /model [provider:model] (alias /m): Switch the model.', '• /help: List the commands.'].join(
        '\n',
      ),
    );
    const withColor = renderMarkdown(markdown, colored);
    expect(withColor).toContain('\x1b[36m/model [provider:model]\x1b[39m');
    expect(withColor).toContain('\x1b[1mmodel\x1b[22m');
    expect(withColor).not.toContain('`');
    expect(stripAnsi(withColor)).toBe(renderMarkdown(markdown, plain));
  });

  it('keeps characters marked escapes for HTML, numbers ordered lists and indents code blocks', () => {
    expect(renderMarkdown('Use `a < b && c` or "quotes" & <tags>', plain)).toBe('Use a < b && c or "quotes" & <tags>');
    expect(renderMarkdown('# Title\n\n1. one\n2. two\n\n```\nnpm test\n```', plain)).toBe(
      ['Title', '1. one', '2. two', '    npm test'].join('\n'),
    );
  });

  it('aligns table columns, and lays a table too wide for the terminal out as one "header: value" line per cell', () => {
    const table =
      '| name | note |\n| --- | --- |\n| a.ts | short |\n| b.ts | a much longer note that will not fit in a narrow terminal |';
    expect(renderMarkdown(table, plain, { width: 100 }).split('\n')).toEqual([
      'name │ note',
      '─────┼──────────────────────────────────────────────────────────',
      'a.ts │ short',
      'b.ts │ a much longer note that will not fit in a narrow terminal',
    ]);
    const narrow = renderMarkdown(table, plain, { width: 40 }).split('\n');
    expect(narrow).toEqual([
      'name: a.ts',
      'note: short',
      '────────────────────',
      'name: b.ts',
      'note: a much longer note that will not',
      'fit in a narrow terminal',
    ]);
    for (const line of narrow) expect(line.length).toBeLessThanOrEqual(40);
  });
});
