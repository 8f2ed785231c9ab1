import { describe, expect, it } from 'vitest';
import {
  searchDocumentText,
  searchSnippet,
  searchTerms,
  toTsqueryLiteral,
  toTsvectorLiteral,
} from './search-document.js';

describe('search documents for the PostgreSQL store', () => {
  it('splits on every non letter or digit and folds case and diacritics, as unicode61 does', () => {
    expect(toTsvectorLiteral('src/store/Index.ts café-Crème x_y')).toBe(
      "'src':1 'store':2 'index':3 'ts':4 'cafe':5 'creme':6 'x':7 'y':8",
    );
  });

  it('turns a search into ANDed phrases with a trailing * as a prefix, dropping terms with no token', () => {
    const terms = searchTerms('well-known  config*  "  NEAR( 🙂');
    expect(toTsqueryLiteral(terms)).toBe("('well' <-> 'known') & 'config':* & 'near'");
    expect(searchTerms('* "" +')).toEqual([]);
  });

  it('indexes tool call names and arguments and the tool name, and cuts tool output at 8,000 characters', () => {
    const text = searchDocumentText({
      role: 'tool',
      content: `${'a'.repeat(8_000)} beyond`,
      toolCalls: null,
      toolName: 'read_file',
    });
    expect(text).not.toContain('beyond');
    expect(text).toContain('read_file');
    expect(
      searchDocumentText({
        role: 'assistant',
        content: '',
        toolCalls: [{ id: 'c', name: 'grep', arguments: '{"pattern":"needle"}' }],
        toolName: null,
      }),
    ).toContain('needle');
  });

  it('snippets mark matches with >>> and <<< and show where the document goes on', () => {
    const words = Array.from({ length: 60 }, (_, index) => `w${index}`);
    words[40] = 'Walrus';
    const snippet = searchSnippet(words.join(' '), searchTerms('walrus'));
    expect(snippet).toContain('>>>Walrus<<<');
    expect(snippet.startsWith('…')).toBe(true);
    expect(snippet.endsWith('…')).toBe(true);
    expect(searchSnippet('short text', searchTerms('short'))).toBe('>>>short<<< text');
  });
});
