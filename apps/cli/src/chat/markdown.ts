import { Lexer, type Token, type Tokens } from 'marked';
import stringWidth from 'string-width';
import wrapAnsi from 'wrap-ansi';
import { highlightCode, languageOf } from './highlight.js';
import type { Palette } from './style.js';

/** How {@link renderMarkdown} lays its text out. */
export interface MarkdownLayout {
  /** Terminal columns to word-wrap to; no wrapping when absent. */
  width?: number;
  /** Separates blocks with an empty line (answers) instead of none (compact command output). */
  blockGap?: boolean;
}

interface Context {
  palette: Palette;
  width: number | undefined;
  gap: string;
}

/**
 * Renders Markdown for the terminal: marked parses it, and each block is drawn with the chat's
 * palette — headings bold, emphasis as such, code spans cyan without their backticks, list items
 * with a bullet, tables with aligned columns, fenced code syntax-highlighted and indented, links
 * as their label and address. Text is word-wrapped to `layout.width`. With colors off the same
 * layout is printed as plain text.
 */
export function renderMarkdown(markdown: string, palette: Palette, layout: MarkdownLayout = {}): string {
  const context: Context = { palette, width: layout.width, gap: layout.blockGap ? '\n\n' : '\n' };
  return renderBlocks(new Lexer().lex(markdown), context, '');
}

function renderBlocks(tokens: Token[], context: Context, indent: string): string {
  return tokens
    .map((token) => renderBlock(token, context, indent))
    .filter((block) => block !== null)
    .join(context.gap);
}

/** Word-wraps styled text to the width left after `indent`, and indents every line. */
function wrapText(text: string, context: Context, indent: string): string {
  const room = context.width === undefined ? undefined : Math.max(10, context.width - stringWidth(indent));
  const wrapped = room === undefined ? text : wrapAnsi(text, room, { hard: true });
  return wrapped
    .split('\n')
    .map((line) => indent + line)
    .join('\n');
}

function renderBlock(token: Token, context: Context, indent: string): string | null {
  const { palette } = context;
  switch (token.type) {
    case 'space':
      return null;
    case 'heading': {
      const heading = token as Tokens.Heading;
      const text = renderInline(heading.tokens, palette);
      return wrapText(
        heading.depth === 1 ? palette.bold(palette.underline(text)) : palette.bold(text),
        context,
        indent,
      );
    }
    case 'paragraph':
      return wrapText(renderInline((token as Tokens.Paragraph).tokens, palette), context, indent);
    case 'text': {
      const text = token as Tokens.Text;
      return wrapText(text.tokens ? renderInline(text.tokens, palette) : unescapeEntities(text.text), context, indent);
    }
    case 'list': {
      const list = token as Tokens.List;
      const start = typeof list.start === 'number' ? list.start : 1;
      return list.items
        .map((item, index) => {
          const bullet = item.task ? (item.checked ? '☑' : '☐') : list.ordered ? `${start + index}.` : '•';
          const hanging = `${indent}${' '.repeat(stringWidth(bullet) + 1)}`;
          // Items hold paragraphs of a loose list and text of a tight one, and the checkbox of a task.
          const children = item.tokens.filter((child) => child.type !== 'checkbox');
          const body = children
            .map((child) => renderBlock(child, { ...context, gap: '\n' }, hanging))
            .filter((block) => block !== null)
            .join('\n');
          const rest = body.startsWith(hanging) ? body.slice(hanging.length) : body.trimStart();
          return `${indent}${palette.dim(bullet)} ${rest}`;
        })
        .join('\n');
    }
    case 'code': {
      const code = token as Tokens.Code;
      const highlighted = highlightCode(code.text, languageOf(code.lang), palette);
      return highlighted
        .split('\n')
        .map((line) => `${indent}    ${line}`)
        .join('\n');
    }
    case 'blockquote':
      return renderBlocks((token as Tokens.Blockquote).tokens, context, `${indent}${palette.dim('│')} `);
    case 'hr':
      return indent + palette.dim('─'.repeat(Math.min(40, context.width ?? 40)));
    case 'table':
      return renderTable(token as Tokens.Table, context, indent);
    case 'html':
      return wrapText((token as Tokens.HTML).text.replace(/\n+$/, ''), context, indent);
    default:
      return indent + token.raw.replace(/\n+$/, '');
  }
}

