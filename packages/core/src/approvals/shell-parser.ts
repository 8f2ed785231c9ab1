/**
 * Reads a shell command with tree-sitter-bash (through web-tree-sitter) into the simple commands
 * that approval detection judges (spec/core.md §12.1, docs/adr/0033).
 *
 * The grammar is a WebAssembly module, so loading it is asynchronous: {@link loadShellParser} starts
 * it once and caches the promise; {@link parseShell} is synchronous and returns null until it has
 * finished. Callers that cannot wait treat "not loaded" as "cannot judge" (they ask).
 */

import { createRequire } from 'node:module';
import type { Node, Parser } from 'web-tree-sitter';

/** A word of a simple command as far as it can be known before the command runs. */
export interface ShellWord {
  /** The word with quotes and escapes removed; expansions are kept as their source text. */
  text: string;
  /** The source text of the word. */
  source: string;
  /** True when the word holds no expansion, substitution, glob or brace expansion: its value is `text`. */
  literal: boolean;
  /** The literal text before the first expansion (all of `text` when literal). */
  literalPrefix: string;
  /** True when a command substitution or process substitution inside the word runs curl or wget. */
  fetches: boolean;
  /** True when the word is (or contains) a process substitution `<(…)` / `>(…)`. */
  processSubstitution: boolean;
}

/** A redirection of a simple command. */
export interface ShellRedirect {
  /** `>`, `>>`, `>|`, `&>`, `&>>`, `<`, `<&`, `>&`, `<<`, `<<-`, `<<<`. */
  operator: string;
  target: ShellWord | null;
}

/** Where a simple command's standard input comes from, when the command line feeds it. */
export type StdinSource = 'pipe' | 'file' | 'heredoc' | 'herestring' | 'process_substitution';

/** One simple command: assignments, program and arguments, redirections. */
export interface SimpleShellCommand {
  /** `NAME=value` words before the program. */
  assignments: { name: string; value: ShellWord | null }[];
  /** The program and its arguments. Empty for a command made only of assignments or redirections. */
  words: ShellWord[];
  redirects: ShellRedirect[];
  /** How the command line feeds its standard input, or null. */
  stdin: StdinSource | null;
  /** Bodies of heredocs and here-strings fed to it (here-strings only when literal). */
  stdinTexts: string[];
}

/** A pipeline: its stages' simple commands, in order. */
export interface ShellPipeline {
  stages: SimpleShellCommand[][];
}

/** The result of {@link parseShell}. */
export interface ParsedShell {
  /** Every simple command that can run, including those inside substitutions, loops and functions. */
  commands: SimpleShellCommand[];
  /** Pipelines, for the checks that look across stages (`curl … | sh`). */
  pipelines: ShellPipeline[];
  /** Standalone assignments and `export`/`declare`/`local` assignments. */
  assignments: { name: string; value: ShellWord | null }[];
  /** Alias definitions (`alias x=…`). */
  aliases: string[];
  /** True when the parser met a syntax error or a missing token. */
  hasError: boolean;
}

let parser: Parser | null = null;
let loading: Promise<void> | null = null;

/**
 * Loads the bash grammar once (later calls return the same promise). The grammar's `.wasm` is read
 * from the installed tree-sitter-bash package. A failure is reported and the next call retries.
 */
export function loadShellParser(): Promise<void> {
  if (loading !== null) return loading;
  loading = (async () => {
    const { Parser: ParserClass, Language } = await import('web-tree-sitter');
    await ParserClass.init();
    const require = createRequire(import.meta.url);
    const language = await Language.load(require.resolve('tree-sitter-bash/tree-sitter-bash.wasm'));
    const instance = new ParserClass();
    instance.setLanguage(language);
    parser = instance;
  })().catch((error: unknown) => {
    loading = null;
    throw error;
  });
  return loading;
}

/** True once {@link loadShellParser} has finished. */
export function isShellParserLoaded(): boolean {
  return parser !== null;
}

