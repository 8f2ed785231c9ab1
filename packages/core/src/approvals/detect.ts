/**
 * Dangerous command detection (spec/core.md §12.1, docs/adr/0033).
 *
 * The command is parsed by tree-sitter-bash ({@link parseShell}); every simple command that can run
 * (in lists, pipelines, loops, functions, substitutions and process substitutions) is normalized
 * (leading assignments dropped, wrappers such as `sudo`, `env`, `setsid` or `xargs` unwrapped) and
 * matched against the pattern classes. Inline scripts (`bash -c '…'`, `eval …`, a literal heredoc
 * fed to a shell) are parsed and judged as commands of their own.
 *
 * What cannot be judged from the text asks too (the `unjudgeable` class): a program name that is an
 * expansion, a shell or interpreter that reads its program from standard input or from a
 * substitution, `eval`/`source` of computed text, awk programs that run commands, git settings that
 * run commands, arguments built by `xargs`/`find -exec` for a program whose danger depends on them,
 * a program written or linked by the same command line, and text the parser cannot read.
 */

import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { open, realpath, stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { isAbsolute, posix, resolve } from 'node:path';
import {
  isShellParserLoaded,
  loadShellParser,
  type ParsedShell,
  parseShell,
  type ShellRedirect,
  type ShellWord,
  type SimpleShellCommand,
} from './shell-parser.js';

export { isShellParserLoaded, loadShellParser };

/** The pattern classes of spec/core.md §12.1, in table order, and `unjudgeable` (docs/adr/0033). */
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
  'unjudgeable',
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
  unjudgeable: 'command that cannot be judged before it runs',
};

/** Result of {@link detectDangerousCommand}. */
export interface DangerousCommandDetection {
  /** True when the command is on the hard blocklist: it never runs, not even in YOLO mode. */
  blocked: boolean;
  /** Why it is blocked, for the "Command not run: <reason>" result. */
  blockReason?: string;
  /** The union of the pattern keys of every piece, in table order. */
  patternKeys: PatternKey[];
  /**
   * One description per pattern key, in the same order. The `unjudgeable` description ends with
   * its reasons: "command that cannot be judged before it runs: `bash` reads its program from a pipe".
   */
  descriptions: string[];
  /** Why the command cannot be judged (empty unless `unjudgeable` is among the keys). */
  unjudgeableReasons: string[];
  /**
   * SHA-256 of the script files the judgement read ({@link judgeCommand} with a
   * {@link ScriptContext}); absent when it read none. A grant for the exact command is bound to it,
   * so a script changed after its approval asks again.
   */
  scriptDigest?: string;
}

/**
 * Detects the dangerous-command pattern classes and the hard blocklist of spec/core.md §12.1.
 *
 * Synchronous: it needs the bash grammar loaded ({@link loadShellParser}, which the turn loop
 * starts when a model calls `terminal`, ADR 0099). Until then every command is `unjudgeable` ("the
 * shell parser is not loaded yet"), so a caller that cannot wait asks rather than runs;
 * {@link judgeCommand} waits.
 *
 * @param command - the full `terminal` command as the model sent it.
 */
export function detectDangerousCommand(command: string): DangerousCommandDetection {
  const state = newState();
  if (!isShellParserLoaded()) {
    // Start loading so the next call can judge; a load failure is reported by judgeCommand.
    loadShellParser().catch(() => {});
    unjudgeable(state, 'the shell parser is not loaded yet');
  } else {
    analyzeScript(command, state, 0);
  }
  scanSql(command, state);
  scanForkBomb(command, state);
  return finish(state);
}

/**
 * Like {@link detectDangerousCommand}, after waiting for the bash grammar. When the grammar cannot
 * be loaded every command is `unjudgeable`, so it asks.
 */
export async function judgeCommand(command: string, context?: ScriptContext): Promise<DangerousCommandDetection> {
  try {
    await loadShellParser();
  } catch (error) {
    const state = newState();
    unjudgeable(
      state,
      `the shell parser could not be loaded (${error instanceof Error ? error.message : String(error)})`,
    );
    scanSql(command, state);
    scanForkBomb(command, state);
    return finish(state);
  }
  if (context === undefined) return detectDangerousCommand(command);
  const state = newState();
  analyzeScript(command, state, 0);
  scanSql(command, state);
  scanForkBomb(command, state);
  await judgeScriptFiles(state, context, new Set(), 0, []);
  return finish(state);
}

function newState(): AnalysisState {
  return {
    keys: new Set(),
    blockReason: null,
    reasons: new Set(),
    created: new Set(),
    executed: [],
    scripts: [],
    directories: [],
    directoryUnknown: false,
    pathEntries: [],
    pathUnknown: false,
    scriptOfKey: new Map(),
    scriptsRead: [],
  };
}

/** `echo … > x.sh; bash x.sh`: running what the same command line wrote cannot be judged. */
function checkRunsWhatItCreated(state: AnalysisState): void {
  for (const executed of state.executed) {
    if (state.created.has(executed.name)) {
      unjudgeable(state, `it runs \`${executed.display}\`, which the same command line writes, copies or links`);
    }
  }
}

function finish(state: AnalysisState): DangerousCommandDetection {
  checkRunsWhatItCreated(state);
  const reasons = [...state.reasons];
  const patternKeys = PATTERN_KEYS.filter((key) => state.keys.has(key));
  const describe = (key: PatternKey): string => {
    if (key === 'unjudgeable') return `${PATTERN_DESCRIPTIONS[key]}: ${reasons.join('; ')}`;
    const script = state.scriptOfKey.get(key);
    return script === undefined
      ? PATTERN_DESCRIPTIONS[key]
      : `${PATTERN_DESCRIPTIONS[key]} (it runs \`${script}\`, which does this)`;
  };
  const result: DangerousCommandDetection = {
    blocked: state.blockReason !== null,
    patternKeys,
    descriptions: patternKeys.map(describe),
    unjudgeableReasons: reasons,
  };
  if (state.blockReason !== null) result.blockReason = state.blockReason;
  if (state.scriptsRead.length > 0) {
    const hash = createHash('sha256');
    for (const read of state.scriptsRead) hash.update(read).update('\0');
    result.scriptDigest = hash.digest('hex');
  }
  return result;
}

// ---------------------------------------------------------------------------------------------
// Analysis state and normalization
// ---------------------------------------------------------------------------------------------

interface AnalysisState {
  keys: Set<PatternKey>;
  blockReason: string | null;
  reasons: Set<string>;
  /** Base names of files the command line writes, copies, links or makes executable. */
  created: Set<string>;
  /** Programs and scripts the command line runs, by base name. */
  executed: { name: string; display: string }[];
  /** Local files the command line runs by path, for {@link judgeScriptFiles}. */
  scripts: ScriptRun[];
  /** Literal `cd`/`pushd` targets, in order: a relative script path may be relative to them. */
  directories: string[];
  /** Literal entries of PATH assignments (`PATH=.:$PATH`, `$PWD/bin`, `$HOME/bin`), in order. */
  pathEntries: string[];
  /** Set when a PATH assignment holds a directory that is only known when it runs. */
  pathUnknown: boolean;
  /** Set when the command line changes to a directory that is only known when it runs. */
  directoryUnknown: boolean;
  /** For a pattern key found only in a script the command runs: that script, as the command names it. */
  scriptOfKey: Map<PatternKey, string>;
  /** Real path and text of every script file read, for {@link DangerousCommandDetection.scriptDigest}. */
  scriptsRead: string[];
}