/** A table with its columns padded to their widest cell, the header bold and underlined by a rule. */
function renderTable(table: Tokens.Table, context: Context, indent: string): string {
  const { palette } = context;
  const header = table.header.map((cell) => renderInline(cell.tokens, palette));
  const rows = table.rows.map((row) => row.map((cell) => renderInline(cell.tokens, palette)));
  const widths = header.map((cell, column) =>
    Math.max(stringWidth(cell), ...rows.map((row) => stringWidth(row[column] ?? ''))),
  );
  const pad = (cell: string, column: number) => {
    const room = (widths[column] ?? 0) - stringWidth(cell);
    const align = table.align[column];
    if (align === 'right') return ' '.repeat(room) + cell;
    if (align === 'center') return ' '.repeat(Math.floor(room / 2)) + cell + ' '.repeat(Math.ceil(room / 2));
    return cell + ' '.repeat(room);
  };
  const total = widths.reduce((sum, width) => sum + width, 0) + 3 * (widths.length - 1) + stringWidth(indent);
  if (context.width !== undefined && total > context.width) {
    // Too wide for the terminal: each row as "header: value" lines, which wrap like text.
    return rows
      .map((row) =>
        row
          .map((cell, column) => wrapText(`${palette.bold(`${header[column] ?? ''}:`)} ${cell}`, context, indent))
          .join('\n'),
      )
      .join(`\n${indent}${palette.dim('─'.repeat(Math.min(20, context.width)))}\n`);
  }
  const line = (cells: string[]) => `${indent}${cells.map(pad).join(palette.dim(' │ ')).trimEnd()}`;
  const rule = `${indent}${palette.dim(widths.map((width) => '─'.repeat(width)).join('─┼─'))}`;
  return [line(header.map((cell) => palette.bold(cell))), rule, ...rows.map(line)].join('\n');
}

function renderInline(tokens: Token[], palette: Palette): string {
  return tokens
    .map((token) => {
      switch (token.type) {
        case 'codespan':
          return palette.cyan(unescapeEntities((token as Tokens.Codespan).text));
        case 'strong':
          return palette.bold(renderInline((token as Tokens.Strong).tokens, palette));
        case 'em':
          return palette.italic(renderInline((token as Tokens.Em).tokens, palette));
        case 'del':
          return palette.dim(renderInline((token as Tokens.Del).tokens, palette));
        case 'link': {
          const link = token as Tokens.Link;
          const label = renderInline(link.tokens, palette);
          return label === link.href ? palette.cyan(label) : `${label} (${palette.cyan(link.href)})`;
        }
        case 'image': {
          const image = token as Tokens.Image;
          return `[image: ${image.text || image.href}] (${palette.cyan(image.href)})`;
        }
        case 'br':
          return '\n';
        case 'text': {
          const text = token as Tokens.Text;
          return text.tokens ? renderInline(text.tokens, palette) : unescapeEntities(text.text);
        }
        case 'escape':
          return (token as Tokens.Escape).text;
        default:
          return token.raw;
      }
    })
    .join('');
}

/** marked escapes `&`, `<`, `>`, `"` and `'` in text for HTML; a terminal shows the characters. */
function unescapeEntities(text: string): string {
  return text
    .replaceAll('&lt;', '<')
    .replaceAll('&gt;', '>')
    .replaceAll('&quot;', '"')
    .replaceAll('&#39;', "'")
    .replaceAll('&amp;', '&');
}