/** Parses a command line; null while the grammar is not loaded. */
export function parseShell(source: string): ParsedShell | null {
  if (parser === null) return null;
  const tree = parser.parse(source);
  if (tree === null) return null;
  try {
    const result: ParsedShell = { commands: [], pipelines: [], assignments: [], aliases: [], hasError: false };
    new Walker(result).walk(tree.rootNode, { stdin: null, redirects: [] });
    return result;
  } finally {
    tree.delete();
  }
}

// ---------------------------------------------------------------------------------------------
// Words
// ---------------------------------------------------------------------------------------------

const FETCHERS = new Set(['curl', 'wget']);

/** True when a `command` node anywhere below runs curl or wget. */
function runsFetcher(node: Node): boolean {
  for (const name of node.descendantsOfType('command_name')) {
    if (name === null) continue;
    const text = name.text.replace(/^.*\//, '');
    if (FETCHERS.has(text)) return true;
  }
  return false;
}

/** Removes backslash escapes of an unquoted word; a backslash-newline joins lines. */
function unescapeUnquoted(text: string): string {
  return text.replace(/\\\n/g, '').replace(/\\(.)/gs, '$1');
}

/** Inside double quotes a backslash escapes only `$`, `` ` ``, `"`, `\` and a newline. */
function unescapeDoubleQuoted(text: string): string {
  return text.replace(/\\\n/g, '').replace(/\\([$`"\\])/g, '$1');
}

/** Decodes the escapes of a `$'…'` string. */
function decodeAnsiC(body: string): string {
  const simple: Record<string, string> = {
    a: '\x07',
    b: '\b',
    e: '\x1b',
    E: '\x1b',
    f: '\f',
    n: '\n',
    r: '\r',
    t: '\t',
    v: '\v',
    '\\': '\\',
    "'": "'",
    '"': '"',
    '?': '?',
  };
  return body.replace(
    /\\(x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|[0-7]{1,3}|c.|.)/gs,
    (match, sequence: string) => {
      const head = sequence[0] as string;
      if (head === 'x' || head === 'u' || head === 'U')
        return String.fromCodePoint(Number.parseInt(sequence.slice(1), 16));
      if (/[0-7]/.test(head)) return String.fromCharCode(Number.parseInt(sequence, 8) & 0xff);
      if (head === 'c') return String.fromCharCode((sequence.charCodeAt(1) ?? 0) & 0x1f);
      return simple[head] ?? match;
    },
  );
}

/** Unquoted glob characters or a brace expansion make a word's value depend on the file system or on bash. */
function hasGlobOrBrace(raw: string): boolean {
  const unescaped = raw.replace(/\\./gs, '');
  return /[*?[]/.test(unescaped) || /\{[^{}]*(,|\.\.)[^{}]*\}/.test(unescaped);
}

/** Reads a word node (word, string, raw_string, concatenation, expansion, …). */
export function readWord(node: Node): ShellWord {
  const source = node.text;
  const fetches = runsFetcher(node);
  const processSubstitution =
    node.type === 'process_substitution' || node.descendantsOfType('process_substitution').length > 0;
  const base = { source, fetches, processSubstitution };
  switch (node.type) {
    case 'word':
    case 'number': {
      const text = unescapeUnquoted(source);
      const literal = node.type === 'number' || !hasGlobOrBrace(source);
      return { ...base, text, literal, literalPrefix: literal ? text : '' };
    }
    case 'raw_string': {
      const text = source.slice(1, -1);
      return { ...base, text, literal: true, literalPrefix: text };
    }
    case 'ansi_c_string': {
      const text = decodeAnsiC(source.slice(2, -1));
      return { ...base, text, literal: true, literalPrefix: text };
    }
    case 'string':
    case 'translated_string': {
      const inner = node.type === 'string' ? source.slice(1, -1) : source.slice(2, -1);
      const children = node.namedChildren.filter((child): child is Node => child !== null);
      const literal = children.every((child) => child.type === 'string_content');
      if (literal) {
        const text = unescapeDoubleQuoted(inner);
        return { ...base, text, literal: true, literalPrefix: text };
      }
      let prefix = '';
      const stringStart = node.startIndex;
      const first = children.find((child) => child.type !== 'string_content');
      if (first !== undefined)
        prefix = unescapeDoubleQuoted(source.slice(node.type === 'string' ? 1 : 2, first.startIndex - stringStart));
      return { ...base, text: unescapeDoubleQuoted(inner), literal: false, literalPrefix: prefix };
    }
    case 'concatenation': {
      const parts = node.namedChildren.filter((child): child is Node => child !== null).map(readWord);
      const literal = parts.every((part) => part.literal);
      let literalPrefix = '';
      for (const part of parts) {
        literalPrefix += part.literalPrefix;
        if (!part.literal) break;
      }
      return { ...base, text: parts.map((part) => part.text).join(''), literal, literalPrefix };
    }
    default:
      return { ...base, text: source, literal: false, literalPrefix: '' };
  }
}

// ---------------------------------------------------------------------------------------------
// Walking the tree
// ---------------------------------------------------------------------------------------------

interface Inherited {
  stdin: StdinSource | null;
  /** Redirections of an enclosing redirected_statement that apply to the command below. */
  redirects: Node[];
}

const SUBSTITUTIONS = new Set(['command_substitution', 'process_substitution']);

function namedChildren(node: Node): Node[] {
  return node.namedChildren.filter((child): child is Node => child !== null);
}

function operatorOf(node: Node): string {
  for (const child of node.children) {
    if (child !== null && !child.isNamed) return child.type;
  }
  return '';
}

class Walker {
  constructor(private readonly result: ParsedShell) {}

  /** Walks a node; returns the simple commands it runs directly (not inside substitutions). */
  walk(node: Node, inherited: Inherited): SimpleShellCommand[] {
    if (node.isError || node.isMissing) this.result.hasError = true;
    switch (node.type) {
      case 'command':
        return this.command(node, inherited);
      case 'redirected_statement':
        return this.redirectedStatement(node, inherited);
      case 'pipeline':
        return this.pipeline(node, inherited, false);
      case 'variable_assignment':
        this.assignment(node);
        return [];
      case 'declaration_command':
        for (const child of namedChildren(node)) {
          if (child.type === 'variable_assignment') this.assignment(child);
          else this.walk(child, { stdin: null, redirects: [] });
        }
        return [];
      case 'heredoc_redirect':
      case 'herestring_redirect':
      case 'file_redirect':
        this.redirectChildren(node);
        return [];
      default: {
        const fresh = SUBSTITUTIONS.has(node.type);
        const commands: SimpleShellCommand[] = [];
        for (const child of namedChildren(node)) {
          commands.push(
            ...this.walk(child, fresh ? { stdin: null, redirects: [] } : { stdin: inherited.stdin, redirects: [] }),
          );
        }
        return fresh ? [] : commands;
      }
    }
  }

  private assignment(node: Node): { name: string; value: ShellWord | null } {
    const name = node.childForFieldName('name')?.text ?? '';
    const valueNode = node.childForFieldName('value');
    const entry = { name, value: valueNode === null ? null : readWord(valueNode) };
    this.result.assignments.push(entry);
    if (valueNode !== null) this.walk(valueNode, { stdin: null, redirects: [] });
    return entry;
  }

  /** Substitutions inside redirect targets run; a pipeline inside a heredoc redirect is the rest of the line. */
  private redirectChildren(node: Node): void {
    for (const child of namedChildren(node)) {
      if (child.type === 'pipeline') this.pipeline(child, { stdin: 'pipe', redirects: [] }, true);
      else if (child.type === 'command' || child.type === 'redirected_statement' || child.type === 'list')
        this.walk(child, { stdin: 'pipe', redirects: [] });
      else this.walk(child, { stdin: null, redirects: [] });
    }
  }

  private redirectedStatement(node: Node, inherited: Inherited): SimpleShellCommand[] {
    const redirects = node.childrenForFieldName('redirect').filter((child): child is Node => child !== null);
    const body = node.childForFieldName('body');
    let commands: SimpleShellCommand[] = [];
    if (body !== null && body.type === 'command') {
      commands = this.walk(body, { stdin: inherited.stdin, redirects: [...inherited.redirects, ...redirects] });
    } else {
      // A compound statement's redirections still write files and feed the commands inside.
      const holder: SimpleShellCommand = { assignments: [], words: [], redirects: [], stdin: null, stdinTexts: [] };
      this.applyRedirects(holder, redirects);
      this.result.commands.push(holder);
      if (body !== null) commands = this.walk(body, { stdin: holder.stdin ?? inherited.stdin, redirects: [] });
    }
    for (const redirect of redirects) this.redirectChildren(redirect);
    return commands;
  }

  private pipeline(node: Node, inherited: Inherited, continuation: boolean): SimpleShellCommand[] {
    const stages: SimpleShellCommand[][] = [];
    namedChildren(node).forEach((stage, index) => {
      const stdin = index > 0 || continuation ? 'pipe' : inherited.stdin;
      stages.push(this.walk(stage, { stdin, redirects: index === 0 ? inherited.redirects : [] }));
    });
    this.result.pipelines.push({ stages });
    return stages.flat();
  }

  private applyRedirects(command: SimpleShellCommand, redirects: Node[]): void {
    for (const redirect of redirects) {
      if (redirect.type === 'herestring_redirect') {
        const valueNode = namedChildren(redirect)[0];
        const value = valueNode === undefined ? null : readWord(valueNode);
        command.redirects.push({ operator: '<<<', target: value });
        command.stdin = 'herestring';
        if (value !== null) command.stdinTexts.push(value.text);
        continue;
      }
      if (redirect.type === 'heredoc_redirect') {
        const body = namedChildren(redirect).find((child) => child.type === 'heredoc_body');
        command.redirects.push({ operator: operatorOf(redirect) || '<<', target: null });
        command.stdin = 'heredoc';
        command.stdinTexts.push(body?.text ?? '');
        // `cat <<EOF > file`: the file redirect nested in the heredoc redirect.
        for (const nested of namedChildren(redirect)) {
          if (nested.type === 'file_redirect') this.applyRedirects(command, [nested]);
        }
        continue;
      }
      if (redirect.type !== 'file_redirect') continue;
      const operator = operatorOf(redirect);
      const destination = redirect.childForFieldName('destination');
      const target = destination === null ? null : readWord(destination);
      command.redirects.push({ operator, target });
      const descriptor = redirect.childForFieldName('descriptor')?.text;
      const readsStdin =
        (operator === '<' || operator === '<&' || operator === '<>') &&
        (descriptor === undefined || descriptor === '0');
      if (readsStdin) command.stdin = destination?.type === 'process_substitution' ? 'process_substitution' : 'file';
    }
  }

  private command(node: Node, inherited: Inherited): SimpleShellCommand[] {
    const command: SimpleShellCommand = {
      assignments: [],
      words: [],
      redirects: [],
      stdin: inherited.stdin,
      stdinTexts: [],
    };
    for (const child of namedChildren(node)) {
      if (child.type === 'variable_assignment') {
        const name = child.childForFieldName('name')?.text ?? '';
        const valueNode = child.childForFieldName('value');
        command.assignments.push({ name, value: valueNode === null ? null : readWord(valueNode) });
      }
    }
    const name = node.childForFieldName('name');
    const nameWord = name === null ? undefined : namedChildren(name)[0];
    if (nameWord !== undefined) command.words.push(readWord(nameWord));
    for (const argument of node.childrenForFieldName('argument')) {
      if (argument !== null) command.words.push(readWord(argument));
    }
    const ownRedirects = node.childrenForFieldName('redirect').filter((child): child is Node => child !== null);
    this.applyRedirects(command, [...inherited.redirects, ...ownRedirects]);
    if (command.words[0]?.literal && command.words[0].text === 'alias') {
      for (const word of command.words.slice(1)) {
        const match = /^([^=]+)=/.exec(word.text);
        if (match !== null) this.result.aliases.push(match[1] as string);
      }
    }
    this.result.commands.push(command);
    // Substitutions inside the words and redirect targets run as commands of their own.
    for (const child of namedChildren(node)) {
      if (child.type === 'command_name' || child.type === 'variable_assignment') {
        this.walk(child, { stdin: null, redirects: [] });
      } else if (child.type.endsWith('_redirect')) {
        this.redirectChildren(child);
      } else {
        this.walk(child, { stdin: null, redirects: [] });
      }
    }
    return [command];
  }
}