/** A local file the command line runs, and how. */
interface ScriptRun {
  /** The path as written (`cleanup.sh`, `./x`, `~/bin/y`). */
  path: string;
  /**
   * `shell`: a shell reads it (`bash FILE`, `source FILE`, `. FILE`); `interpreter`: `python3 FILE`,
   * `node FILE`, …; `program`: run by path (`./FILE`), a shell script when its first line says so
   * or when it has none (bash then runs it itself); `command`: a bare program name, found through
   * the search path (judged like `program` when the command line's own PATH entries or the agent's
   * writes put it there).
   */
  how: 'shell' | 'interpreter' | 'program' | 'command';
}

function unjudgeable(state: AnalysisState, reason: string): void {
  state.keys.add('unjudgeable');
  state.reasons.add(reason);
}

/** A simple command after assignments and wrappers are removed. */
interface EffectiveCommand {
  /** Basename of the program (`/bin/rm` → `rm`). */
  name: string;
  /** The program word and its arguments. */
  words: ShellWord[];
  args: string[];
  /** Set when the arguments are built when it runs (`xargs rm`, `find -exec rm {}`). */
  builtBy?: string;
}

/** Nesting deeper than this (inline scripts inside inline scripts) is not followed: it asks. */
const MAX_DEPTH = 8;

const SHELLS = new Set(['sh', 'bash', 'zsh', 'dash', 'ksh', 'mksh', 'fish', 'ash', 'csh', 'tcsh']);
const FETCHERS = new Set(['curl', 'wget']);
const AWKS = new Set(['awk', 'gawk', 'mawk', 'nawk']);
/** Programs that delete what their arguments name. */
const DELETERS = new Set(['rm', 'shred', 'rimraf', 'srm', 'wipe', 'unlink']);

function isInterpreter(name: string): boolean {
  return (
    /^python(\d+(\.\d+)?)?$/.test(name) ||
    /^pypy\d*$/.test(name) ||
    /^perl\d*$/.test(name) ||
    /^ruby\d*$/.test(name) ||
    /^lua(\d+(\.\d+)?|jit)?$/.test(name) ||
    ['node', 'nodejs', 'php', 'deno', 'bun', 'tclsh', 'Rscript', 'osascript', 'expect', 'irb', 'jshell'].includes(name)
  );
}

/**
 * Programs whose danger depends on their arguments: when `xargs` or `find -exec` builds those
 * arguments at run time the command cannot be judged.
 */
function isArgumentSensitive(name: string): boolean {
  return (
    DELETERS.has(name) ||
    SHELLS.has(name) ||
    AWKS.has(name) ||
    isInterpreter(name) ||
    [
      'find',
      'tar',
      'bsdtar',
      'rsync',
      'git',
      'chmod',
      'chown',
      'chgrp',
      'dd',
      'kill',
      'xargs',
      'env',
      'eval',
      'sudo',
      'doas',
      'su',
      'source',
      '.',
      'mkfs',
      'truncate',
    ].includes(name)
  );
}

function baseName(text: string): string {
  const index = text.lastIndexOf('/');
  return index === -1 ? text : text.slice(index + 1);
}

function isAssignment(word: ShellWord): boolean {
  return /^[A-Za-z_][A-Za-z0-9_]*\+?=/.test(word.text);
}

/** Environment variables that make the programs that read them run other code. */
function runsCodeVariable(name: string, value: ShellWord | null): boolean {
  if (
    /^(GIT_CONFIG(_.*)?|GIT_SSH(_COMMAND)?|GIT_EXTERNAL_DIFF|GIT_PAGER|GIT_EDITOR|GIT_SEQUENCE_EDITOR|GIT_ASKPASS|GIT_PROXY_COMMAND|GIT_EXEC_PATH|GIT_TEMPLATE_DIR)$/.test(
      name,
    )
  )
    return true;
  if (
    /^(LD_PRELOAD|LD_AUDIT|DYLD_INSERT_LIBRARIES|BASH_ENV|ENV|PROMPT_COMMAND|PERL5OPT|RUBYOPT|PAGER|EDITOR|VISUAL|SHELLOPTS|BASHOPTS)$/.test(
      name,
    )
  )
    return true;
  if (name === 'NODE_OPTIONS') {
    const text = value?.text ?? '';
    return (
      value === null ||
      !value.literal ||
      /(^|\s)(-r|--require|--import|--loader|--experimental-loader|-e|--eval|-p|--print)\b/.test(text)
    );
  }
  return false;
}

