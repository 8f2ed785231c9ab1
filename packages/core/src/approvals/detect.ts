/**
 * Dangerous command detection (spec/core.md §12.1).
 *
 * A command is tokenized with a small shell-aware splitter (quotes, escapes, `$(…)`, backticks,
 * process substitution, redirections, heredocs), split into simple commands on `;`, `&&`, `||`,
 * `|`, `&` and newlines, normalized (leading assignments dropped, wrappers such as `sudo` or
 * `xargs` unwrapped) and each piece is matched against the pattern classes. Substitutions and
 * inline scripts (`bash -c '…'`, `eval …`) are scanned as commands of their own. The splitter never
 * throws: malformed input (an unterminated quote) is read as far as it goes, because detection
 * must err on the side of finding a pattern, not of failing.
 */

import { posix } from 'node:path';

/** The pattern classes of spec/core.md §12.1, in table order. */
export const PATTERN_KEYS = [
  'recursive_delete',
  'world_writable',
  'recursive_chown',
  'disk_format',
  'raw_disk_write',
  'system_config_write',
  'service_control',
  'mass_kill',
  'power',
  'sql_destructive',
  'git_destructive',
  'remote_script',
  'inline_interpreter',
  'privilege',
] as const;

/** One pattern class of spec/core.md §12.1. */
export type PatternKey = (typeof PATTERN_KEYS)[number];

/** Human-readable descriptions of the pattern classes, shown in approval requests. */
export const PATTERN_DESCRIPTIONS: Readonly<Record<PatternKey, string>> = {
  recursive_delete: 'recursive delete',
  world_writable: 'world-writable permissions (chmod 777/666, a+w, o+w)',
  recursive_chown: 'recursive ownership change',
  disk_format: 'disk formatting or partitioning',
  raw_disk_write: 'raw write to a disk device',
  system_config_write: 'write into a system directory (/etc, /boot, /usr, /System)',
  service_control: 'stopping, disabling or restarting a system service',
  mass_kill: 'killing many processes at once',
  power: 'shutdown or reboot',
  sql_destructive: 'destructive SQL (DROP, TRUNCATE, DELETE without WHERE)',
  git_destructive: 'destructive git operation (discards local work or rewrites remote history)',
  remote_script: 'running a script downloaded from the network',
  inline_interpreter: 'inline script passed to a shell or interpreter',
  privilege: 'privilege escalation (sudo, su, doas)',
};

/** Result of {@link detectDangerousCommand}. */
export interface DangerousCommandDetection {
  /** True when the command is on the hard blocklist: it never runs, not even in YOLO mode. */
  blocked: boolean;
  /** Why it is blocked, for the "Command not run: <reason>" result. */
  blockReason?: string;
  /** The union of the pattern keys of every piece, in table order. */
  patternKeys: PatternKey[];
  /** One description per pattern key, in the same order. */
  descriptions: string[];
}

/**
 * Detects the dangerous-command pattern classes and the hard blocklist of spec/core.md §12.1.
 *
 * @param command - the full `terminal` command as the model sent it.
 */
export function detectDangerousCommand(command: string): DangerousCommandDetection {
  const state: AnalysisState = { keys: new Set(), blockReason: null };
  analyzeScript(command, state, 0);
  scanSql(command, state);
  scanForkBomb(command, state);
  const patternKeys = PATTERN_KEYS.filter((key) => state.keys.has(key));
  const result: DangerousCommandDetection = {
    blocked: state.blockReason !== null,
    patternKeys,
    descriptions: patternKeys.map((key) => PATTERN_DESCRIPTIONS[key]),
  };
  if (state.blockReason !== null) result.blockReason = state.blockReason;
  return result;
}

// ---------------------------------------------------------------------------------------------
// Tokenizer
// ---------------------------------------------------------------------------------------------

/** A word of a simple command, with quotes removed. */
interface ShellWord {
  text: string;
  /** Raw texts of `$(…)` and backtick substitutions inside the word. */
  substitutions: string[];
  /** Raw texts of `<(…)` and `>(…)` process substitutions (the word's whole text). */
  processSubstitutions: string[];
}

interface Redirect {
  /** The operator without the fd prefix: `>`, `>>`, `>|`, `&>`, `&>>`, `<`, `<<`, `<<<`, `<>`, `>&`, `<&`. */
  operator: string;
  target: ShellWord | null;
}

interface SimpleCommand {
  words: ShellWord[];
  redirects: Redirect[];
  /** Bodies of the heredocs fed to this command. */
  heredocs: string[];
}

interface Pipeline {
  commands: SimpleCommand[];
}

interface PendingHeredoc {
  delimiter: string;
  stripTabs: boolean;
  command: SimpleCommand;
}

/** Deeper nesting than this is not followed; such inputs are contrived and the pieces seen so far still count. */
const MAX_DEPTH = 8;

/**
 * A forgiving parser for the subset of POSIX shell / bash syntax that matters for detection. It
 * produces pipelines of simple commands; pipelines found inside substitutions are appended to
 * the same list, since they run too.
 */
