/** Longest stored title, in characters (spec/core.md §9.4.6). */
export const MAX_TITLE_LENGTH = 100;

/**
 * Trims a title and cuts it to 100 characters (whole code points, so no emoji is split); an empty
 * result is `null`.
 */
export function normalizeTitle(title: string | null | undefined): string | null {
  if (title === null || title === undefined) return null;
  const trimmed = title.trim();
  if (trimmed === '') return null;
  const codePoints = Array.from(trimmed);
  const cut = codePoints.length > MAX_TITLE_LENGTH ? codePoints.slice(0, MAX_TITLE_LENGTH).join('').trimEnd() : trimmed;
  return cut === '' ? null : cut;
}

/**
 * The base of a numbered title: "Plan #3" → "Plan", so that branching "Plan #2" gives "Plan #3"
 * rather than "Plan #2 #2".
 */
export function titleBase(title: string): string {
  const match = /^(.*\S)\s+#\d+$/u.exec(title);
  return match?.[1] ?? title;
}

/** "`<base> #<number>`", with the base shortened so the whole stays within 100 characters. */
export function numberedTitle(base: string, number: number): string {
  const suffix = ` #${number}`;
  const room = MAX_TITLE_LENGTH - suffix.length;
  const codePoints = Array.from(base);
  const head = codePoints.length > room ? codePoints.slice(0, room).join('').trimEnd() : base;
  return `${head}${suffix}`;
}

/** The largest number whose numbered titles {@link numberedTitleHead} covers. */
const LARGEST_COVERED_NUMBER = 999_999_999;

/**
 * The start every numbered title "`<base> #n`" of `title`'s base shares up to n = 999,999,999: the base as
 * {@link numberedTitle} cuts it for the longest of those numbers (a longer number leaves less room, and each cut is
 * a prefix of the cut for a shorter number).
 */
export function numberedTitleHead(title: string): string {
  const numbered = numberedTitle(titleBase(title), LARGEST_COVERED_NUMBER);
  return numbered.slice(0, numbered.length - ` #${LARGEST_COVERED_NUMBER}`.length);
}

/** `text` with ASCII letters lowered: how SQLite's `NOCASE` collation compares titles (other letters as they are). */
export function asciiFolded(text: string): string {
  return text.replace(/[A-Z]+/g, (letters) => letters.toLowerCase());
}
