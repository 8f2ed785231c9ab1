import { inspect, stripVTControlCharacters, styleText } from 'node:util';

/** The text styles the chat uses; each is the identity when colors are off. */
export interface Palette {
  readonly enabled: boolean;
  bold(text: string): string;
  dim(text: string): string;
  italic(text: string): string;
  underline(text: string): string;
  red(text: string): string;
  green(text: string): string;
  yellow(text: string): string;
  blue(text: string): string;
  cyan(text: string): string;
  magenta(text: string): string;
  gray(text: string): string;
}

type StyleName = Parameters<typeof styleText>[0] & keyof typeof inspect.colors;

function style(enabled: boolean, name: StyleName): (text: string) => string {
  if (!enabled) return (text) => text;
  const codes = inspect.colors[name];
  // The palette already decided whether colors are wanted (the chat's output, NO_COLOR), so
  // styleText must not second-guess it from process.stdout.
  const options = { validateStream: false };
  if (codes === undefined) return (text) => styleText(name, text, options);
  const [open, close] = codes;
  // styleText does not re-open its style after an inner one closes (a dim line holding a bold
  // word would lose the dim after the word), so the inner closes are followed by a re-open.
  return (text) => styleText(name, text.replaceAll(`\x1b[${close}m`, `\x1b[${close}m\x1b[${open}m`), options);
}

/** Builds a palette on `util.styleText`; with `enabled` false every style returns its input unchanged. */
export function createPalette(enabled: boolean): Palette {
  return {
    enabled,
    bold: style(enabled, 'bold'),
    dim: style(enabled, 'dim'),
    italic: style(enabled, 'italic'),
    underline: style(enabled, 'underline'),
    red: style(enabled, 'red'),
    green: style(enabled, 'green'),
    yellow: style(enabled, 'yellow'),
    blue: style(enabled, 'blue'),
    cyan: style(enabled, 'cyan'),
    magenta: style(enabled, 'magenta'),
    gray: style(enabled, 'gray'),
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
export const stripAnsi: (text: string) => string = stripVTControlCharacters;