function checkAssignments(assignments: { name: string; value: ShellWord | null }[], state: AnalysisState): void {
  for (const assignment of assignments) {
    if (assignment.name === 'PATH' && assignment.value !== null) {
      // `PATH=.:$PATH cleanup.sh`: a bare program name may then be a local script. Entries that are
      // expansions (`$PATH`) are the search path the command already had.
      const value = assignment.value.text.replace(/^PATH=/, '');
      for (const entry of value.split(':')) {
        if (entry === '' || /^\$(PATH|\{PATH\})$/.test(entry)) continue;
        const rest = entry.replace(/^\$(PWD|\{PWD\}|HOME|\{HOME\})(?=\/|$)/, '');
        if (/[$`*?[]/.test(rest)) state.pathUnknown = true;
        else state.pathEntries.push(entry);
      }
    }
    if (runsCodeVariable(assignment.name, assignment.value)) {
      unjudgeable(state, `it sets ${assignment.name}, which makes programs run other code`);
    }
  }
}

/** How a wrapper passes control to the command it runs. */
interface WrapperShape {
  /** Options that take a separate value. */
  valueOptions: string[];
  /** Words between the options and the command (`timeout 10 cmd`, `chroot dir cmd`). */
  positionals?: number;
}

/** Wrappers whose command is the rest of their arguments, by name. */
const WRAPPERS = new Map<string, WrapperShape>(
  Object.entries({
    sudo: {
      valueOptions: [
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
      ],
    },
    doas: { valueOptions: ['-u', '-C'] },
    pkexec: { valueOptions: ['--user'] },
    run0: {
      valueOptions: [
        '-u',
        '--user',
        '-g',
        '--group',
        '-D',
        '--chdir',
        '--setenv',
        '--unit',
        '--property',
        '--description',
        '--slice',
        '--nice',
      ],
    },
    env: { valueOptions: ['-u', '-C', '--unset', '--chdir'] },
    nice: { valueOptions: ['-n', '--adjustment'] },
    ionice: { valueOptions: ['-c', '-n', '-p', '-P', '-u', '--class', '--classdata'] },
    time: { valueOptions: ['-f', '-o', '--format', '--output'] },
    xargs: {
      valueOptions: [
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
      ],
    },
    timeout: { valueOptions: ['-s', '-k', '--signal', '--kill-after'], positionals: 1 },
    stdbuf: { valueOptions: ['-i', '-o', '-e', '--input', '--output', '--error'] },
    exec: { valueOptions: ['-a'] },
    command: { valueOptions: [] },
    builtin: { valueOptions: [] },
    nohup: { valueOptions: [] },
    setsid: { valueOptions: [] },
    coproc: { valueOptions: [] },
    chrt: { valueOptions: ['-T', '-P', '-D'], positionals: 1 },
    taskset: { valueOptions: [], positionals: 1 },
    chroot: { valueOptions: ['--userspec', '--groups'], positionals: 1 },
    unshare: { valueOptions: ['-S', '-G', '-R', '-w', '--setuid', '--setgid', '--root', '--wd'] },
    nsenter: { valueOptions: ['-t', '-S', '-G', '-r', '-w', '--target', '--setuid', '--setgid'] },
    setpriv: {
      valueOptions: [
        '--reuid',
        '--regid',
        '--groups',
        '--inh-caps',
        '--ambient-caps',
        '--bounding-set',
        '--securebits',
      ],
    },
    runuser: { valueOptions: ['-u', '-g', '-G', '--user', '--group'] },
    flock: { valueOptions: ['-w', '-E', '--timeout', '--conflict-exit-code'], positionals: 1 },
    caffeinate: { valueOptions: ['-t', '-w'] },
    'systemd-run': {
      valueOptions: [
        '-u',
        '--unit',
        '-p',
        '--property',
        '--description',
        '--slice',
        '-E',
        '--setenv',
        '--uid',
        '--gid',
        '--nice',
        '-M',
        '--machine',
        '-H',
        '--host',
      ],
    },
    strace: { valueOptions: ['-e', '-o', '-p', '-u', '-E', '-s', '-a', '-b', '-I', '-O', '-P', '-S', '-X'] },
    ltrace: { valueOptions: ['-e', '-o', '-p', '-u', '-a', '-A', '-D', '-n', '-s', '-x', '-F', '-L', '-w'] },
    valgrind: { valueOptions: [] },
    fakeroot: { valueOptions: ['-l', '--lib', '--faked', '-s', '-i', '-b'] },
    'xvfb-run': {
      valueOptions: [
        '-n',
        '--server-num',
        '-e',
        '--error-file',
        '-f',
        '--auth-file',
        '-p',
        '--xauth-protocol',
        '-s',
        '--server-args',
        '-w',
        '--wait',
      ],
    },
    unbuffer: { valueOptions: [] },
    torsocks: { valueOptions: ['-u', '-p', '-a', '-P'] },
    proxychains: { valueOptions: ['-f'] },
    proxychains4: { valueOptions: ['-f'] },
    faketime: { valueOptions: ['-m', '-f'], positionals: 1 },
    npx: { valueOptions: ['-p', '--package', '-c', '--call'] },
    bunx: { valueOptions: ['-p', '--package'] },
    pnpx: { valueOptions: [] },
    busybox: { valueOptions: [] },
  }),
);

/** `npm exec`, `pnpm dlx`, `uv run`, `bundle exec`…: package-manager runners whose command is the rest. */
const RUNNER_SUBCOMMANDS = new Map<string, Set<string>>(
  Object.entries({
    npm: new Set(['exec', 'x']),
    pnpm: new Set(['exec', 'dlx']),
    yarn: new Set(['exec', 'dlx']),
    bun: new Set(['x']),
    uv: new Set(['run']),
    uvx: new Set([]),
    poetry: new Set(['run']),
    pipenv: new Set(['run']),
    pdm: new Set(['run']),
    rye: new Set(['run']),
    hatch: new Set(['run']),
    bundle: new Set(['exec']),
    mise: new Set(['exec', 'x']),
    direnv: new Set(['exec']),
    nix: new Set(['shell', 'develop']),
    docker: new Set([]),
  }),
);

/**
 * Strips leading assignments and wrappers. Reports `privilege` for sudo and doas and scans what
 * wrappers hide (`env -S '…'`, `su -c '…'`, `watch '…'`) as commands of their own. Returns null when
 * nothing is left to match, or when the program cannot be known (then it is `unjudgeable`).
 */
function unwrap(words: ShellWord[], state: AnalysisState, depth: number): EffectiveCommand | null {
  let index = 0;
  let builtBy: string | undefined;
  for (;;) {
    while (index < words.length && isAssignment(words[index] as ShellWord)) {
      const word = words[index] as ShellWord;
      const name = word.text.slice(0, word.text.indexOf('=')).replace(/\+$/, '');
      checkAssignments([{ name, value: word }], state);
      index += 1;
    }
    const head = words[index];
    if (head === undefined) return null;
    if (!head.literal) {
      unjudgeable(state, `the program name \`${head.source}\` is only known when it runs`);
      return null;
    }
    const name = baseName(head.text);
    if (name === '') return null;
    state.executed.push({ name, display: head.text });
    state.scripts.push({ path: head.text, how: head.text.includes('/') ? 'program' : 'command' });
    if (name === 'sudo' || name === 'doas' || name === 'pkexec' || name === 'run0') state.keys.add('privilege');
    if (name === 'su' || name === 'runuser') {
      if (name === 'su') state.keys.add('privilege');
      for (let position = index + 1; position < words.length; position += 1) {
        const word = words[position] as ShellWord;
        const script =
          word.text === '-c' || word.text === '--command'
            ? words[position + 1]
            : word.text.startsWith('--command=')
              ? { ...word, text: word.text.slice('--command='.length) }
              : undefined;
        if (script !== undefined) analyzeInlineScript(script, `${name} -c`, state, depth);
      }
      if (name === 'su') return null;
    }
    if (name === 'command' && /^-[vV]$/.test(words[index + 1]?.text ?? '')) return null;
    if (name === 'watch' || (name === 'script' && words.some((word) => word.text === '-c'))) {
      // Both hand their command to `sh -c`.
      const rest = words.slice(index + 1);
      const scriptWords =
        name === 'script'
          ? rest.slice(
              rest.findIndex((word) => word.text === '-c') + 1,
              rest.findIndex((word) => word.text === '-c') + 2,
            )
          : skipOptions(rest, ['-n', '--interval', '-d', '--differences', '-q', '--equexit']);
      if (scriptWords.length > 0) {
        const joined = scriptWords.map((word) => word.text).join(' ');
        analyzeInlineScript(
          { ...(scriptWords[0] as ShellWord), text: joined, literal: scriptWords.every((word) => word.literal) },
          name,
          state,
          depth,
        );
      }
      return null;
    }
    const runner = RUNNER_SUBCOMMANDS.get(name);
    if (runner !== undefined) {
      const rest = words.slice(index + 1);
      const subcommandIndex = rest.findIndex((word) => !word.text.startsWith('-'));
      const subcommand = rest[subcommandIndex];
      if (name === 'uvx' && subcommand !== undefined) {
        index += 1 + subcommandIndex;
        continue;
      }
      if (subcommand !== undefined && runner.has(subcommand.text)) {
        index += 1 + subcommandIndex + 1;
        if (words[index]?.text === '--') index += 1;
        continue;
      }
    }
    const shape = WRAPPERS.get(name);
    if (shape === undefined) {
      const rest = words.slice(index);
      const command: EffectiveCommand = { name, words: rest, args: rest.slice(1).map((word) => word.text) };
      if (builtBy !== undefined) command.builtBy = builtBy;
      return command;
    }
    if (name === 'xargs') builtBy = 'xargs';
    index += 1;
    // Skip the wrapper's own options.
    while (index < words.length) {
      const word = words[index] as ShellWord;
      const text = word.text;
      if (text === '--') {
        index += 1;
        break;
      }
      if (
        name === 'env' &&
        (text === '-S' || text === '--split-string' || text.startsWith('--split-string=') || /^-[a-zA-Z]*S/.test(text))
      ) {
        const script = text.startsWith('--split-string=')
          ? { ...word, text: text.slice('--split-string='.length) }
          : /^-[a-zA-Z]*S./.test(text)
            ? { ...word, text: text.slice(text.indexOf('S') + 1) }
            : words[index + 1];
        if (script !== undefined) analyzeInlineScript(script, 'env -S', state, depth);
        return null;
      }
      if (name === 'npx' && (text === '-c' || text === '--call')) {
        const script = words[index + 1];
        if (script !== undefined) analyzeInlineScript(script, 'npx -c', state, depth);
        return null;
      }
      if (name === 'flock' && (text === '-c' || text === '--command')) {
        const script = words[index + 1];
        if (script !== undefined) analyzeInlineScript(script, 'flock -c', state, depth);
        return null;
      }
      if (!word.literal && text.startsWith('$')) {
        unjudgeable(state, `the options of \`${name}\` are only known when it runs`);
        return null;
      }
      if (!text.startsWith('-') || text === '-') break;
      if (name === 'nice' && /^-\d+$/.test(text)) {
        index += 1;
        continue;
      }
      if (shape.valueOptions.includes(text)) index += 2;
      else index += 1;
    }
    if (name === 'env') {
      while (index < words.length && isAssignment(words[index] as ShellWord)) {
        const word = words[index] as ShellWord;
        checkAssignments([{ name: word.text.slice(0, word.text.indexOf('=')), value: word }], state);
        index += 1;
      }
    }
    index += shape.positionals ?? 0;
    if (name === 'xargs' && words[index] === undefined) return null;
  }
}

/** The words after a program's options (options in `valueOptions` take a value). */
function skipOptions(words: ShellWord[], valueOptions: string[]): ShellWord[] {
  let index = 0;
  while (index < words.length) {
    const text = (words[index] as ShellWord).text;
    if (text === '--') return words.slice(index + 1);
    if (!text.startsWith('-') || text === '-') break;
    index += valueOptions.includes(text) ? 2 : 1;
  }
  return words.slice(index);
}

/** Parses and judges a script given as a word (`bash -c '…'`, `eval …`); computed text cannot be judged. */
function analyzeInlineScript(word: ShellWord, what: string, state: AnalysisState, depth: number): void {
  if (word.fetches) state.keys.add('remote_script');
  if (!word.literal) {
    unjudgeable(state, `the script of \`${what}\` is only known when it runs`);
    return;
  }
  analyzeScript(word.text, state, depth + 1);
}

// ---------------------------------------------------------------------------------------------
// Walking the parsed command line
// ---------------------------------------------------------------------------------------------

function analyzeScript(script: string, state: AnalysisState, depth: number): void {
  if (depth > MAX_DEPTH) {
    unjudgeable(state, 'scripts are nested too deeply to follow');
    return;
  }
  const parsed: ParsedShell | null = parseShell(script);
  if (parsed === null) {
    unjudgeable(state, 'the shell parser is not loaded yet');
    return;
  }
  if (parsed.hasError) unjudgeable(state, 'the shell parser could not read all of it');
  // bash removes a backslash-newline inside a word (`r\<newline>m` is `rm`); the grammar reads it as a
  // space. The text with every backslash-newline removed is judged too.
  if (/\\\r?\n/.test(script)) analyzeScript(script.replace(/\\\r?\n/g, ''), state, depth + 1);
  checkAssignments(parsed.assignments, state);
  for (const alias of parsed.aliases) unjudgeable(state, `it defines the alias \`${alias}\``);
  const effective = new Map<SimpleShellCommand, EffectiveCommand | null>();
  for (const command of parsed.commands) {
    checkAssignments(command.assignments, state);
    checkRedirects(command.redirects, state);
    effective.set(command, analyzeSimpleCommand(command, state, depth));
  }
  // `curl … | sh`: a fetcher earlier in the pipeline feeding a shell or interpreter later.
  for (const pipeline of parsed.pipelines) {
    const stages = pipeline.stages.map((stage) => stage.map((command) => effective.get(command) ?? null));
    const fetcherStage = stages.findIndex((stage) =>
      stage.some((command) => command !== null && FETCHERS.has(command.name)),
    );
    if (fetcherStage === -1) continue;
    const runner = stages
      .slice(fetcherStage + 1)
      .some((stage) =>
        stage.some((command) => command !== null && (SHELLS.has(command.name) || isInterpreter(command.name))),
      );
    if (runner) state.keys.add('remote_script');
  }
}

function analyzeSimpleCommand(
  simple: SimpleShellCommand,
  state: AnalysisState,
  depth: number,
): EffectiveCommand | null {
  const command = unwrap(simple.words, state, depth);
  if (command === null) return null;
  judge(command, simple, state, depth);
  return command;
}

function judge(command: EffectiveCommand, simple: SimpleShellCommand, state: AnalysisState, depth: number): void {
  if (command.builtBy !== undefined && isArgumentSensitive(command.name)) {
    unjudgeable(state, `${command.builtBy} builds the arguments of \`${command.name}\` when it runs`);
  }
  checkRecursiveDelete(command, state);
  checkBulkDelete(command, state);
  checkDeleterArguments(command, state);
  checkPermissions(command, state);
  checkDisks(command, state);
  checkSystemWrites(command, state);
  checkServices(command, state);
  checkProcesses(command, state);
  checkGit(command, state);
  checkGitConfig(command, state);
  checkProgramSource(command, simple, state, depth);
  checkAwkAndSed(command, state);
  checkFindExec(command, state, depth);
  checkCopiesOfPrograms(command, state);
  recordCreatedFiles(command, state);
  recordDirectoryChange(command, state);
  recordRunnerScripts(command, state);
}

/** A file name with the extension of a script (`tidy.py`, `main.ts`). */
const SCRIPT_FILE = /\.(py|pyw|js|mjs|cjs|ts|mts|cts|tsx|jsx|rb|pl|php|lua|r|R|sh|bash)$/;

/**
 * Scripts run by programs the interpreter checks do not know: `uv run tidy.py` (the runner is
 * unwrapped, so the script is the program word), `tsx x.ts`, `ts-node x.ts`.
 */
function recordRunnerScripts(command: EffectiveCommand, state: AnalysisState): void {
  const head = command.words[0];
  if (head?.literal && !head.text.includes('/') && SCRIPT_FILE.test(head.text)) {
    state.scripts.push({ path: head.text, how: 'interpreter' });
  }
  if (['tsx', 'ts-node', 'ts-node-esm', 'vite-node', 'esno', 'esrun'].includes(command.name)) {
    const file = command.words.slice(1).find((word) => !(word.literal && word.text.startsWith('-')));
    if (file?.literal) state.scripts.push({ path: file.text, how: 'interpreter' });
  }
}

/** `cd sub && bash build.sh`: the script is looked for below `sub` too. */
function recordDirectoryChange(command: EffectiveCommand, state: AnalysisState): void {
  if (command.name === 'popd') {
    state.directoryUnknown = true;
    return;
  }
  if (command.name !== 'cd' && command.name !== 'pushd') return;
  const target = command.words.slice(1).find((word) => !(word.literal && /^(-[LPe@]+|--)$/.test(word.text)));
  if (target === undefined) state.directories.push('~');
  else if (!target.literal || /^[-+]\d*$/.test(target.text)) state.directoryUnknown = true;
  else state.directories.push(target.text);
}

// ---------------------------------------------------------------------------------------------
// Unjudgeable shapes and the bulk-delete additions (docs/adr/0033)
// ---------------------------------------------------------------------------------------------

/** `shred`, `tar --remove-files`, `rsync --delete`, `rimraf`: deletes that are not spelled `rm -r`. */
function checkBulkDelete(command: EffectiveCommand, state: AnalysisState): void {
  const { name, args } = command;
  if (name === 'shred' || name === 'srm' || name === 'wipe' || name === 'rimraf') state.keys.add('recursive_delete');
  if ((name === 'tar' || name === 'bsdtar') && args.some((arg) => arg === '--remove-files'))
    state.keys.add('recursive_delete');
  if (name === 'rsync' && args.some((arg) => /^--(delete|del$|remove-source-files)/.test(arg)))
    state.keys.add('recursive_delete');
}

/** `rm "$x"`: an argument that is computed and could start with `-` can turn into `-rf`. */
function checkDeleterArguments(command: EffectiveCommand, state: AnalysisState): void {
  if (!DELETERS.has(command.name) || command.name === 'unlink') return;
  for (const word of command.words.slice(1)) {
    if (word.literal && word.text === '--') return;
    if (!word.literal && word.literalPrefix === '') {
      unjudgeable(
        state,
        `an argument of \`${command.name}\` (\`${word.source}\`) is only known when it runs and could be an option`,
      );
      return;
    }
  }
}

/** Options of interpreters that take a separate value, so that the script operand is found. */
const INTERPRETER_VALUE_OPTIONS = new Set([
  '-W',
  '-X',
  '-Q',
  '-r',
  '--require',
  '--import',
  '--loader',
  '--experimental-loader',
  '-I',
  '--input-type',
  '--conditions',
  '-C',
  '--title',
  '-x',
  '-E',
  '--env-file',
]);
const SHELL_VALUE_OPTIONS = new Set(['-o', '+o', '-O', '+O', '--rcfile', '--init-file']);
/** Options after which a shell or interpreter runs no program from stdin (information, a test runner, a package script). */
const INFO_OPTIONS = new Set([
  '--version',
  '-V',
  '--help',
  '-h',
  '-v',
  '-version',
  '--check',
  '--test',
  '--run',
  '--v8-options',
]);
const STDIN_PATHS = /^(-|\/dev\/stdin|\/dev\/fd\/\d+|\/proc\/self\/fd\/\d+|\/dev\/tty)$/;

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
  else if (/^lua/.test(name)) flag = /^[A-Za-z]*e$/;
  else if (name === 'osascript' || name === 'Rscript') flag = /^e$/;
  if (flag === null) return -1;
  for (let index = 0; index < args.length; index += 1) {
    const arg = args[index] as string;
    if (longFlags.includes(arg)) return index + 1;
    if (arg === '--') return -1;
    if (SHELLS.has(name) && SHELL_VALUE_OPTIONS.has(arg)) {
      index += 1;
      continue;
    }
    if (!arg.startsWith('-') && !(SHELLS.has(name) && arg.startsWith('+'))) return -1;
    if (/^[-+][A-Za-z]+$/.test(arg) && flag.test(arg.slice(1))) return index + 1;
  }
  return -1;
}

/**
 * Where a shell or interpreter takes its program from: an inline script (judged), standard input,
 * a substitution or a computed name (unjudgeable), or a file (recorded, so that a file written by
 * the same command line is caught). `eval`, `source`, `.` and `trap` likewise.
 */
function checkProgramSource(
  command: EffectiveCommand,
  simple: SimpleShellCommand,
  state: AnalysisState,
  depth: number,
): void {
  const { name } = command;
  const argumentWords = command.words.slice(1);
  if (name === 'eval') {
    state.keys.add('inline_interpreter');
    if (argumentWords.some((word) => word.fetches)) state.keys.add('remote_script');
    if (argumentWords.some((word) => !word.literal)) {
      unjudgeable(state, '`eval` runs text that is only known when it runs');
      return;
    }
    analyzeScript(argumentWords.map((word) => word.text).join(' '), state, depth + 1);
    return;
  }
  if (name === 'trap') {
    const first = argumentWords[0];
    if (first === undefined || first.text.startsWith('-')) return;
    analyzeInlineScript(first, 'trap', state, depth);
    return;
  }
  if (name === 'source' || name === '.') {
    const operand = argumentWords[0];
    if (operand === undefined) return;
    if (operand.fetches) state.keys.add('remote_script');
    if (!operand.literal || STDIN_PATHS.test(operand.text)) {
      unjudgeable(state, `\`${name}\` runs a script that is only known when it runs (\`${operand.source}\`)`);
      return;
    }
    state.executed.push({ name: baseName(operand.text), display: operand.text });
    state.scripts.push({ path: operand.text, how: 'shell' });
    return;
  }
  const shell = SHELLS.has(name);
  if (!shell && !isInterpreter(name)) return;
  const scriptIndex = inlineScriptIndex(command);
  if (scriptIndex !== -1) {
    state.keys.add('inline_interpreter');
    const script = command.words[scriptIndex + 1];
    if (script === undefined) return;
    if (script.fetches) state.keys.add('remote_script');
    if (shell) analyzeInlineScript(script, `${name} -c`, state, depth);
    else if (!script.literal) unjudgeable(state, `the script of \`${name}\` is only known when it runs`);
    return;
  }
  if (argumentWords.some((word) => word.processSubstitution && word.fetches)) state.keys.add('remote_script');
  if ((name === 'deno' || name === 'bun') && !argumentWords.some((word) => STDIN_PATHS.test(word.text))) {
    // Their first word is a subcommand (`deno run x.ts`, `bun test`): a file or a task, never stdin unless `-`.
    const words = argumentWords.filter((word) => !(word.literal && word.text.startsWith('-')));
    const file = words[0]?.text === 'run' ? words[1] : words[0];
    if (file?.literal && SCRIPT_FILE.test(file.text)) state.scripts.push({ path: file.text, how: 'interpreter' });
    return;
  }
  if (argumentWords.some((word) => word.literal && INFO_OPTIONS.has(word.text))) return;
  if (/^python/.test(name) && argumentWords.some((word) => word.text === '-m')) return;
  let readsStdin = false;
  let operand: ShellWord | undefined;
  for (let index = 0; index < argumentWords.length; index += 1) {
    const word = argumentWords[index] as ShellWord;
    if (word.text === '--') {
      operand = argumentWords[index + 1];
      break;
    }
    if (shell && /^-[A-Za-z]*s[A-Za-z]*$/.test(word.text)) readsStdin = true;
    if (shell && SHELL_VALUE_OPTIONS.has(word.text)) {
      index += 1;
      continue;
    }
    if (!shell && INTERPRETER_VALUE_OPTIONS.has(word.text)) {
      index += 1;
      continue;
    }
    if (word.literal && (word.text.startsWith('-') || (shell && word.text.startsWith('+'))) && word.text !== '-')
      continue;
    operand = word;
    break;
  }
  if (readsStdin || operand === undefined || (operand.literal && STDIN_PATHS.test(operand.text))) {
    const from = simple.stdin === null ? 'standard input' : stdinDescription(simple.stdin);
    unjudgeable(state, `\`${name}\` reads its program from ${from}`);
    // What a literal heredoc or here-string holds is still judged, so its classes show too.
    if (shell) for (const text of simple.stdinTexts) analyzeScript(text, state, depth + 1);
    return;
  }
  if (!operand.literal) {
    unjudgeable(state, `\`${name}\` runs a program that is only known when it runs (\`${operand.source}\`)`);
    return;
  }
  state.executed.push({ name: baseName(operand.text), display: operand.text });
  state.scripts.push({ path: operand.text, how: shell ? 'shell' : 'interpreter' });
}

function stdinDescription(stdin: NonNullable<SimpleShellCommand['stdin']>): string {
  switch (stdin) {
    case 'pipe':
      return 'a pipe';
    case 'file':
      return 'a redirected file';
    case 'heredoc':
      return 'a heredoc';
    case 'herestring':
      return 'a here-string';
    case 'process_substitution':
      return 'a process substitution';
  }
}

/** awk programs that call `system` or pipe to/from a command; GNU sed's `e` command and `s///e`. */
function checkAwkAndSed(command: EffectiveCommand, state: AnalysisState): void {
  const { name, words } = command;
  if (AWKS.has(name)) {
    const rest = words.slice(1);
    if (rest.some((word) => word.text === '-f' || word.text.startsWith('--file'))) return;
    const program = skipOptions(rest, [
      '-F',
      '-v',
      '-i',
      '-l',
      '--assign',
      '--field-separator',
      '--include',
      '--load',
    ])[0];
    if (program === undefined) return;
    if (!program.literal) {
      unjudgeable(state, `the awk program (\`${program.source}\`) is only known when it runs`);
      return;
    }
    const text = program.text;
    if (
      /\bsystem\s*\(/.test(text) ||
      /\|\s*getline/.test(text) ||
      /\|&/.test(text) ||
      /\bprintf?\b[^;{}]*[^|]\|\s*["A-Za-z_$(]/.test(text)
    ) {
      unjudgeable(state, 'the awk program runs commands (system, pipes)');
    }
    return;
  }
  if (name === 'sed' || name === 'gsed') {
    const scripts: string[] = [];
    const args = command.args;
    let sawScriptOption = false;
    for (let index = 0; index < args.length; index += 1) {
      const arg = args[index] as string;
      if (arg === '-e' || arg === '--expression') {
        sawScriptOption = true;
        scripts.push(args[index + 1] ?? '');
        index += 1;
      } else if (arg.startsWith('--expression=')) {
        sawScriptOption = true;
        scripts.push(arg.slice('--expression='.length));
      }
    }
    if (!sawScriptOption) {
      const first = skipOptions(words.slice(1), ['-f', '--file', '-l', '--line-length', '-s'])[0];
      if (first !== undefined) scripts.push(first.text);
    }
    const executes = (script: string) =>
      /(^|[;\n{}])\s*(\d+|\$|\/(?:\\.|[^/])*\/)?(,\s*(\d+|\$|\/(?:\\.|[^/])*\/))?\s*!?\s*e(\s|;|$)/.test(script) ||
      /(^|[;\n{}\s\d$/])s([^\w\s\\])(?:\\.|(?!\2).)*\2(?:\\.|(?!\2).)*\2[gpiImM\d]*e/.test(script);
    if (scripts.some(executes)) unjudgeable(state, 'the sed script runs commands (the `e` command or flag)');
  }
}

/** git settings that run commands: `-c alias.x='!…'`, `-c core.pager=…`, `git config core.sshCommand …`. */
const GIT_COMMAND_KEYS =
  /^(alias\..+|core\.(pager|editor|sshcommand|fsmonitor|hookspath|askpass|gitproxy)|sequence\.editor|diff\.external|diff\..+\.(textconv|command)|merge\..+\.driver|filter\..+|credential\.helper|credential\..+\.helper|gpg\.program|gpg\..+\.program|pager\..+|uploadpack\.packobjectshook|instaweb\..+|web\.browser|browser\..+\.cmd|man\..+\.cmd|include\.path|includeif\..+)$/i;

function checkGitConfig(command: EffectiveCommand, state: AnalysisState): void {
  if (command.name !== 'git') return;
  const args = command.args;
  const words = command.words.slice(1);
  for (let index = 0; index < args.length; index += 1) {
    const arg = args[index] as string;
    let setting: string | null = null;
    if (arg === '-c' || arg === '--config-env') setting = args[index + 1] ?? '';
    else if (arg.startsWith('--config-env=')) setting = arg.slice('--config-env='.length);
    else if (arg.startsWith('-c') && arg.length > 2) setting = arg.slice(2);
    if (setting !== null) {
      const word = words[index + (arg === '-c' || arg === '--config-env' ? 1 : 0)];
      const key = setting.split('=', 1)[0] as string;
      const value = setting.slice(key.length + 1);
      if (word !== undefined && !word.literal) {
        unjudgeable(state, 'a git setting given on the command line is only known when it runs');
        return;
      }
      if (GIT_COMMAND_KEYS.test(key) && !(/^alias\./i.test(key) && !value.trimStart().startsWith('!'))) {
        unjudgeable(state, `the git setting \`${key}\` runs a command`);
        return;
      }
      if (arg === '-c' || arg === '--config-env') index += 1;
      continue;
    }
    if (!arg.startsWith('-')) {
      if (arg === 'config') {
        const rest = args.slice(index + 1).filter((item) => !item.startsWith('-'));
        const key = rest[0] === 'set' ? rest[1] : rest[0];
        if (key !== undefined && GIT_COMMAND_KEYS.test(key) && rest.length >= (rest[0] === 'set' ? 3 : 2)) {
          unjudgeable(state, `it changes the git setting \`${key}\`, which runs a command`);
        }
      }
      return;
    }
  }
}

/** `find … -exec cmd {} ;`: the command is judged, and its arguments are built when it runs. */
function checkFindExec(command: EffectiveCommand, state: AnalysisState, depth: number): void {
  if (command.name !== 'find') return;
  const words = command.words;
  for (let index = 1; index < words.length; index += 1) {
    if (!['-exec', '-execdir', '-ok', '-okdir'].includes((words[index] as ShellWord).text)) continue;
    let end = index + 1;
    while (end < words.length && ![';', '+'].includes((words[end] as ShellWord).text)) end += 1;
    const inner = unwrap(words.slice(index + 1, end), state, depth + 1);
    if (inner !== null) {
      inner.builtBy = 'find -exec';
      judge(
        inner,
        { assignments: [], words: inner.words, redirects: [], stdin: null, stdinTexts: [] },
        state,
        depth + 1,
      );
    }
    index = end;
  }
}

/** `ln -s /bin/rm x`, `cp /bin/bash ./x`, `cat /bin/rm > x`: a deleter or shell under a name that is not matched. */
function checkCopiesOfPrograms(command: EffectiveCommand, state: AnalysisState): void {
  const { name } = command;
  if (!['ln', 'cp', 'mv', 'install', 'link', 'cat', 'dd'].includes(name)) return;
  const sourceWords =
    name === 'dd'
      ? command.words.slice(1).filter((word) => word.text.startsWith('if='))
      : (() => {
          const operands = command.words.slice(1).filter((word) => !(word.literal && word.text.startsWith('-')));
          return name === 'cat' || operands.length < 2 ? operands : operands.slice(0, -1);
        })();
  for (const word of sourceWords) {
    const text = name === 'dd' ? word.text.slice(3) : word.text;
    const base = baseName(text.replace(/\/+$/, ''));
    if (
      DELETERS.has(base) ||
      SHELLS.has(base) ||
      isInterpreter(base) ||
      base === 'find' ||
      base === 'env' ||
      base === 'xargs'
    ) {
      unjudgeable(state, `it makes a copy or link of \`${base}\` under another name`);
      return;
    }
    // `ln -s "$(command -v rm)" x`: what is linked is only known when it runs.
    if (name !== 'cat' && !word.literal && word.literalPrefix === '' && /^["']?(\$\(|`)/.test(word.source)) {
      unjudgeable(state, `\`${name}\` copies or links a file named by a command substitution (\`${word.source}\`)`);
      return;
    }
  }
}

/** Records files the command writes or makes executable, for the "runs what it wrote" check. */
function recordCreatedFiles(command: EffectiveCommand, state: AnalysisState): void {
  const { name, args } = command;
  const add = (path: string | undefined | null) => {
    if (path === undefined || path === null || path === '' || path === '-') return;
    const base = baseName(path.replace(/\/+$/, ''));
    if (base !== '') state.created.add(base);
  };
  if (name === 'tee' || name === 'touch') for (const operand of operandsOf(args)) add(operand);
  if (['cp', 'mv', 'ln', 'install', 'link', 'rsync'].includes(name)) {
    const destination = destinationOf(args);
    add(destination);
    const operands = operandsOf(args);
    if (name === 'ln' && operands.length === 1) add(operands[0]);
    // Copying into a directory keeps the source's name.
    for (const source of operands.slice(0, -1)) add(source);
  }
  if (
    name === 'chmod' &&
    args.some((arg) => /^([ugoa]*\+[rwxXst]*x|[0-7]*[1357][0-7]{0,2}$)/.test(arg.replace(/^-/, '')))
  )
    for (const operand of operandsOf(args).slice(1)) add(operand);
  if (name === 'curl' || name === 'wget') {
    for (let index = 0; index < args.length; index += 1) {
      const arg = args[index] as string;
      if (['-o', '--output', '-O', '--output-document'].includes(arg) && !(name === 'curl' && arg === '-O'))
        add(args[index + 1]);
      else if (arg.startsWith('--output=') || arg.startsWith('--output-document='))
        add(arg.slice(arg.indexOf('=') + 1));
    }
    if (name === 'curl' && args.some((arg) => arg === '-O' || arg === '--remote-name' || /^-[a-zA-Z]*O/.test(arg)))
      for (const operand of operandsOf(args)) add(operand.replace(/[?#].*$/, ''));
    if (name === 'wget') for (const operand of operandsOf(args)) add(operand.replace(/[?#].*$/, ''));
  }
  if (name === 'dd') for (const arg of args) if (arg.startsWith('of=')) add(arg.slice(3));
  if (
    (name === 'sed' || name === 'perl') &&
    args.some((arg) => /^-[A-Za-z]*i/.test(arg) || arg.startsWith('--in-place'))
  )
    for (const operand of operandsOf(args).slice(1)) add(operand);
}

function checkRedirects(redirects: ShellRedirect[], state: AnalysisState): void {
  for (const redirect of redirects) {
    if (redirect.target === null) continue;
    const target = redirect.target.text;
    // `>&2` duplicates a descriptor; `>& file` writes a file like `&>`.
    const writes = WRITE_REDIRECTS.has(redirect.operator) || (redirect.operator === '>&' && !/^(\d+|-)$/.test(target));
    if (!writes) continue;
    if (redirect.target.literal) state.created.add(baseName(target.replace(/\/+$/, '')));
    if (SYSTEM_DIRECTORY.test(target)) state.keys.add('system_config_write');
    if (DISK_DEVICE.test(target)) {
      state.keys.add('raw_disk_write');
      state.blockReason ??= `shell redirection onto the disk device ${target} is on the hard blocklist and never runs`;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Matching (the pattern table of spec/core.md §12.1)
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

// ---------------------------------------------------------------------------------------------
// Scripts run by path (docs/adr/0033): their text is judged like the command's
// ---------------------------------------------------------------------------------------------

/** What {@link judgeCommand} needs to judge the local scripts a command runs by path. */
export interface ScriptContext {
  /** The directory the command runs in: relative script paths are resolved against it. */
  cwd: string;
  /** The directory `~` stands for. Default: the user's home directory. */
  homeDir?: string;
  /**
   * True for an absolute path the agent wrote or changed in this session (`write_file`, `patch`):
   * running such a file asks unless it is a shell script that judges clean.
   */
  writtenByAgent?: (path: string) => boolean;
  /**
   * When the session began (ms since the epoch, wall clock). A script whose inode changed since (its
   * ctime: written, copied, extracted or touched, by any tool; a command cannot set it back) is new to
   * this session, and what cannot be judged in it asks. What cannot be judged in a script that was
   * there before the session (`./configure`, `./gradlew`) does not, as running an existing script did
   * not before; its pattern classes (`rm -rf` in it) still ask. Default: every script is new.
   */
  changedSince?: number;
  /**
   * The command's search path (its `PATH`): a bare program name found there is judged when the
   * agent wrote that file. Default: none.
   */
  searchPath?: string;
}

/** Scripts larger than this are not read: running one cannot be judged. */
export const MAX_JUDGED_SCRIPT_BYTES = 256 * 1024;
/** Scripts that run scripts are followed this many levels deep. */
const MAX_SCRIPT_LEVELS = 4;
/** At most this many script files are read for one command. */
const MAX_SCRIPT_FILES = 32;

/** A script path as found on disk: every file it may name (see {@link locateScript}). */
type LocatedScript =
  | { kind: 'files'; files: ScriptFile[] }
  | { kind: 'missing' }
  | { kind: 'directory' }
  | { kind: 'special' };

/** A file a script path names: as resolved, and with symbolic links followed. */
interface ScriptFile {
  path: string;
  realPath: string;
}

/**
 * Reads the local scripts a command runs by path and judges their text as commands: their pattern
 * classes, blocklist hits and unjudgeable reasons count for the command. A script the agent wrote
 * that is not a shell script cannot be judged; nor can a script that is missing (it may be written
 * before the command reaches it), unreadable, not a regular file, or larger than
 * {@link MAX_JUDGED_SCRIPT_BYTES}.
 */
async function judgeScriptFiles(
  state: AnalysisState,
  context: ScriptContext,
  seen: Set<string>,
  level: number,
  outerDirectories: string[],
): Promise<void> {
  const directories = [...outerDirectories, ...state.directories];
  const runs = state.scripts.splice(0);
  if (state.pathUnknown) unjudgeable(state, 'it sets PATH to a directory that is only known when it runs');
  for (const run of runs) {
    const display = run.path;
    if (run.how === 'command') {
      const found = await lookUpCommand(run.path, state.pathEntries, context);
      if (found === null) continue;
      const writtenByAgent = isWrittenByAgent(found.file, context);
      // An installed program found through the inherited search path is everyday.
      if (!found.fromOwnPath && !writtenByAgent) continue;
      await judgeScriptFile(state, run, found.file, writtenByAgent, { context, seen, level, directories });
      continue;
    }
    const located = await locateScript(run.path, context, directories);
    const relative = !isAbsolute(run.path) && run.path !== '~' && !run.path.startsWith('~/');
    if (relative && state.directoryUnknown) {
      unjudgeable(state, `it runs \`${display}\` in a directory that is only known when it runs`);
    }
    if (located.kind === 'directory') continue;
    if (located.kind === 'missing') {
      // A file the same command line writes, or one in an unknown directory, is reported already.
      // Another interpreter's missing script is everyday (`tsc && node dist/x.js`): its text would
      // not be judged anyway.
      const reported = state.created.has(baseName(run.path)) || (relative && state.directoryUnknown);
      if (run.how !== 'interpreter' && !reported)
        unjudgeable(state, `it runs \`${display}\`, which cannot be found before it runs`);
      continue;
    }
    if (located.kind === 'special') {
      unjudgeable(state, `it runs \`${display}\`, which is not a regular file`);
      continue;
    }
    for (const file of located.files) {
      const writtenByAgent = isWrittenByAgent(file, context);
      // Another interpreter's script the agent did not write is everyday.
      if (run.how === 'interpreter' && !writtenByAgent) continue;
      await judgeScriptFile(state, run, file, writtenByAgent, { context, seen, level, directories });
    }
  }
}

function isWrittenByAgent(file: ScriptFile, context: ScriptContext): boolean {
  const written = context.writtenByAgent;
  return written !== undefined && (written(file.path) || written(file.realPath));
}

/** Judges one script file the command runs and adds what it finds to the command's state. */
async function judgeScriptFile(
  state: AnalysisState,
  run: ScriptRun,
  file: ScriptFile,
  writtenByAgent: boolean,
  walk: { context: ScriptContext; seen: Set<string>; level: number; directories: string[] },
): Promise<void> {
  const display = run.path;
  if (walk.seen.has(file.realPath)) return;
  if (walk.seen.size >= MAX_SCRIPT_FILES) {
    unjudgeable(state, 'it runs more scripts than are judged');
    return;
  }
  walk.seen.add(file.realPath);
  const fresh = writtenByAgent || (await changedInSession(file.realPath, walk.context));
  // A program run by path is usually a binary: its first bytes say whether the rest is worth reading.
  const head = run.how === 'shell' ? null : await readScript(file.realPath, 512);
  const worthReading = run.how === 'shell' || writtenByAgent || (head !== null && isShellScript(head.head));
  const content = worthReading ? await readScript(file.realPath) : head;
  if (content === null) {
    if (fresh) unjudgeable(state, `it runs \`${display}\`, which cannot be read`);
    return;
  }
  const shellScript =
    run.how === 'shell' || ((run.how === 'program' || run.how === 'command') && isShellScript(content.head));
  // What a judgement rests on; a file neither judged nor written by the agent does not count.
  if (shellScript || writtenByAgent)
    state.scriptsRead.push(`${file.realPath}\0${content.text ?? `${content.head.toString('latin1')}…`}`);
  if (!shellScript) {
    if (writtenByAgent)
      unjudgeable(
        state,
        `it runs \`${display}\`, which the agent wrote in this session and which is not a shell script`,
      );
    return;
  }
  if (content.text === null) {
    if (!fresh) return;
    unjudgeable(
      state,
      `it runs \`${display}\`, which is too large to judge (over ${MAX_JUDGED_SCRIPT_BYTES / 1024} KiB)`,
    );
    return;
  }
  if (walk.level >= MAX_SCRIPT_LEVELS) {
    if (fresh) unjudgeable(state, `it runs \`${display}\`, which runs scripts nested too deeply to follow`);
    return;
  }
  const inner = newState();
  analyzeScript(content.text, inner, 1);
  scanSql(content.text, inner);
  scanForkBomb(content.text, inner);
  await judgeScriptFiles(inner, walk.context, walk.seen, walk.level + 1, walk.directories);
  checkRunsWhatItCreated(inner);
  mergeScriptState(state, inner, display, fresh);
}

/** Adds what a script does to the command that runs it, naming the script. */
/**
 * Adds what a script's judgement found to the command's. `fresh` (new to the session, or written by the agent):
 * what cannot be judged in it counts too; otherwise only its pattern classes and the blocklist do.
 */
function mergeScriptState(state: AnalysisState, inner: AnalysisState, display: string, fresh: boolean): void {
  for (const key of inner.keys) {
    if (key === 'unjudgeable') continue;
    if (!state.keys.has(key)) {
      state.keys.add(key);
      state.scriptOfKey.set(key, inner.scriptOfKey.get(key) ?? display);
    }
  }
  state.scriptsRead.push(...inner.scriptsRead);
  if (fresh) for (const reason of inner.reasons) unjudgeable(state, `\`${display}\`, which it runs: ${reason}`);
  if (inner.blockReason !== null) state.blockReason ??= `\`${display}\`, which it runs: ${inner.blockReason}`;
}

/**
 * Every file a script path may name: relative to the cwd, or to the directories the command line
 * changes to (all of them are judged, as which one runs depends on the order of the `cd`s).
 */
async function locateScript(path: string, context: ScriptContext, directories: string[]): Promise<LocatedScript> {
  const home = context.homeDir ?? homedir();
  const expand = (text: string) => (text === '~' ? home : text.startsWith('~/') ? `${home}${text.slice(1)}` : text);
  const expanded = expand(path);
  const candidates: string[] = [];
  if (isAbsolute(expanded)) candidates.push(expanded);
  else {
    candidates.push(resolve(context.cwd, expanded));
    let current = context.cwd;
    for (const directory of directories) {
      current = resolve(current, expand(directory));
      candidates.push(resolve(current, expanded), resolve(context.cwd, expand(directory), expanded));
    }
  }
  const files: ScriptFile[] = [];
  let directory = false;
  for (const candidate of new Set(candidates)) {
    try {
      const stats = await stat(candidate);
      if (stats.isDirectory()) directory = true;
      else if (!stats.isFile()) return { kind: 'special' };
      else files.push({ path: candidate, realPath: await realpath(candidate) });
    } catch {
      // Not there (or not reachable): try the next candidate.
    }
  }
  if (files.length > 0) return { kind: 'files', files };
  return directory ? { kind: 'directory' } : { kind: 'missing' };
}

/**
 * Where the shell finds a bare program name: the first executable regular file in the command
 * line's own PATH entries (relative ones against the cwd), then in the inherited search path.
 * Null when it is in neither (a builtin, a function, a missing program).
 */
async function lookUpCommand(
  name: string,
  ownEntries: string[],
  context: ScriptContext,
): Promise<{ file: ScriptFile; fromOwnPath: boolean } | null> {
  const home = context.homeDir ?? homedir();
  const inherited = (context.searchPath ?? '').split(':').filter((entry) => entry !== '');
  const directories = [
    ...ownEntries.map((entry) => ({ entry, own: true })),
    ...inherited.map((entry) => ({ entry, own: false })),
  ];
  for (const { entry, own } of directories) {
    const directory = entry
      .replace(/^~(?=\/|$)/, home)
      .replace(/^\$(HOME|\{HOME\})(?=\/|$)/, home)
      .replace(/^\$(PWD|\{PWD\})(?=\/|$)/, context.cwd);
    const candidate = resolve(context.cwd, directory, name);
    try {
      const stats = await stat(candidate);
      if (!stats.isFile() || (stats.mode & 0o111) === 0) continue;
      return { file: { path: candidate, realPath: await realpath(candidate) }, fromOwnPath: own };
    } catch {
      // Not in this directory.
    }
  }
  return null;
}

/**
 * The first bytes of a file and its whole text (null when larger than `limit`); null when
 * it cannot be read. Opened without blocking, so a file swapped for a FIFO cannot stall the check.
 */
/** Whether a script file is new to the session (see {@link ScriptContext.changedSince}); unknown counts as new. */
async function changedInSession(path: string, context: ScriptContext): Promise<boolean> {
  if (context.changedSince === undefined) return true;
  try {
    return (await stat(path)).ctimeMs >= context.changedSince;
  } catch {
    return true;
  }
}

async function readScript(
  path: string,
  limit = MAX_JUDGED_SCRIPT_BYTES,
): Promise<{ head: Buffer; text: string | null } | null> {
  let handle: Awaited<ReturnType<typeof open>> | undefined;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
    const stats = await handle.stat();
    if (!stats.isFile()) return null;
    const buffer = Buffer.alloc(Math.min(stats.size, limit) + 1);
    let length = 0;
    while (length < buffer.length) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length);
      if (bytesRead === 0) break;
      length += bytesRead;
    }
    const bytes = buffer.subarray(0, length);
    return {
      head: bytes.subarray(0, 512),
      text: length > limit ? null : bytes.toString('utf8'),
    };
  } catch {
    return null;
  } finally {
    await handle?.close().catch(() => {});
  }
}

/**
 * True when a file run by path is a shell script: its `#!` line names a shell (directly or through
 * `env`), or it has no `#!` line and is not binary — bash then runs it as a script itself.
 */
function isShellScript(head: Buffer): boolean {
  if (head.subarray(0, 2).toString('latin1') !== '#!') return !head.includes(0);
  const line = head.toString('utf8').slice(2).split('\n', 1)[0]?.trim() ?? '';
  const words = line.split(/\s+/);
  let program = baseName(words[0] ?? '');
  if (program === 'env') {
    program = baseName(words.slice(1).find((word) => !word.startsWith('-') && !word.includes('=')) ?? '');
  }
  return SHELLS.has(program);
}
