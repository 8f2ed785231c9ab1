/** A term that the `unicode61` tokenizer would turn into at least one token. */
const HAS_TOKEN = /[\p{L}\p{N}]/u;

/**
 * Turns a user's search text into a safe FTS5 query (spec/core.md §9.4.8): split on whitespace,
 * each term quoted with embedded quotes doubled (so hyphens, `AND`, `NEAR(` and column filters are
 * literal text), a trailing `*` kept as a prefix match, terms combined with AND. Terms with no
 * letter or digit are dropped: they would be empty phrases. Returns `null` when nothing is left.
 */
export function sanitizeFtsQuery(query: string): string | null {
  const terms: string[] = [];
  for (const raw of query.split(/\s+/u)) {
    let term = raw;
    let prefix = false;
    while (term.endsWith('*')) {
      term = term.slice(0, -1);
      prefix = true;
    }
    if (!HAS_TOKEN.test(term)) continue;
    terms.push(`"${term.replaceAll('"', '""')}"${prefix ? '*' : ''}`);
  }
  return terms.length === 0 ? null : terms.join(' AND ');
}
