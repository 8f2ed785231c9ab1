import { extname } from 'node:path';
import type { createEmphasize } from 'emphasize';
import type { Palette } from './style.js';

/** highlight.js with its common grammars (about 40 languages), once loaded. */
let emphasize: ReturnType<typeof createEmphasize> | null = null;
let loading: Promise<void> | null = null;

/**
 * Loads highlight.js and its grammars (about 100 ms of module evaluation). The chat starts this
 * while it opens the host and waits for it before the first prompt; until it is loaded, code is
 * shown unhighlighted.
 */
export function loadHighlighter(): Promise<void> {
  loading ??= import('emphasize').then((module) => {
    emphasize = module.createEmphasize(module.common);
  });
  return loading;
}

/** File extensions highlight.js does not register as aliases, mapped to a grammar it has. */
const EXTENSION_LANGUAGES: Record<string, string> = {
  mjs: 'javascript',
  cjs: 'javascript',
  mts: 'typescript',
  cts: 'typescript',
  tsx: 'typescript',
  jsx: 'javascript',
  yml: 'yaml',
  sh: 'bash',
  zsh: 'bash',
  md: 'markdown',
  htm: 'xml',
  html: 'xml',
  svg: 'xml',
  toml: 'ini',
};

const PLAIN_TEXT = new Set(['txt', 'text', 'plaintext', 'plain', 'log']);

/** Style sheet for highlight.js classes, built from the chat palette so NO_COLOR turns it off. */
function sheetOf(palette: Palette): Record<string, (value: string) => string> {
  // A token may span lines (a block comment); styling each line keeps the escape codes on one
  // line, so a caller can split the result by lines.
  const perLine = (paint: (text: string) => string) => (value: string) =>
    value
      .split('\n')
      .map((line) => (line === '' ? line : paint(line)))
      .join('\n');
  return {
    comment: perLine(palette.gray),
    quote: perLine(palette.gray),
    keyword: perLine(palette.magenta),
    'selector-tag': perLine(palette.magenta),
    literal: perLine(palette.cyan),
    number: perLine(palette.cyan),
    string: perLine(palette.green),
    regexp: perLine(palette.green),
    'meta meta-string': perLine(palette.green),
    doctag: perLine(palette.cyan),
    title: perLine(palette.blue),
    'title function_': perLine(palette.blue),
    'title class_': perLine(palette.yellow),
    section: perLine(palette.blue),
    name: perLine(palette.blue),
    attr: perLine(palette.yellow),
    attribute: perLine(palette.yellow),
    variable: perLine(palette.yellow),
    'template-variable': perLine(palette.yellow),
    type: perLine(palette.yellow),
    built_in: perLine(palette.cyan),
    symbol: perLine(palette.magenta),
    bullet: perLine(palette.magenta),
    meta: perLine(palette.gray),
    addition: perLine(palette.green),
    deletion: perLine(palette.red),
    emphasis: perLine(palette.italic),
    strong: perLine(palette.bold),
  };
}

/** The grammar name for a fence's info string (` ```ts `) or a file path, or null when none is known. */
export function languageOf(hint: string | undefined, kind: 'fence' | 'path' = 'fence'): string | null {
  if (hint === undefined || hint.trim() === '' || emphasize === null) return null;
  const word =
    kind === 'path'
      ? extname(hint).slice(1).toLowerCase()
      : (hint.trim().split(/\s+/)[0] ?? '').toLowerCase().replace(/^\{?\.?/, '');
  if (word === '') return null;
  const name = EXTENSION_LANGUAGES[word] ?? word;
  // Plain text has a grammar that colors nothing: callers then color whole lines instead.
  if (PLAIN_TEXT.has(name)) return null;
  return emphasize.registered(name) ? name : null;
}

/**
 * Syntax-highlights code for the terminal. Returns the code unchanged when colors are off or the
 * language is unknown; the result has exactly the lines of the input.
 */
export function highlightCode(code: string, language: string | null, palette: Palette): string {
  if (!palette.enabled || language === null || emphasize === null) return code;
  try {
    return emphasize.highlight(language, code, sheetOf(palette)).value;
  } catch {
    // A grammar that throws on odd input must not cost the user the answer.
    return code;
  }
}
