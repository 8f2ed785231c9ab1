import { Lexer, type Token, type Tokens } from 'marked';
import type { Palette } from './style.js';

/**
 * Renders the Markdown of command output (`/help`, `/status`, `/resume`, …) for the terminal:
 * marked parses it, and each block is drawn with the chat's palette — code spans cyan without their
 * backticks, bold and italic as such, headings bold, list items with a bullet, code blocks indented.
 * With colors off the same layout is printed as plain text.
 */
export function renderMarkdown(markdown: string, palette: Palette): string {
  const blocks = new Lexer().lex(markdown);
  return blocks
    .map((token) => renderBlock(token, palette))
    .filter((block) => block !== null)
    .join('\n');
}

function renderBlock(token: Token, palette: Palette, indent = ''): string | null {
  switch (token.type) {
    case 'space':
      return null;
    case 'heading':
      return indent + palette.bold(renderInline((token as Tokens.Heading).tokens, palette));
    case 'paragraph':
      return indent + renderInline((token as Tokens.Paragraph).tokens, palette);
    case 'text': {
      const text = token as Tokens.Text;
      return indent + (text.tokens ? renderInline(text.tokens, palette) : text.text);
    }
    case 'list': {
      const list = token as Tokens.List;
      const start = typeof list.start === 'number' ? list.start : 1;
      return list.items
        .map((item, index) => {
          const bullet = list.ordered ? `${start + index}.` : '•';
          const [first, ...rest] = item.tokens
            .map((child) => renderBlock(child, palette, `${indent}  `))
            .filter((line) => line !== null);
          const head = `${indent}${palette.dim(bullet)} ${(first ?? '').trimStart()}`;
          return [head, ...rest].join('\n');
        })
        .join('\n');
    }
    case 'code': {
      const code = token as Tokens.Code;
      return code.text
        .split('\n')
        .map((line) => `${indent}    ${palette.cyan(line)}`)
        .join('\n');
    }
    case 'blockquote':
      return (token as Tokens.Blockquote).tokens
        .map((child) => renderBlock(child, palette, `${indent}${palette.dim('│')} `))
        .filter((line) => line !== null)
        .join('\n');
    case 'hr':
      return indent + palette.dim('─'.repeat(40));
    case 'table': {
      const table = token as Tokens.Table;
      const row = (cells: Tokens.TableCell[]) => cells.map((cell) => renderInline(cell.tokens, palette)).join('  ');
      return [palette.bold(row(table.header)), ...table.rows.map(row)].map((line) => indent + line).join('\n');
    }
    default:
      return indent + token.raw.replace(/\n+$/, '');
  }
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
          return renderInline((token as Tokens.Del).tokens, palette);
        case 'link': {
          const link = token as Tokens.Link;
          const label = renderInline(link.tokens, palette);
          return label === link.href ? palette.cyan(label) : `${label} (${palette.cyan(link.href)})`;
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