class ShellParser {
  private position = 0;
  readonly pipelines: Pipeline[] = [];
  private pipeline: Pipeline = { commands: [] };
  private command: SimpleCommand = newCommand();
  private word: ShellWord | null = null;
  private pendingRedirect: { operator: string } | null = null;
  private pendingHeredocs: PendingHeredoc[] = [];

  constructor(
    private readonly input: string,
    private readonly depth: number,
  ) {}

  /** Parses the whole input. */
  parse(): Pipeline[] {
    this.parseUntil(false);
    this.finishPipeline();
    return this.pipelines;
  }

  /**
   * Parses until the end of input or, when `closeOnParen`, an unmatched `)`; returns the index
   * just past that parenthesis.
   */
  private parseUntil(closeOnParen: boolean): number {
    const input = this.input;
    let parenDepth = 0;
    while (this.position < input.length) {
      const character = input[this.position] as string;
      const next = input[this.position + 1];
      if (character === ' ' || character === '\t' || character === '\r') {
        this.finishWord();
        this.position += 1;
        continue;
      }
      if (character === '#' && this.word === null) {
        while (this.position < input.length && input[this.position] !== '\n') this.position += 1;
        continue;
      }
      if (character === '\n') {
        this.finishPipeline();
        this.position += 1;
        this.readHeredocBodies();
        continue;
      }
      if (character === ';') {
        this.finishPipeline();
        this.position += next === ';' || next === '&' ? 2 : 1;
        continue;
      }
      if (character === '&') {
        if (next === '&') {
          this.finishPipeline();
          this.position += 2;
          continue;
        }
        if (next === '>') {
          this.finishWord();
          const append = input[this.position + 2] === '>';
          this.startRedirect(append ? '&>>' : '&>');
          this.position += append ? 3 : 2;
          continue;
        }
        this.finishPipeline();
        this.position += 1;
        continue;
      }
      if (character === '|') {
        if (next === '|') {
          this.finishPipeline();
          this.position += 2;
          continue;
        }
        this.finishCommand();
        this.position += next === '&' ? 2 : 1;
        continue;
      }
      if (character === '(') {
        parenDepth += 1;
        this.finishPipeline();
        this.position += 1;
        continue;
      }
      if (character === ')') {
        if (closeOnParen && parenDepth === 0) {
          this.position += 1;
          return this.position;
        }
        parenDepth = Math.max(0, parenDepth - 1);
        this.finishPipeline();
        this.position += 1;
        continue;
      }
      if ((character === '<' || character === '>') && next === '(' && this.word === null) {
        this.readProcessSubstitution();
        continue;
      }
      if (character === '<' || character === '>') {
        this.readRedirectOperator();
        continue;
      }
      this.readWordCharacter();
    }
    return this.position;
  }

  private currentWord(): ShellWord {
    if (this.word === null) this.word = { text: '', substitutions: [], processSubstitutions: [] };
    return this.word;
  }

  private finishWord(): void {
    if (this.word === null) return;
    const word = this.word;
    this.word = null;
    if (this.pendingRedirect !== null) {
      const operator = this.pendingRedirect.operator;
      this.pendingRedirect = null;
      this.command.redirects.push({ operator, target: word });
      if (operator === '<<' || operator === '<<-') {
        this.pendingHeredocs.push({ delimiter: word.text, stripTabs: operator === '<<-', command: this.command });
      }
      return;
    }
    this.command.words.push(word);
  }

  private finishCommand(): void {
    this.finishWord();
    if (this.pendingRedirect !== null) {
      this.command.redirects.push({ operator: this.pendingRedirect.operator, target: null });
      this.pendingRedirect = null;
    }
    if (this.command.words.length > 0 || this.command.redirects.length > 0) {
      this.pipeline.commands.push(this.command);
    }
    this.command = newCommand();
  }

  private finishPipeline(): void {
    this.finishCommand();
    if (this.pipeline.commands.length > 0) this.pipelines.push(this.pipeline);
    this.pipeline = { commands: [] };
  }

  private startRedirect(operator: string): void {
    if (this.pendingRedirect !== null) {
      this.command.redirects.push({ operator: this.pendingRedirect.operator, target: null });
    }
    this.pendingRedirect = { operator };
  }

  /** Reads `<`, `>`, `>>`, `>|`, `<<`, `<<-`, `<<<`, `<>`, `>&`, `<&` with an optional fd prefix. */
  private readRedirectOperator(): void {
    const input = this.input;
    // A word made only of digits right before the operator is its file descriptor (`2>`).
    if (this.word !== null && /^\d+$/.test(this.word.text) && this.word.substitutions.length === 0) {
      this.word = null;
    } else {
      this.finishWord();
    }
    const rest = input.slice(this.position, this.position + 3);
    const operators = ['<<<', '<<-', '>>', '<<', '>|', '<>', '>&', '<&', '>', '<'];
    const operator = operators.find((candidate) => rest.startsWith(candidate)) ?? (input[this.position] as string);
    this.position += operator.length;
    this.startRedirect(operator);
  }

