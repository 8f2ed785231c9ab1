/**
 * The search document of a message and the query and snippet built on it, in plain code for the
 * PostgreSQL store: the text is tokenized here, not by the server's parser, so that search matches
 * the SQLite store's FTS5 `unicode61 remove_diacritics 2` tokenizer whatever the server's locale
 * (spec/core.md §9.2.3, §9.4.8).
 */
import type { StoredToolCall } from '../types.js';

/** Tool output is indexed up to this many characters (as in the SQLite trigger). */
const TOOL_OUTPUT_INDEXED = 8_000;
/** tsvector positions stop at 16,383; further tokens are indexed at that position. */
const MAX_POSITION = 16_383;
/** Tokens past this count are left out, which keeps a tsvector under PostgreSQL's 1 MB limit. */
const MAX_TOKENS = 50_000;
/** PostgreSQL refuses lexemes of 2 KB or more. */
const MAX_LEXEME_BYTES = 2_046;
const TOKEN = /[\p{L}\p{N}\p{Co}][\p{L}\p{N}\p{Co}\p{M}]*/gu;
const MARKS = /\p{M}/gu;

/** The fields of a message row that feed its search document. */
export interface SearchableRow {
  role: string;
  content: string;
  toolCalls: readonly StoredToolCall[] | null | undefined;
  toolName: string | null | undefined;
}

/** The text indexed for a row: the content (tool output cut), tool call names and arguments, and tool names. */
export function searchDocumentText(row: SearchableRow): string {
  let text = row.content;
  if (row.role === 'tool' && text.length > TOOL_OUTPUT_INDEXED) {
    text = Array.from(text).slice(0, TOOL_OUTPUT_INDEXED).join('');
  }
  const calls = row.toolCalls ?? [];
  if (calls.length > 0) text += ` ${calls.map((call) => `${call.name ?? ''} ${call.arguments ?? ''}`).join(' ')}`;
  const toolNames = row.toolName ?? (calls.length > 0 ? calls.map((call) => call.name).join(' ') : '');
  return toolNames ? `${text}\n${toolNames}` : text;
}

/** Case- and diacritic-folded form of a token, as unicode61 with remove_diacritics compares them. */
export function foldToken(token: string): string {
  return token.normalize('NFKD').replace(MARKS, '').toLowerCase();
}

interface Token {
  folded: string;
  start: number;
  end: number;
}

function tokenize(text: string, limit = Number.POSITIVE_INFINITY): Token[] {
  const tokens: Token[] = [];
  for (const match of text.matchAll(TOKEN)) {
    const folded = foldToken(match[0]);
    if (folded === '') continue;
    tokens.push({ folded, start: match.index, end: match.index + match[0].length });
    if (tokens.length >= limit) break;
  }
  return tokens;
}

function quoteLexeme(lexeme: string): string {
  return `'${lexeme.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`;
}

/** The `tsvector` literal of a document: each folded token with its positions. */
export function toTsvectorLiteral(text: string): string {
  const positions = new Map<string, number[]>();
  const tokens = tokenize(text, MAX_TOKENS);
  tokens.forEach((token, index) => {
    if (Buffer.byteLength(token.folded) > MAX_LEXEME_BYTES) return;
    const list = positions.get(token.folded);
    const position = Math.min(index + 1, MAX_POSITION);
    if (list === undefined) positions.set(token.folded, [position]);
    else if (list[list.length - 1] !== position && list.length < 256) list.push(position);
  });
  return [...positions].map(([lexeme, at]) => `${quoteLexeme(lexeme)}:${at.join(',')}`).join(' ');
}

/** One term of a search: its tokens as a phrase, the last one a prefix when the term ended in `*`. */
export interface SearchTerm {
  tokens: string[];
  prefix: boolean;
}

/**
 * The terms of a user's search text, by the rules of `sanitizeFtsQuery`: split on whitespace, a
 * trailing `*` is a prefix match, everything else is literal text; terms without a letter or digit
 * are dropped. Returns an empty list when nothing is left.
 */
export function searchTerms(query: string): SearchTerm[] {
  const terms: SearchTerm[] = [];
  for (const raw of query.split(/\s+/u)) {
    let term = raw;
    let prefix = false;
    while (term.endsWith('*')) {
      term = term.slice(0, -1);
      prefix = true;
    }
    const tokens = tokenize(term).map((token) => token.folded);
    if (tokens.length > 0) terms.push({ tokens, prefix });
  }
  return terms;
}

/** The `tsquery` literal of the terms: each a phrase (`<->`), all required (`&`). */
export function toTsqueryLiteral(terms: SearchTerm[]): string {
  return terms
    .map((term) => {
      const lexemes = term.tokens.map((token, index) =>
        term.prefix && index === term.tokens.length - 1 ? `${quoteLexeme(token)}:*` : quoteLexeme(token),
      );
      return lexemes.length === 1 ? lexemes[0] : `(${lexemes.join(' <-> ')})`;
    })
    .join(' & ');
}

/**
 * A snippet of a matching document like FTS5's `snippet(…, '>>>', '<<<', '…', 24)`: the window of
 * `size` tokens holding the most matched tokens, matches wrapped in the markers, an ellipsis where
 * the document goes on.
 */
export function searchSnippet(text: string, terms: SearchTerm[], size = 24): string {
  const tokens = tokenize(text);
  if (tokens.length === 0) return '';
  const matches = tokens.map((token) =>
    terms.some((term) =>
      term.tokens.some((lexeme, index) =>
        term.prefix && index === term.tokens.length - 1 ? token.folded.startsWith(lexeme) : token.folded === lexeme,
      ),
    ),
  );
  // The window starting at a match that holds the most matches, then moved back a few tokens for context.
  const before: number[] = [0];
  for (const matched of matches) before.push((before[before.length - 1] as number) + (matched ? 1 : 0));
  let bestStart = 0;
  let bestCount = -1;
  for (let index = 0; index < tokens.length; index += 1) {
    if (!matches[index]) continue;
    const count = (before[Math.min(tokens.length, index + size)] as number) - (before[index] as number);
    if (count > bestCount) {
      bestCount = count;
      bestStart = index;
    }
  }
  bestStart = Math.max(0, Math.min(bestStart - Math.floor(size / 4), tokens.length - size));
  const end = Math.min(tokens.length, bestStart + size);
  let snippet = '';
  let cursor = bestStart === 0 ? 0 : (tokens[bestStart] as Token).start;
  for (let index = bestStart; index < end; index += 1) {
    const token = tokens[index] as Token;
    snippet += text.slice(cursor, token.start);
    snippet += matches[index] ? `>>>${text.slice(token.start, token.end)}<<<` : text.slice(token.start, token.end);
    cursor = token.end;
  }
  snippet += end === tokens.length ? text.slice(cursor) : '';
  return `${bestStart > 0 ? '…' : ''}${snippet}${end < tokens.length ? '…' : ''}`;
}
