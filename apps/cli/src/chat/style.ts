/** The handful of text styles the chat uses; each is the identity when colors are off. */
export interface Palette {
  readonly enabled: boolean;
  bold(text: string): string;
  dim(text: string): string;
  italic(text: string): string;
  red(text: string): string;
  green(text: string): string;
  yellow(text: string): string;
  cyan(text: string): string;
  magenta(text: string): string;
}

function wrap(enabled: boolean, open: number, close: number): (text: string) => string {
  if (!enabled) return (text) => text;
  // Re-open after every inner close so nested styles (a dim line holding a bold word) survive.
  return (text) => `\x1b[${open}m${text.replaceAll(`\x1b[${close}m`, `\x1b[${close}m\x1b[${open}m`)}\x1b[${close}m`;
}

/** Builds a palette; with `enabled` false every style returns its input unchanged. */
export function createPalette(enabled: boolean): Palette {
  return {
    enabled,
    bold: wrap(enabled, 1, 22),
    dim: wrap(enabled, 2, 22),
    italic: wrap(enabled, 3, 23),
    red: wrap(enabled, 31, 39),
    green: wrap(enabled, 32, 39),
    yellow: wrap(enabled, 33, 39),
    cyan: wrap(enabled, 36, 39),
    magenta: wrap(enabled, 35, 39),
  };
}

/**
 * Colors are for people: only on a terminal, and never when NO_COLOR is set to a non-empty value
 * (https://no-color.org).
 */
export function shouldUseColor(output: { isTTY?: boolean }, env: Record<string, string | undefined>): boolean {
  const noColor = env.NO_COLOR;
  if (noColor !== undefined && noColor !== '') return false;
  return output.isTTY === true;
}

/** Removes ANSI escape sequences (SGR, cursor moves, erase) from terminal output. */
export function stripAnsi(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching escape sequences is the point.
  return text.replace(/\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-Z\\-_]/g, '');
}