  private readProcessSubstitution(): void {
    const start = this.position + 2;
    const inner = new ShellParser(this.input, this.depth + 1);
    inner.position = start;
    const end = inner.parseUntil(true);
    inner.finishPipeline();
    const raw = this.input.slice(start, Math.max(start, end - 1));
    if (this.depth < MAX_DEPTH) this.pipelines.push(...inner.pipelines);
    const word = this.currentWord();
    word.text += `${this.input[this.position]}(${raw})`;
    word.processSubstitutions.push(raw);
    this.position = end;
  }

  /** Reads `$(…)` (or `$((…))`) starting at `$`; returns the raw inner text and appends nested pipelines. */
  private readCommandSubstitution(): string {
    const start = this.position + 2;
    const inner = new ShellParser(this.input, this.depth + 1);
    inner.position = start;
    const end = inner.parseUntil(true);
    inner.finishPipeline();
    if (this.depth < MAX_DEPTH) this.pipelines.push(...inner.pipelines);
    this.position = end;
    return this.input.slice(start, Math.max(start, end - 1));
  }

  /** Reads a backtick substitution starting at the opening backtick; returns its unescaped text. */
  private readBacktickSubstitution(): string {
    const input = this.input;
    let position = this.position + 1;
    let raw = '';
    while (position < input.length && input[position] !== '`') {
      if (input[position] === '\\' && position + 1 < input.length) {
        const escaped = input[position + 1] as string;
        raw += escaped === '`' || escaped === '\\' || escaped === '$' ? escaped : `\\${escaped}`;
        position += 2;
        continue;
      }
      raw += input[position];
      position += 1;
    }
    this.position = Math.min(input.length, position + 1);
    if (this.depth < MAX_DEPTH) this.pipelines.push(...new ShellParser(raw, this.depth + 1).parse());
    return raw;
  }

  private readWordCharacter(): void {
    const input = this.input;
    const character = input[this.position] as string;
    const next = input[this.position + 1];
    const word = this.currentWord();
    if (character === '\\') {
      if (next === '\n') {
        this.position += 2;
        if (word.text === '' && word.substitutions.length === 0) this.word = null;
        return;
      }
      if (next !== undefined) word.text += next;
      this.position += 2;
      return;
    }
    if (character === "'") {
      const end = input.indexOf("'", this.position + 1);
      const stop = end === -1 ? input.length : end;
      word.text += input.slice(this.position + 1, stop);
      this.position = stop + 1;
      return;
    }
    if (character === '$' && next === "'") {
      this.readAnsiCQuoted(word);
      return;
    }
    if (character === '"') {
      this.readDoubleQuoted(word);
      return;
    }
    if (character === '$' && next === '(') {
      const raw = this.readCommandSubstitution();
      word.text += `$(${raw})`;
      word.substitutions.push(raw);
      return;
    }
    if (character === '$' && next === '{') {
      const end = input.indexOf('}', this.position + 2);
      const stop = end === -1 ? input.length : end + 1;
      word.text += input.slice(this.position, stop);
      this.position = stop;
      return;
    }
    if (character === '`') {
      const raw = this.readBacktickSubstitution();
      word.text += `\`${raw}\``;
      word.substitutions.push(raw);
      return;
    }
    word.text += character;
    this.position += 1;
  }

  private readAnsiCQuoted(word: ShellWord): void {
    const input = this.input;
    let position = this.position + 2;
    const escapes: Record<string, string> = { n: '\n', t: '\t', r: '\r', '\\': '\\', "'": "'", '"': '"' };
    while (position < input.length && input[position] !== "'") {
      if (input[position] === '\\' && position + 1 < input.length) {
        const escaped = input[position + 1] as string;
        word.text += escapes[escaped] ?? escaped;
        position += 2;
        continue;
      }
      word.text += input[position];
      position += 1;
    }
    this.position = position + 1;
  }

  private readDoubleQuoted(word: ShellWord): void {
    const input = this.input;
    this.position += 1;
    while (this.position < input.length && input[this.position] !== '"') {
      const character = input[this.position] as string;
      const next = input[this.position + 1];
      if (character === '\\' && next !== undefined) {
        if (next === '\n') {
          this.position += 2;
          continue;
        }
        word.text += next === '$' || next === '`' || next === '"' || next === '\\' ? next : `\\${next}`;
        this.position += 2;
        continue;
      }
      if (character === '$' && next === '(') {
        const raw = this.readCommandSubstitution();
        word.text += `$(${raw})`;
        word.substitutions.push(raw);
        continue;
      }
      if (character === '`') {
        const raw = this.readBacktickSubstitution();
        word.text += `\`${raw}\``;
        word.substitutions.push(raw);
        continue;
      }
      word.text += character;
      this.position += 1;
    }
    this.position += 1;
  }

