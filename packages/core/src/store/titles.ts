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
