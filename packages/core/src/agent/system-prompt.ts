import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { skillsPromptLayer } from '../skills/skill-tools.js';
import { BoundedMemo } from '../util/bounded-memo.js';

const CONTEXT_FILES = ['.hermes.md', 'HERMES.md', 'AGENTS.md', 'CLAUDE.md', '.cursorrules'];
const LAYER_LIMIT = 20_000;

const BUILTIN_IDENTITY = `You are Hermes, a capable AI agent. You help the user with software engineering and other tasks by
reasoning carefully and using the tools available to you. Be direct and concise; prefer doing the work over
describing it. When a task is done, say what you did and what, if anything, remains.`;

const PLATFORM_HINTS: Record<string, string> = {
  acp: 'You are running inside an editor through the Agent Client Protocol. The editor renders file diffs and terminal output for the user, so keep your own summaries of edits short.',
  tui: 'You are running inside a terminal user interface. Format answers as Markdown suitable for a terminal.',
  api_server:
    'You are serving requests through an HTTP API. The client may not support interactive questions, so do not ask clarifying questions unless the clarify tool is available.',
  subagent:
    'You are a subagent working on one delegated task for a parent agent. Nobody will answer questions; work autonomously.',
};
const DEFAULT_PLATFORM_HINT = 'You are embedded in an application. Answer in Markdown.';

/** What the system prompt is built from (spec/core.md §7.3). */
export interface SystemPromptInput {
  homeDir: string;
  toolNames: string[];
  configuredText: string | null;
  cwd: string;
  skipContextFiles: boolean;
  createdAt: number;
  model: { provider: string; model: string } | null;
  source: string;
  /** Replaces the configured text layer for subagents. */
  focusInstruction?: string;
  /** The skills the session can load with `skill_view`, listed in a "Skills" layer. */
  skills?: { name: string; description: string }[];
}

/** Fingerprint of what forces a rebuild: model spec, enabled tool names and cwd (spec/core.md §7.3). */
export function promptFingerprint(modelSpec: string | null, toolNames: string[], cwd: string): string {
  // Every new session asks, with the same few inputs.
  return fingerprints.get(JSON.stringify([modelSpec, [...toolNames].sort(), cwd]), (key) =>
    createHash('sha256').update(key).digest('hex').slice(0, 16),
  );
}
const fingerprints = new BoundedMemo<string, string>();

function capLayer(text: string): string {
  if (text.length <= LAYER_LIMIT) return text;
  const head = Math.floor(LAYER_LIMIT * 0.7);
  const tail = Math.floor(LAYER_LIMIT * 0.2);
  return `${text.slice(0, head)}\n\n[… ${text.length - head - tail} characters omitted …]\n\n${text.slice(text.length - tail)}`;
}