  /** After a newline: reads the bodies of heredocs opened on the line just ended. */
  private readHeredocBodies(): void {
    const input = this.input;
    for (const heredoc of this.pendingHeredocs) {
      const lines: string[] = [];
      while (this.position < input.length) {
        const end = input.indexOf('\n', this.position);
        const stop = end === -1 ? input.length : end;
        let line = input.slice(this.position, stop);
        this.position = end === -1 ? input.length : end + 1;
        if (heredoc.stripTabs) line = line.replace(/^\t+/, '');
        if (line.replace(/\r$/, '') === heredoc.delimiter) break;
        lines.push(line);
      }
      heredoc.command.heredocs.push(lines.join('\n'));
    }
    this.pendingHeredocs = [];
  }
}

function newCommand(): SimpleCommand {
  return { words: [], redirects: [], heredocs: [] };
}

// ---------------------------------------------------------------------------------------------
// Normalization
// ---------------------------------------------------------------------------------------------

interface AnalysisState {
  keys: Set<PatternKey>;
  blockReason: string | null;
}

/** A simple command after assignments and wrappers are removed. */
interface EffectiveCommand {
  /** Basename of the program (`/bin/rm` → `rm`), empty when only wrappers were present. */
  name: string;
  words: ShellWord[];
  args: string[];
}

const RESERVED_PREFIXES = new Set([
  '!',
  '{',
  '}',
  'if',
  'then',
  'else',
  'elif',
  'fi',
  'do',
  'done',
  'while',
  'until',
  'esac',
]);
/** Compound-command heads whose words are not a command to run. */
const NON_COMMAND_HEADS = new Set(['for', 'case', 'select', 'function', 'in']);
const SHELLS = new Set(['sh', 'bash', 'zsh', 'dash', 'ksh', 'mksh', 'fish', 'ash', 'csh', 'tcsh']);
const FETCHERS = new Set(['curl', 'wget']);

function isInterpreter(name: string): boolean {
  return (
    /^python(\d+(\.\d+)?)?$/.test(name) ||
    /^pypy\d*$/.test(name) ||
    /^perl\d*$/.test(name) ||
    /^ruby\d*$/.test(name) ||
    name === 'node' ||
    name === 'nodejs' ||
    name === 'php' ||
    name === 'deno' ||
    name === 'bun'
  );
}

function baseName(text: string): string {
  const index = text.lastIndexOf('/');
  return index === -1 ? text : text.slice(index + 1);
}

function isAssignment(word: ShellWord): boolean {
  return /^[A-Za-z_][A-Za-z0-9_]*\+?=/.test(word.text);
}

/** Options of wrappers that take a separate value, by wrapper. */
const WRAPPER_VALUE_OPTIONS = new Map<string, Set<string>>(
  Object.entries({
    sudo: new Set([
      '-u',
      '-g',
      '-p',
      '-C',
      '-D',
      '-h',
      '-r',
      '-t',
      '-T',
      '-U',
      '--user',
      '--group',
      '--prompt',
      '--chdir',
      '--host',
      '--role',
      '--type',
      '--other-user',
      '--close-from',
    ]),
    doas: new Set(['-u', '-C']),
    env: new Set(['-u', '-C', '--unset', '--chdir']),
    nice: new Set(['-n', '--adjustment']),
    ionice: new Set(['-c', '-n', '-p', '-P', '-u', '--class', '--classdata']),
    time: new Set(['-f', '-o', '--format', '--output']),
    xargs: new Set([
      '-n',
      '-L',
      '-P',
      '-s',
      '-d',
      '-E',
      '-I',
      '-a',
      '--max-args',
      '--max-lines',
      '--max-procs',
      '--max-chars',
      '--delimiter',
      '--eof',
      '--replace',
      '--arg-file',
    ]),
    timeout: new Set(['-s', '-k', '--signal', '--kill-after']),
    stdbuf: new Set(['-i', '-o', '-e', '--input', '--output', '--error']),
    exec: new Set(['-a']),
    command: new Set([]),
    nohup: new Set([]),
    builtin: new Set([]),
    pkexec: new Set(['--user']),
  }),
);

/**
 * Strips leading assignments, reserved words and wrappers. Reports `privilege` for sudo and doas
 * and scans what wrappers hide (`env -S '…'`, `su -c '…'`) as commands of their own.
 */
