/** Parses `/name args`: the name runs to the first whitespace; args are the trimmed rest. */
export function parseCommandLine(line: string): { name: string; args: string } | null {
  const trimmed = line.trimStart();
  if (!trimmed.startsWith('/')) return null;
  const match = /^\/(\S+)(?:\s+([\s\S]*))?$/.exec(trimmed);
  if (!match?.[1]) return null;
  return { name: match[1].toLowerCase(), args: (match[2] ?? '').trim() };
}