/** The text of a file, or null when there is none (checked first: a thrown ENOENT costs more than the read). */
function readTextFile(path: string): string | null {
  try {
    if (!statSync(path, { throwIfNoEntry: false })?.isFile()) return null;
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
}

/** The git root above `cwd`, or null outside a repository. */
export function findGitRoot(cwd: string): string | null {
  let current = cwd;
  for (;;) {
    if (existsSync(join(current, '.git'))) return current;
    const parent = dirname(current);
    if (parent === current) return null;
    current = parent;
  }
}

function gitBranch(root: string): string | null {
  // A worktree's or submodule's `.git` is a file: no HEAD under it (reading one would throw ENOTDIR).
  if (!statSync(join(root, '.git'), { throwIfNoEntry: false })?.isDirectory()) return null;
  const head = readTextFile(join(root, '.git', 'HEAD'));
  if (!head) return null;
  const match = /^ref: refs\/heads\/(.+)$/m.exec(head.trim());
  return match?.[1] ?? null;
}

function projectContextFile(cwd: string, stop: string | null): { path: string; text: string } | null {
  let current = cwd;
  for (;;) {
    for (const name of CONTEXT_FILES) {
      const path = join(current, name);
      const text = readTextFile(path);
      if (text !== null && text.trim() !== '') return { path, text: capLayer(text.trim()) };
    }
    if (stop !== null && current === stop) return null;
    const parent = dirname(current);
    if (parent === current) return null;
    current = parent;
  }
}

function toolGuidance(toolNames: string[]): string {
  const has = (name: string) => toolNames.includes(name);
  const rules: string[] = [];
  if (has('read_file') && (has('patch') || has('write_file'))) rules.push('Read a file before you edit it.');
  if (has('patch'))
    rules.push('Prefer `patch` for edits to existing files; use `write_file` for new files or full rewrites.');
  if (toolNames.length > 1)
    rules.push(
      'Read-only calls (reading, searching, fetching) may be issued together in one step; they run in parallel.',
    );
  if (has('clarify')) rules.push('Use `clarify` only when you are blocked on a decision only the user can make.');
  if (has('todo')) rules.push('On multi-step tasks keep the `todo` list current: one item in progress at a time.');
  if (has('terminal'))
    rules.push(
      'Each `terminal` call runs in a fresh shell: `cd` and exported variables do not persist between calls; use `workdir` instead.',
    );
  if (has('delegate_task')) rules.push('Use `delegate_task` for independent sub-tasks that can run in parallel.');
  return rules.map((rule) => `- ${rule}`).join('\n');
}

/** What a prompt reads from the file system for one home directory and working directory. */
interface Probe {
  at: number;
  soul: string | undefined;
  gitRoot: string | null;
  branch: string | null;
  context: { path: string; text: string } | null;
}

/**
 * How long the files a prompt reads (SOUL.md, the project context file, the git root and branch) are reused for new
 * prompts in the same directories. A server starts a session per request, and each probe is some twenty file-system
 * calls; an edit to one of those files reaches the sessions started a second later.
 */
const PROBE_TTL_MS = 1_000;
const probes = new BoundedMemo<string, Probe>();

function probe(homeDir: string, cwd: string, withContext: boolean): Probe {
  const key = `${withContext ? 1 : 0}\0${homeDir}\0${cwd}`;
  const now = performance.now();
  const cached = probes.peek(key);
  if (cached !== undefined && now - cached.at < PROBE_TTL_MS) return cached;
  const gitRoot = findGitRoot(cwd);
  const fresh: Probe = {
    at: now,
    soul: readTextFile(join(homeDir, 'SOUL.md'))?.trim(),
    gitRoot,
    branch: gitRoot ? gitBranch(gitRoot) : null,
    context: withContext ? projectContextFile(cwd, gitRoot) : null,
  };
  return probes.set(key, fresh);
}

/** The host's OS line: `os.type()` and `os.release()` each ask the kernel (uname) on every call. */
let operatingSystem: string | undefined;

/**
 * Prompts built from each probe, by the rest of their inputs (ADR 0108): a server builds one per header-less request,
 * with the same inputs every time, and the build (its layers, the tool guidance, the date, the joins) cost about 1% of
 * a short turn's CPU. Keyed by the probe object, so a prompt is reused only while its probe is, and a file change is
 * seen exactly when it was before.
 */
const promptsByProbe = new WeakMap<Probe, Map<string, string>>();
/** Prompts kept per probe; an odd caller with ever-new inputs starts the map again. */
const PROMPTS_KEPT = 64;

/** Builds the stable system prompt (spec/core.md §7.3): each layer under its own heading, empty ones left out. */
export function buildSystemPrompt(input: SystemPromptInput): string {
  const found = probe(input.homeDir, input.cwd, !input.skipContextFiles);
  const shell = process.env.SHELL;
  // Everything the text below reads besides the probe and the OS line (the same for the whole process).
  const key = JSON.stringify([
    input.toolNames,
    input.configuredText,
    input.focusInstruction ?? null,
    input.skills?.map((skill) => [skill.name, skill.description]) ?? null,
    input.skipContextFiles,
    input.cwd,
    sessionDate(input.createdAt),
    input.model?.provider ?? null,
    input.model?.model ?? null,
    input.source,
    shell ?? null,
  ]);
  let prompts = promptsByProbe.get(found);
  if (prompts === undefined) {
    prompts = new Map();
    promptsByProbe.set(found, prompts);
  }
  const kept = prompts.get(key);
  if (kept !== undefined) return kept;
  const built = composeSystemPrompt(input, found, shell);
  if (prompts.size >= PROMPTS_KEPT) prompts.clear();
  prompts.set(key, built);
  return built;
}

/** The session date line's date: the UTC day of `createdAt`. */
function sessionDate(createdAt: number): string {
  return new Date(createdAt).toISOString().slice(0, 10);
}

function composeSystemPrompt(input: SystemPromptInput, found: Probe, shell: string | undefined): string {
  const layers: [string, string | null][] = [];
  const { soul, gitRoot, branch, context } = found;
  layers.push(['Identity', soul ? soul.slice(0, LAYER_LIMIT) : BUILTIN_IDENTITY]);
  layers.push(['Tool guidance', input.toolNames.length > 0 ? toolGuidance(input.toolNames) : null]);
  layers.push(['Instructions', input.focusInstruction ?? input.configuredText]);
  layers.push(['Skills', skillsPromptLayer(input.skills ?? [])]);
  if (!input.skipContextFiles)
    layers.push(['Project context', context ? `From ${context.path}:\n\n${context.text}` : null]);
  operatingSystem ??= `${os.type()} ${os.release()} (${process.platform})`;
  const environment = [
    `Working directory: ${input.cwd}`,
    `Operating system: ${operatingSystem}`,
    `Shell: ${shell ?? (process.platform === 'win32' ? 'cmd.exe' : '/bin/sh')}`,
    `Session date: ${sessionDate(input.createdAt)}`,
  ];
  if (gitRoot) {
    environment.push(`Git root: ${gitRoot}`);
    if (branch) environment.push(`Git branch: ${branch}`);
  }
  layers.push(['Environment', environment.join('\n')]);
  layers.push([
    'Model',
    input.model ? `You are running as model ${input.model.model} from provider ${input.model.provider}.` : null,
  ]);
  layers.push(['Platform', PLATFORM_HINTS[input.source] ?? DEFAULT_PLATFORM_HINT]);
  return layers
    .filter((layer): layer is [string, string] => layer[1] !== null && layer[1].trim() !== '')
    .map(([heading, text]) => `# ${heading}\n\n${text.trim()}`)
    .join('\n\n');
}