function unwrap(words: ShellWord[], state: AnalysisState, depth: number): EffectiveCommand | null {
  let index = 0;
  for (;;) {
    while (index < words.length) {
      const word = words[index] as ShellWord;
      if (RESERVED_PREFIXES.has(word.text) || isAssignment(word)) index += 1;
      else break;
    }
    const head = words[index];
    if (head === undefined) return null;
    const name = baseName(head.text);
    if (NON_COMMAND_HEADS.has(name)) return null;
    if (name === 'sudo' || name === 'doas' || name === 'pkexec') state.keys.add('privilege');
    if (name === 'su') {
      state.keys.add('privilege');
      for (let position = index + 1; position < words.length; position += 1) {
        const text = (words[position] as ShellWord).text;
        if ((text === '-c' || text === '--command') && words[position + 1] !== undefined) {
          analyzeScript((words[position + 1] as ShellWord).text, state, depth + 1);
        } else if (text.startsWith('--command=')) {
          analyzeScript(text.slice('--command='.length), state, depth + 1);
        }
      }
      return null;
    }
    if (name === 'command' && words[index + 1] !== undefined && /^-[vV]$/.test((words[index + 1] as ShellWord).text)) {
      return null;
    }
    const valueOptions = WRAPPER_VALUE_OPTIONS.get(name);
    if (valueOptions === undefined) {
      return { name, words: words.slice(index), args: words.slice(index + 1).map((word) => word.text) };
    }
    index += 1;
    // Skip the wrapper's own options.
    while (index < words.length) {
      const text = (words[index] as ShellWord).text;
      if (text === '--') {
        index += 1;
        break;
      }
      if (name === 'env' && (text === '-S' || text === '--split-string' || text.startsWith('--split-string='))) {
        const script = text.startsWith('--split-string=')
          ? text.slice('--split-string='.length)
          : (words[index + 1]?.text ?? '');
        analyzeScript(script, state, depth + 1);
        return null;
      }
      if (!text.startsWith('-') || text === '-') break;
      if (name === 'nice' && /^-\d+$/.test(text)) {
        index += 1;
        continue;
      }
      if (valueOptions.has(text)) index += 2;
      else index += 1;
    }
    if (name === 'timeout') {
      // The duration comes before the command.
      if (words[index] !== undefined) index += 1;
    }
    if (name === 'xargs' && words[index] === undefined) return null;
  }
}

// ---------------------------------------------------------------------------------------------
// Matching
// ---------------------------------------------------------------------------------------------

const DISK_DEVICE = /^\/dev\/(sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d|disk\d|rdisk\d|md\d|dm-\d|mapper\/)/;
const SYSTEM_DIRECTORY = /^\/+(etc|boot|usr|System)(\/|$)/;
const WRITE_REDIRECTS = new Set(['>', '>>', '>|', '&>', '&>>', '<>']);

/** Operands (words that are not options), honouring `--`. */
function operandsOf(args: string[]): string[] {
  const operands: string[] = [];
  let optionsEnded = false;
  for (const arg of args) {
    if (!optionsEnded && arg === '--') {
      optionsEnded = true;
      continue;
    }
    if (!optionsEnded && arg.startsWith('-') && arg !== '-') continue;
    operands.push(arg);
  }
  return operands;
}

/** Short option clusters before `--` (`-rf` → true for `r`). */
function hasShortFlag(args: string[], flag: RegExp): boolean {
  for (const arg of args) {
    if (arg === '--') return false;
    if (/^-[A-Za-z]+$/.test(arg) && flag.test(arg.slice(1))) return true;
  }
  return false;
}

function hasLongFlag(args: string[], ...names: string[]): boolean {
  for (const arg of args) {
    if (arg === '--') return false;
    if (names.some((name) => arg === name || arg.startsWith(`${name}=`))) return true;
  }
  return false;
}

/** Normalizes a path operand for the blocklist: `//` → `/`, `${HOME}` → `$HOME`, trailing `/` and `/.` dropped. */
function normalizeTarget(text: string): string {
  let target = text.replace(/\$\{HOME\}/g, '$HOME');
  if (target === '') return target;
  target = posix.normalize(target);
  if (target.length > 1 && target.endsWith('/')) target = target.slice(0, -1);
  return target;
}

const ROOT_TARGETS = new Set(['/', '/*', '~', '~/*', '$HOME', '$HOME/*']);

function checkRecursiveDelete(command: EffectiveCommand, state: AnalysisState): void {
  if (command.name === 'rm') {
    if (!hasShortFlag(command.args, /[rR]/) && !hasLongFlag(command.args, '--recursive')) return;
    state.keys.add('recursive_delete');
    for (const operand of operandsOf(command.args)) {
      const target = normalizeTarget(operand);
      if (ROOT_TARGETS.has(target)) {
        state.blockReason ??= `recursive delete of ${target} is on the hard blocklist and never runs`;
      }
    }
    return;
  }
  if (command.name === 'find') {
    const execIndex = command.args.findIndex((arg) => ['-exec', '-execdir', '-ok', '-okdir'].includes(arg));
    const deletes =
      command.args.includes('-delete') ||
      (execIndex !== -1 && baseName(command.args[execIndex + 1] ?? '') === 'rm') ||
      (execIndex !== -1 &&
        ['sudo', 'doas'].includes(baseName(command.args[execIndex + 1] ?? '')) &&
        command.args.slice(execIndex + 2).some((arg) => baseName(arg) === 'rm'));
    if (!deletes) return;
    state.keys.add('recursive_delete');
    for (const arg of command.args) {
      if (arg.startsWith('-') || arg === '(' || arg === '!') break;
      const target = normalizeTarget(arg);
      if (ROOT_TARGETS.has(target)) {
        state.blockReason ??= `recursive delete of ${target} is on the hard blocklist and never runs`;
      }
    }
  }
}

/** True for a chmod mode that grants write permission to others. */
function isWorldWritableMode(mode: string): boolean {
  if (/^[0-7]{3,4}$/.test(mode)) return (Number(mode[mode.length - 1]) & 2) === 2;
  return mode.split(',').some((clause) => {
    const match = /^([ugoa]*)((?:[-+=][rwxXstugo]*)+)$/.exec(clause);
    if (match === null) return false;
    const who = match[1] as string;
    if (!who.includes('a') && !who.includes('o')) return false;
    return /[+=][rwxXst]*w/.test(match[2] as string);
  });
}

function checkPermissions(command: EffectiveCommand, state: AnalysisState): void {
  if (command.name === 'chmod') {
    // Symbolic modes such as `-w` look like options, so every argument is a mode candidate.
    const worldWritable = command.args.some(
      (arg) => !arg.startsWith('--') && isWorldWritableMode(arg.replace(/^-(?=[ugoa]*[+=])/, '')),
    );
    if (!worldWritable) return;
    state.keys.add('world_writable');
    const recursive = hasShortFlag(command.args, /R/) || hasLongFlag(command.args, '--recursive');
    if (recursive && command.args.some((arg) => ['/', '/*'].includes(normalizeTarget(arg)))) {
      state.blockReason ??= 'recursive chmod 777 on / is on the hard blocklist and never runs';
    }
    return;
  }
  if (command.name === 'chown' || command.name === 'chgrp') {
    if (hasShortFlag(command.args, /R/) || hasLongFlag(command.args, '--recursive')) state.keys.add('recursive_chown');
  }
}

function checkDisks(command: EffectiveCommand, state: AnalysisState): void {
  const name = command.name;
  if (/^mkfs(\..+)?$/.test(name) || ['fdisk', 'sfdisk', 'cfdisk', 'parted', 'wipefs'].includes(name)) {
    state.keys.add('disk_format');
  }
  if (name === 'dd' && command.args.some((arg) => arg.startsWith('of='))) state.keys.add('raw_disk_write');
  if (name === 'tee' && operandsOf(command.args).some((arg) => DISK_DEVICE.test(arg))) state.keys.add('raw_disk_write');
  if (name === 'cp') {
    const destination = destinationOf(command.args);
    if (destination !== null && DISK_DEVICE.test(destination)) state.keys.add('raw_disk_write');
  }
}

/** The destination of `cp`/`mv`: `-t DIR`, `--target-directory=DIR`, else the last operand. */
function destinationOf(args: string[]): string | null {
  for (let index = 0; index < args.length; index += 1) {
    const arg = args[index] as string;
    if (arg === '-t' || arg === '--target-directory') return args[index + 1] ?? null;
    if (arg.startsWith('--target-directory=')) return arg.slice('--target-directory='.length);
  }
  const operands = operandsOf(args);
  return operands.length >= 2 ? (operands[operands.length - 1] as string) : null;
}

function checkSystemWrites(command: EffectiveCommand, state: AnalysisState): void {
  const name = command.name;
  if (name === 'tee' && operandsOf(command.args).some((arg) => SYSTEM_DIRECTORY.test(arg))) {
    state.keys.add('system_config_write');
  }
  if (name === 'sed') {
    const inPlace = command.args.some((arg) => /^-[A-Za-z]*i/.test(arg) || arg.startsWith('--in-place'));
    if (inPlace && command.args.some((arg) => SYSTEM_DIRECTORY.test(arg))) state.keys.add('system_config_write');
  }
  if (name === 'cp' || name === 'mv') {
    const destination = destinationOf(command.args);
    if (destination !== null && SYSTEM_DIRECTORY.test(destination)) state.keys.add('system_config_write');
  }
}

function checkRedirects(command: SimpleCommand, state: AnalysisState): void {
  for (const redirect of command.redirects) {
    if (redirect.target === null) continue;
    const target = redirect.target.text;
    // `>&2` duplicates a descriptor; `>& file` writes a file like `&>`.
    const writes = WRITE_REDIRECTS.has(redirect.operator) || (redirect.operator === '>&' && !/^(\d+|-)$/.test(target));
    if (!writes) continue;
    if (SYSTEM_DIRECTORY.test(target)) state.keys.add('system_config_write');
    if (DISK_DEVICE.test(target)) {
      state.keys.add('raw_disk_write');
      state.blockReason ??= `shell redirection onto the disk device ${target} is on the hard blocklist and never runs`;
    }
  }
}

/** The first argument that is not an option, and its index. */
function subcommandOf(args: string[], valueOptions: Set<string> = new Set()): { name: string; index: number } | null {
  for (let index = 0; index < args.length; index += 1) {
    const arg = args[index] as string;
    if (valueOptions.has(arg)) {
      index += 1;
      continue;
    }
    if (!arg.startsWith('-')) return { name: arg, index };
  }
  return null;
}

function checkServices(command: EffectiveCommand, state: AnalysisState): void {
  const name = command.name;
  if (name === 'systemctl') {
    const subcommand = subcommandOf(
      command.args,
      new Set(['-H', '--host', '-M', '--machine', '-t', '--type', '-p', '--property', '-s', '--signal']),
    );
    if (subcommand === null) return;
    if (['stop', 'disable', 'mask', 'restart', 'kill', 'isolate'].includes(subcommand.name))
      state.keys.add('service_control');
    if (['reboot', 'poweroff', 'halt', 'kexec', 'soft-reboot'].includes(subcommand.name)) state.keys.add('power');
  }
  if (name === 'service' && command.args.some((arg) => arg === 'stop' || arg === 'restart'))
    state.keys.add('service_control');
  if (name === 'launchctl' && command.args.some((arg) => arg === 'unload' || arg === 'bootout'))
    state.keys.add('service_control');
}

function checkProcesses(command: EffectiveCommand, state: AnalysisState): void {
  const name = command.name;
  if (name === 'killall' || name === 'pkill') {
    state.keys.add('mass_kill');
    return;
  }
  if (name === 'kill') {
    const args = command.args;
    let index = 0;
    const first = args[0];
    if (first?.startsWith('-') && first !== '--' && first !== '-1') {
      index = ['-s', '-n', '--signal'].includes(first) ? 2 : 1;
    } else if (first === '-1' && args.length > 1) {
      // `kill -1 pid` sends SIGHUP to pid; a lone `-1` operand is the "every process" pid.
      index = 1;
    }
    if (args[index] === '--') index += 1;
    if (args.slice(index).includes('-1')) state.keys.add('mass_kill');
  }
  if (['shutdown', 'reboot', 'halt', 'poweroff'].includes(name)) state.keys.add('power');
  if ((name === 'init' || name === 'telinit') && ['0', '6'].includes(command.args[0] ?? '')) state.keys.add('power');
}

function checkGit(command: EffectiveCommand, state: AnalysisState): void {
  if (command.name !== 'git') return;
  const subcommand = subcommandOf(
    command.args,
    new Set(['-C', '-c', '--git-dir', '--work-tree', '--namespace', '--super-prefix', '--config-env']),
  );
  if (subcommand === null) return;
  const args = command.args.slice(subcommand.index + 1);
  let destructive = false;
  switch (subcommand.name) {
    case 'reset':
      destructive = args.includes('--hard');
      break;
    case 'clean':
      destructive = hasShortFlag(args, /f/) || hasLongFlag(args, '--force');
      break;
    case 'push':
      destructive =
        hasShortFlag(args, /f/) ||
        args.some((arg) => arg.startsWith('--force')) ||
        operandsOf(args).some((arg) => arg.startsWith('+'));
      break;
    case 'checkout': {
      const separator = args.indexOf('--');
      destructive = separator !== -1 ? args.slice(separator + 1).includes('.') : args.includes('.');
      break;
    }
    case 'restore': {
      const stagedOnly =
        (args.includes('--staged') || hasShortFlag(args, /S/)) &&
        !args.includes('--worktree') &&
        !hasShortFlag(args, /W/);
      destructive = !stagedOnly && operandsOf(args).some((arg) => arg === '.' || arg === ':/');
      break;
    }
    case 'branch':
      destructive =
        hasShortFlag(args, /D/) ||
        ((args.includes('--delete') || hasShortFlag(args, /d/)) &&
          (args.includes('--force') || hasShortFlag(args, /f/)));
      break;
  }
  if (destructive) state.keys.add('git_destructive');
}

/** Index of the inline script argument of a shell (`-c`) or interpreter (`-c`, `-e`), or -1. */
function inlineScriptIndex(command: EffectiveCommand): number {
  const name = command.name;
  const args = command.args;
  let flag: RegExp | null = null;
  const longFlags: string[] = [];
  if (SHELLS.has(name)) flag = /^[A-Za-z]*c[A-Za-z]*$/;
  else if (/^python(\d+(\.\d+)?)?$/.test(name) || /^pypy\d*$/.test(name)) flag = /^[A-Za-z]*c$/;
  else if (name === 'node' || name === 'nodejs' || name === 'bun') {
    flag = /^[A-Za-z]*[ep]$/;
    longFlags.push('--eval', '--print');
  } else if (name === 'deno') return args[0] === 'eval' ? 1 : -1;
  else if (/^perl\d*$/.test(name)) flag = /^[A-Za-z]*[eE]$/;
  else if (/^ruby\d*$/.test(name)) flag = /^[A-Za-z]*e$/;
  else if (name === 'php') flag = /^[A-Za-z]*r$/;
  if (flag === null) return -1;
  for (let index = 0; index < args.length; index += 1) {
    const arg = args[index] as string;
    if (longFlags.includes(arg)) return index + 1;
    if (arg === '--') return -1;
    if (SHELLS.has(name) && ['-o', '+o', '-O', '+O', '--rcfile', '--init-file'].includes(arg)) {
      index += 1;
      continue;
    }
    if (!arg.startsWith('-') && !(SHELLS.has(name) && arg.startsWith('+'))) return -1;
    if (/^[-+][A-Za-z]+$/.test(arg) && flag.test(arg.slice(1))) return index + 1;
  }
  return -1;
}

function mentionsFetcher(script: string): boolean {
  const pipelines = new ShellParser(script, 1).parse();
  return pipelines.some((pipeline) =>
    pipeline.commands.some((command) => {
      const head = command.words.find((word) => !isAssignment(word) && !RESERVED_PREFIXES.has(word.text));
      if (head === undefined) return false;
      if (FETCHERS.has(baseName(head.text))) return true;
      return command.words.some((word) => FETCHERS.has(baseName(word.text)));
    }),
  );
}

function checkInline(command: EffectiveCommand, simple: SimpleCommand, state: AnalysisState, depth: number): void {
  const name = command.name;
  if (name === 'eval') {
    state.keys.add('inline_interpreter');
    const script = command.args.join(' ');
    analyzeScript(script, state, depth + 1);
    if (command.words.slice(1).some((word) => word.substitutions.some(mentionsFetcher)))
      state.keys.add('remote_script');
    return;
  }
  const scriptIndex = inlineScriptIndex(command);
  if (scriptIndex !== -1) {
    state.keys.add('inline_interpreter');
    const scriptWord = command.words[scriptIndex + 1];
    if (scriptWord !== undefined) {
      if (SHELLS.has(name)) analyzeScript(scriptWord.text, state, depth + 1);
      if (scriptWord.substitutions.some(mentionsFetcher)) state.keys.add('remote_script');
    }
  }
  const runsScripts = SHELLS.has(name) || isInterpreter(name) || name === 'source' || name === '.';
  if (runsScripts && command.words.slice(1).some((word) => word.processSubstitutions.some(mentionsFetcher))) {
    state.keys.add('remote_script');
  }
  // A heredoc fed to a shell is a script; fed to anything else it is data.
  if (SHELLS.has(name) && scriptIndex === -1) {
    for (const body of simple.heredocs) analyzeScript(body, state, depth + 1);
  }
  if (name === 'find') {
    const execIndex = command.args.findIndex((arg) => ['-exec', '-execdir', '-ok', '-okdir'].includes(arg));
    if (execIndex !== -1) {
      const end = command.args.findIndex((arg, index) => index > execIndex && (arg === ';' || arg === '+'));
      const words = command.words.slice(execIndex + 2, end === -1 ? undefined : end + 1);
      analyzeWords(words, { words, redirects: [], heredocs: [] }, state, depth + 1);
    }
  }
}

function analyzeWords(
  words: ShellWord[],
  simple: SimpleCommand,
  state: AnalysisState,
  depth: number,
): EffectiveCommand | null {
  const command = unwrap(words, state, depth);
  if (command === null) return null;
  checkRecursiveDelete(command, state);
  checkPermissions(command, state);
  checkDisks(command, state);
  checkSystemWrites(command, state);
  checkServices(command, state);
  checkProcesses(command, state);
  checkGit(command, state);
  checkInline(command, simple, state, depth);
  return command;
}

function analyzeScript(script: string, state: AnalysisState, depth: number): void {
  if (depth > MAX_DEPTH) return;
  const pipelines = new ShellParser(script, depth).parse();
  for (const pipeline of pipelines) {
    const effective: (EffectiveCommand | null)[] = [];
    for (const command of pipeline.commands) {
      checkRedirects(command, state);
      effective.push(analyzeWords(command.words, command, state, depth));
    }
    // `curl … | sh`: a fetcher earlier in the pipeline feeding a shell or interpreter later.
    const fetcherIndex = effective.findIndex((command) => command !== null && FETCHERS.has(command.name));
    if (fetcherIndex !== -1) {
      const runner = effective
        .slice(fetcherIndex + 1)
        .some((command) => command !== null && (SHELLS.has(command.name) || isInterpreter(command.name)));
      if (runner) state.keys.add('remote_script');
    }
  }
}

/** SQL is matched on the raw text, split into statements, because it usually sits inside a quoted argument. */
function scanSql(command: string, state: AnalysisState): void {
  if (/\bDROP\s+(TABLE|DATABASE|SCHEMA)\b/i.test(command)) state.keys.add('sql_destructive');
  if (/\bTRUNCATE\s+(TABLE\s+)?[A-Za-z_"`[]/i.test(command)) state.keys.add('sql_destructive');
  for (const statement of command.split(/;|\n|&&/)) {
    if (/\bDELETE\s+FROM\b(?![\s\S]*\bWHERE\b)/i.test(statement)) state.keys.add('sql_destructive');
  }
}

/** `:(){ :|:& };:` and the same shape with any function name. */
function scanForkBomb(command: string, state: AnalysisState): void {
  if (/([A-Za-z_:.][\w:.-]*)\s*\(\s*\)\s*\{\s*\1\s*\|\s*\1\s*&\s*;?\s*\}/.test(command)) {
    state.blockReason ??= 'a fork bomb is on the hard blocklist and never runs';
  }
}
