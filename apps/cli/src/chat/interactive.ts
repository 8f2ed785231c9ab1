import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface, type Interface as ReadlineInterface } from 'node:readline';
import type {
  Agent,
  AgentHost,
  ApprovalDecision,
  ApprovalRequest,
  ClarifyAnswer,
  ClarifyRequest,
  CommandResult,
  HostCallbacks,
  StoredMessage,
  TurnRun,
} from '@hermes/core';
import wrapAnsi from 'wrap-ansi';
import { createCliHost, describeStartupError } from '../host.js';
import { isDemoAgent, openSession } from '../session-choice.js';
import { VERSION } from '../version.js';
import {
  alwaysScopeText,
  approvalChoicesText,
  type ParsedAnswer,
  parseApprovalAnswer,
  parseClarifyAnswer,
} from './answers.js';
import { loadHighlighter } from './highlight.js';
import { InputHistory } from './history.js';
import { renderMarkdown } from './markdown.js';
import { attachMentions, completeMention } from './mentions.js';
import { ChatOutput } from './output.js';
import { type PickerChoice, pick } from './picker.js';
import { statusLineOf, TurnRenderer } from './render.js';
import { createPalette, type Palette, shouldUseColor } from './style.js';

/** Options of {@link runInteractiveChat}; the root options of `hermes` plus seams for tests. */
export interface InteractiveChatOptions {
  /** Model of a new session. */
  model?: string;
  /** Session id or title to continue. */
  resume?: string;
  /** Continue the most recent CLI session. */
  continue?: boolean;
  /** Approve dangerous commands without asking. */
  yolo?: boolean;
  cwd?: string;
  /** Default process.stdin. */
  input?: NodeJS.ReadableStream & { isTTY?: boolean };
  /** Default process.stdout. */
  output?: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  /** Default process.env; read for NO_COLOR. */
  env?: Record<string, string | undefined>;
}

/** Commands the chat handles itself; they are not in the shared registry because only a terminal can quit. */
const LOCAL_COMMANDS = ['exit', 'quit'];

/** Commands of the terminal chat only: approval mode and the external editor. */
const TERMINAL_COMMANDS = ['mode', 'edit'];

/**
 * How dangerous commands are approved in this chat: `manual` asks, `yolo` runs them (the hard
 * blocklist still applies). File edits are never asked in this core (they are checkpointed for
 * /rollback), so an "accept edits" mode would be the same as `manual`.
 */
export type ApprovalMode = 'manual' | 'yolo';

const APPROVAL_MODES: ApprovalMode[] = ['manual', 'yolo'];

/** Bracketed paste on and off (xterm): a paste arrives between markers, not as typed Enters. */
const BRACKETED_PASTE_ON = '\x1b[?2004h';
const BRACKETED_PASTE_OFF = '\x1b[?2004l';

/** A question waiting for the next input line (an approval or a clarify answer). */
interface PendingQuestion {
  prompt: string;
  answer(line: string): void;
  /** Keys that answer at once, without Enter, when typed on an empty line (approvals). */
  oneKey?: (key: string) => boolean;
}

/**
 * One interactive chat: owns the readline interface, the current agent and the queue of messages
 * typed for later. Input lines go, in order of precedence, to a pending question, to a slash
 * command, to the queue (while a turn runs) or to a new turn.
 */
class InteractiveChat {
  readonly #host: AgentHost;
  readonly #output: ChatOutput;
  readonly #palette: Palette;
  #approvalMode: ApprovalMode;
  #agent: Agent;
  #readline: ReadlineInterface | null = null;
  #input: (NodeJS.ReadableStream & { isTTY?: boolean }) | null = null;
  #outputStream: (NodeJS.WritableStream & { isTTY?: boolean }) | null = null;
  #terminal = false;
  readonly #history: InputHistory;
  /** Lines of a multi-line message typed so far (a trailing `\`, Alt-Enter or a paste). */
  #draft: string[] = [];
  /** Between the markers of a bracketed paste: Enter adds a line instead of sending. */
  #pasting = false;
  /** A picker or the editor owns the terminal; the chat's readline is closed meanwhile. */
  #suspended = false;
  /** Set by Shift-Tab just before readline runs its completer for the same key. */
  #shiftTab = false;
  /** A turn or an idle command is in progress; new text is queued meanwhile. */
  #working = false;
  #turn: { run: TurnRun; interruptRequested: boolean } | null = null;
  readonly #queue: string[] = [];
  /** Skill commands offered by Tab completion, read when the chat starts. */
  #skillCommands: string[] = [];
  readonly #questions: PendingQuestion[] = [];
  #exiting = false;
  #finish: () => void = () => {};
  readonly #finished = new Promise<void>((resolve) => {
    this.#finish = resolve;
  });

  constructor(host: AgentHost, agent: Agent, output: ChatOutput, yolo: boolean) {
    this.#host = host;
    this.#agent = agent;
    this.#output = output;
    this.#palette = output.palette;
    this.#approvalMode = yolo ? 'yolo' : 'manual';
    if (yolo) agent.setYolo(true);
    this.#history = new InputHistory(host.homeDir, agent.cwd);
  }

  /** The status line of the current agent, with the approval mode. */
  #statusLine(agent: Agent = this.#agent): string {
    const line = statusLineOf(agent, this.#palette, this.#approvalMode);
    return this.#terminal ? wrapAnsi(line, Math.max(20, this.#output.columns - 1)) : line;
  }

  /** The agent the chat currently talks to; slash commands may switch it. */
  get agent(): Agent {
    return this.#agent;
  }

  /** Reads lines until the user quits; resolves once the chat is over. `recap` follows the banner. */
  async run(
    input: NodeJS.ReadableStream & { isTTY?: boolean },
    outputStream: NodeJS.WritableStream & { isTTY?: boolean },
    recap: string[] = [],
  ): Promise<void> {
    const terminal = input.isTTY === true && outputStream.isTTY === true;
    this.#input = input;
    this.#outputStream = outputStream;
    this.#terminal = terminal;
    // Read before the first prompt so Tab offers the skills at once; a bad skill file is only logged.
    this.#skillCommands = await this.#host.skills
      .list({ cwd: this.#agent.cwd })
      .then((skills) => skills.map((skill) => skill.command))
      .catch(() => []);
    this.#openReadline();
    // On a terminal readline reports each key. This listener runs before readline's own, so it
    // sees paste markers, Shift-Tab and one-key approvals first.
    const onKeypress = (
      typed: string | undefined,
      key: { name?: string; ctrl?: boolean; meta?: boolean; shift?: boolean } | undefined,
    ) => this.#onKeypress(typed, key);
    if (terminal) {
      input.prependListener('keypress', onKeypress);
      outputStream.write(BRACKETED_PASTE_ON);
    }
    // Off a raw-mode terminal Ctrl-C arrives as a real signal.
    const onSignal = () => this.#onInterrupt();
    const onTerminate = () => this.#exit();
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onTerminate);
    process.on('SIGHUP', onTerminate);
    try {
      this.#printBanner();
      for (const line of recap) this.#output.line(line);
      this.#showPrompt();
      await this.#finished;
    } finally {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onTerminate);
      process.off('SIGHUP', onTerminate);
      input.off('keypress', onKeypress);
      if (terminal) outputStream.write(BRACKETED_PASTE_OFF);
      this.#suspended = true;
      this.#readline?.close();
      this.#output.stopSpinner();
      this.#output.endLine();
    }
  }

  /**
   * Creates the chat's readline on the input, with the project's persisted history. A picker or
   * the editor closes it and this opens it again afterwards: two readers of one terminal would both
   * act on every key.
   */
  #openReadline(): void {
    const input = this.#input;
    const outputStream = this.#outputStream;
    if (input === null || outputStream === null) return;
    const readline = createInterface({
      input,
      output: outputStream,
      terminal: this.#terminal,
      completer: (line: string) => this.#complete(line),
      // readline wants the newest entry first.
      history: [...this.#history.entries].reverse().filter((entry) => !entry.includes('\n')),
      historySize: 500,
      removeHistoryDuplicates: true,
    });
    this.#readline = readline;
    this.#suspended = false;
    readline.on('line', (line) => this.#onLine(line));
    // With a listener installed readline reports Ctrl-C here instead of closing itself.
    readline.on('SIGINT', () => this.#onInterrupt());
    readline.on('close', () => {
      if (this.#readline === readline) this.#readline = null;
      if (!this.#suspended) this.#exit();
    });
  }

  /**
   * Hands the terminal to `task` (a picker, the editor) with the chat's readline closed, then
   * opens it again and shows the prompt.
   */
  async #withTerminal<T>(task: () => Promise<T>): Promise<T> {
    this.#suspended = true;
    this.#output.stopSpinner();
    this.#output.endLine();
    this.#readline?.close();
    this.#readline = null;
    try {
      return await task();
    } finally {
      if (!this.#exiting) this.#openReadline();
    }
  }

  #printBanner(): void {
    const palette = this.#palette;
    const agent = this.#agent;
    // Word-wrapped on a terminal, so a narrow window does not cut the hints mid-word.
    const output = {
      line: (text: string) =>
        this.#output.line(this.#terminal ? wrapAnsi(text, Math.max(20, this.#output.columns - 1)) : text),
    };
    output.line(`${palette.bold(`Hermes ${VERSION}`)} ${palette.dim('interactive chat')}`);
    if (isDemoAgent(agent)) {
      output.line(
        palette.yellow(
          'No model is configured, so the offline demo model answers with a fixed script. For a real model set HERMES_MODEL (and the provider key) or run `hermes model set <provider:model>`.',
        ),
      );
    } else if (agent.model === null) {
      output.line(
        palette.yellow(
          'No model is configured: set HERMES_MODEL (and the provider key) or run `hermes model set <provider:model>`.',
        ),
      );
    }
    output.line(this.#statusLine());
    output.line(
      palette.dim('Type a message. /help lists commands (Tab completes), Ctrl-C interrupts, Ctrl-D or /exit quits.'),
    );
    if (this.#terminal)
      output.line(
        palette.dim(
          'Alt-Enter or a trailing \\ adds a line, /edit opens $EDITOR, @path attaches a file, Ctrl-R searches history, Shift-Tab switches the approval mode.',
        ),
      );
  }

  #complete(line: string): [string[], string] {
    if (this.#shiftTab) {
      // Shift-Tab switched the approval mode; it must not also complete.
      this.#shiftTab = false;
      return [[], line];
    }
    const mention = completeMention(line, this.#agent.cwd);
    if (mention !== null) return mention;
    if (line.startsWith('/mode ')) {
      const typed = line.slice('/mode '.length);
      return [APPROVAL_MODES.filter((mode) => mode.startsWith(typed)).map((mode) => `/mode ${mode}`), line];
    }
    if (!line.startsWith('/') || /\s/.test(line)) return [[], line];
    const names = new Set<string>([...LOCAL_COMMANDS, ...TERMINAL_COMMANDS]);
    for (const name of this.#skillCommands) names.add(name);
    for (const command of this.#host.commands.list()) {
      names.add(command.name);
      for (const alias of command.aliases ?? []) names.add(alias);
    }
    const typed = line.toLowerCase();
    const hits = [...names].map((name) => `/${name}`).filter((candidate) => candidate.startsWith(typed));
    return [hits.sort(), line];
  }

  #showPrompt(): void {
    const readline = this.#readline;
    if (readline === null || this.#exiting) return;
    const question = this.#questions[0];
    if (question !== undefined) {
      this.#output.stopSpinner();
      this.#output.endLine();
      readline.setPrompt(question.prompt);
    } else if (this.#working) {
      // While a turn streams the prompt stays empty: typed text is echoed and queued on Enter.
      readline.setPrompt('');
      return;
    } else if (this.#draft.length > 0) {
      // A multi-line message goes on: a continuation prompt until a line without a trailing \.
      if (this.#pasting) return;
      this.#output.endLine();
      readline.setPrompt(this.#palette.dim('… '));
    } else {
      this.#output.endLine();
      const mode = this.#approvalMode === 'yolo' ? this.#palette.yellow('yolo ') : '';
      readline.setPrompt(`${mode}${this.#palette.bold(this.#palette.cyan('› '))}`);
    }
    // `true` keeps what the user already typed on the line.
    readline.prompt(true);
    this.#output.assumeLineStart(false);
  }

  #onLine(line: string): void {
    // readline has echoed the line and moved to the next one.
    this.#output.assumeLineStart(true);
    if (this.#exiting) return;
    const question = this.#questions[0];
    if (question !== undefined) {
      question.answer(line);
      return;
    }
    if (this.#pasting) {
      // An Enter inside a paste is a line of the pasted text, not a send.
      this.#draft.push(line);
      return;
    }
    if (/(^|[^\\])\\$/.test(line)) {
      this.#draft.push(line.slice(0, -1));
      this.#showPrompt();
      return;
    }
    const multiLine = this.#draft.length > 0;
    const full = [...this.#draft, line].join('\n');
    this.#draft = [];
    this.#history.add(full);
    const text = multiLine ? full.replace(/^\s*\n|\s+$/g, '') : full.trim();
    if (text === '') {
      this.#showPrompt();
      return;
    }
    const parsed = multiLine ? null : this.#host.commands.parse(text);
    if (parsed !== null && LOCAL_COMMANDS.includes(parsed.name)) {
      this.#exit();
      return;
    }
    if (parsed !== null && TERMINAL_COMMANDS.includes(parsed.name)) {
      if (parsed.name === 'mode') this.#setMode(parsed.args);
      else if (this.#working) this.#output.line(this.#palette.yellow('/edit waits until the turn ends.'));
      else this.#perform(() => this.#edit());
      return;
    }
    const picker = parsed === null || parsed.args !== '' || !this.#terminal ? null : this.#pickerFor(parsed.name);
    if (picker !== null) {
      if (this.#working) this.#output.line(this.#palette.yellow(`/${parsed?.name} waits until the turn ends.`));
      else this.#perform(picker);
      return;
    }
    if (parsed !== null) {
      // A command typed during a turn runs at once; the registry refuses those not allowed while busy.
      if (this.#working) void this.#command(text);
      else this.#perform(() => this.#command(text));
      return;
    }
    if (this.#working) {
      this.#enqueue(text);
      return;
    }
    this.#perform(() => this.#turnFromText(text));
  }

  #onKeypress(
    typed: string | undefined,
    key: { name?: string; ctrl?: boolean; meta?: boolean; shift?: boolean } | undefined,
  ): void {
    if (this.#suspended) return;
    const readline = this.#readline;
    if (key?.name === 'paste-start') {
      this.#pasting = true;
      return;
    }
    if (key?.name === 'paste-end') {
      this.#pasting = false;
      // The pasted lines wait on continuation prompts; Enter sends them with the last one.
      if (this.#draft.length > 0) {
        readline?.setPrompt(this.#palette.dim('… '));
        readline?.prompt(true);
      }
      return;
    }
    if (this.#pasting || readline === null) return;
    if (key?.name === 'tab' && key.shift) {
      this.#shiftTab = true;
      const next = APPROVAL_MODES[(APPROVAL_MODES.indexOf(this.#approvalMode) + 1) % APPROVAL_MODES.length];
      this.#setMode(next ?? 'manual', true);
      return;
    }
    if (key?.name === 'return' && key.meta) {
      // Alt-Enter: the line so far becomes a line of a multi-line message.
      this.#draft.push(readline.line);
      readline.write(null, { ctrl: true, name: 'e' });
      readline.write(null, { ctrl: true, name: 'u' });
      this.#output.write('\n');
      this.#output.assumeLineStart(true);
      readline.setPrompt(this.#palette.dim('… '));
      readline.prompt(true);
      return;
    }
    if (key?.ctrl && key.name === 'r' && this.#questions.length === 0 && !this.#working) {
      this.#perform(() => this.#searchHistory());
      return;
    }
    if (key?.ctrl && key.name === 'v' && readline.line === '') {
      this.#aboveInput(
        this.#palette.dim(
          'Nothing to paste as text: terminals do not pass images to programs. Save the image and mention it as @path (PNG, JPEG, GIF, WebP) to attach it.',
        ),
      );
      return;
    }
    const question = this.#questions[0];
    if (question?.oneKey === undefined || typed === undefined || key?.ctrl || key?.meta) return;
    // readline puts the key on the line after this listener: act when it will be the whole line.
    if (readline.line !== '' || !question.oneKey(typed)) return;
    setImmediate(() => {
      if (this.#readline === readline && readline.line === typed) readline.write(null, { name: 'return' });
    });
  }

  /** Prints a notice above the input line and redraws the prompt with what was typed. */
  #aboveInput(text: string): void {
    const readline = this.#readline;
    if (this.#working || readline === null) {
      this.#output.line(text);
      return;
    }
    this.#output.write('\r\x1b[K');
    this.#output.assumeLineStart(true);
    this.#output.line(text);
    this.#showPrompt();
  }

  /** `/mode [manual|yolo]` and Shift-Tab: how dangerous commands are approved from now on. */
  #setMode(args: string, fromKey = false): void {
    const wanted = args.trim().toLowerCase();
    if (wanted === '') {
      this.#output.line(
        `Approval mode: ${this.#approvalMode}. Usage: /mode manual|yolo (Shift-Tab switches). manual asks before dangerous commands; yolo runs them (the hard blocklist still applies).`,
      );
      this.#showPrompt();
      return;
    }
    if (!APPROVAL_MODES.includes(wanted as ApprovalMode)) {
      this.#output.line(this.#palette.yellow(`Unknown mode '${wanted}'. Use /mode manual or /mode yolo.`));
      this.#showPrompt();
      return;
    }
    this.#approvalMode = wanted as ApprovalMode;
    this.#agent.setYolo(this.#approvalMode === 'yolo');
    const notice =
      this.#approvalMode === 'yolo'
        ? this.#palette.yellow('Approval mode: yolo (dangerous commands run without asking)')
        : this.#palette.dim('Approval mode: manual (dangerous commands ask first)');
    if (fromKey) this.#aboveInput(notice);
    else {
      this.#output.line(notice);
      this.#showPrompt();
    }
  }

  /** The interactive picker that replaces a command's printed list on a terminal, if it has one. */
  #pickerFor(typedName: string): (() => Promise<void>) | null {
    const command = this.#host.commands
      .list()
      .find((candidate) => candidate.name === typedName || (candidate.aliases ?? []).includes(typedName));
    if (command?.name === 'resume') return () => this.#pickSession();
    if (command?.name === 'model') return () => this.#pickModel();
    return null;
  }

  async #pickSession(): Promise<void> {
    const page = await this.#host.store.listSessions({ limit: 50 });
    const choices: PickerChoice<string>[] = page.items
      .filter((session) => session.id !== this.#agent.sessionId)
      .map((session) => ({
        label: `${session.title ?? '(untitled)'}  ${this.#palette.dim(new Date(session.lastActivityAt).toISOString().slice(0, 16).replace('T', ' '))}`,
        value: session.id,
        hint: `${session.id} · ${session.messageCount} messages · ${session.preview}`.slice(0, 200),
      }));
    if (choices.length === 0) {
      this.#output.line('No other sessions yet.');
      return;
    }
    const picked = await this.#pick('Resume which session? (type to filter, Esc cancels)', choices);
    if (picked !== null) await this.#command(`/resume ${picked}`);
  }

  async #pickModel(): Promise<void> {
    const current = this.#agent.model?.spec ?? null;
    const models = this.#host.listModels();
    if (models.length === 0) {
      // Nothing to pick from: the command's own text says what is current and how to switch.
      await this.#command('/model');
      return;
    }
    const choices: PickerChoice<string>[] = models.map((model) => ({
      label: `${model.spec}${model.spec === current ? ' (current)' : ''}${model.configured ? '' : ' (not configured)'}`,
      value: model.spec,
    }));
    const picked = await this.#pick(`Model (now ${current ?? 'none'}; type to filter, Esc cancels)`, choices);
    if (picked !== null) await this.#command(`/model ${picked}`);
  }

  /** Ctrl-R: picks an entry of the project's history and puts it on the input line. */
  async #searchHistory(): Promise<void> {
    const seen = new Set<string>();
    const choices: PickerChoice<string>[] = [];
    for (const entry of [...this.#history.entries].reverse()) {
      if (seen.has(entry)) continue;
      seen.add(entry);
      choices.push({ label: entry.replaceAll('\n', ' ⏎ ').slice(0, 200), value: entry });
    }
    if (choices.length === 0) {
      this.#output.line(this.#palette.dim('No history yet in this project.'));
      return;
    }
    const picked = await this.#pick('History (type to search, Enter puts it on the line)', choices);
    if (picked === null) return;
    const lines = picked.split('\n');
    const last = lines.pop() ?? '';
    // A multi-line entry comes back as a draft: its first lines above, the last on the line.
    this.#draft = lines;
    for (const line of lines) this.#output.line(this.#palette.dim(`… ${line}`));
    setImmediate(() => this.#readline?.write(last));
  }

  async #pick<T>(message: string, choices: PickerChoice<T>[]): Promise<T | null> {
    const input = this.#input;
    const output = this.#outputStream;
    if (input === null || output === null) return null;
    return this.#withTerminal(() => pick(message, choices, { input, output }));
  }

  /** `/edit`: writes the message in $VISUAL or $EDITOR, then sends it. */
  async #edit(): Promise<void> {
    const editor = process.env.VISUAL || process.env.EDITOR || 'vi';
    const folder = mkdtempSync(join(tmpdir(), 'hermes-edit-'));
    const file = join(folder, 'message.md');
    writeFileSync(file, this.#draft.join('\n'));
    this.#draft = [];
    try {
      const status = await this.#withTerminal(async () => {
        this.#input?.pause();
        // The editor gets the terminal as it is; a shell runs it so EDITOR may carry arguments.
        const result = spawnSync(`${editor} "$HERMES_EDIT_FILE"`, {
          shell: true,
          stdio: 'inherit',
          env: { ...process.env, HERMES_EDIT_FILE: file },
        });
        return result.error ? result.error.message : result.status;
      });
      if (status !== 0) {
        this.#output.line(
          this.#palette.yellow(`The editor (${editor}) exited with ${String(status)}; nothing was sent.`),
        );
        return;
      }
      const text = readFileSync(file, 'utf8').trim();
      if (text === '') {
        this.#output.line(this.#palette.dim('The message is empty; nothing was sent.'));
        return;
      }
      this.#history.add(text);
      for (const line of text.split('\n')) this.#output.line(`${this.#palette.dim('│')} ${line}`);
      await this.#turnFromText(text);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  }

  #enqueue(text: string): void {
    this.#queue.push(text);
    this.#output.line(this.#palette.dim(`queued for after this turn: ${text}`));
  }

  /** Runs one piece of work, then the queued messages, then shows the prompt again. */
  #perform(task: () => Promise<void>): void {
    this.#working = true;
    this.#showPrompt();
    void (async () => {
      try {
        await task();
        for (let next = this.#queue.shift(); next !== undefined && !this.#exiting; next = this.#queue.shift()) {
          this.#output.line(`${this.#palette.bold(this.#palette.cyan('› '))}${next}`);
          await this.#turnFromText(next);
        }
      } catch (error) {
        this.#output.line(this.#palette.red(describeStartupError(error)));
      } finally {
        this.#working = false;
        this.#showPrompt();
      }
    })();
  }

  async #turnFromText(text: string): Promise<void> {
    // A queued `/<skill> <request>` runs as the skill, like one typed at an idle prompt.
    const skill = text.startsWith('/') ? await this.#host.skills.expand(text, { cwd: this.#agent.cwd }) : null;
    if (skill) return this.#renderTurn(this.#agent.runTurn(skill.input));
    const attached = attachMentions(text, this.#agent.cwd);
    for (const mention of attached.mentions) {
      if (mention.skipped !== undefined)
        this.#output.line(this.#palette.yellow(`not attached: ${mention.written} (${mention.skipped})`));
      else if (mention.image !== undefined)
        this.#output.line(this.#palette.dim(`attached ${mention.written} (image, ${mention.image})`));
      else
        this.#output.line(
          this.#palette.dim(
            `attached ${mention.written} (${mention.lines} lines${mention.truncated ? ', cut to its first 100 kB' : ''})`,
          ),
        );
    }
    const input =
      attached.images.length > 0 ? { text: attached.text, content: attached.images } : { text: attached.text };
    return this.#renderTurn(this.#agent.runTurn(input));
  }

  async #renderTurn(run: TurnRun): Promise<void> {
    const turn = { run, interruptRequested: false };
    this.#turn = turn;
    const renderer = new TurnRenderer(this.#output);
    try {
      for await (const event of run) renderer.render(event);
      const result = await run.result;
      renderer.finish(result);
      if (!this.#exiting) this.#output.line(this.#statusLine());
    } finally {
      this.#output.stopSpinner();
      if (this.#turn === turn) this.#turn = null;
    }
  }

  async #command(line: string): Promise<void> {
    const palette = this.#palette;
    let result: CommandResult;
    try {
      const skill = await this.#host.skills.expand(line, { cwd: this.#agent.cwd });
      if (skill) {
        // A skill is a turn: during another turn it waits in the queue.
        if (this.#turn !== null) this.#enqueue(line);
        else await this.#renderTurn(this.#agent.runTurn(skill.input));
        return;
      }
      result = await this.#host.commands.execute(this.#agent, line);
    } catch (error) {
      this.#output.line(palette.red(describeStartupError(error)));
      return;
    }
    // Command output is Markdown (the same text IDEs and the gateway show): render it for the terminal.
    const markdown = (text: string) => renderMarkdown(text, palette);
    switch (result.kind) {
      case 'text':
        if (result.text) this.#output.line(markdown(result.text));
        if (this.#host.commands.parse(line)?.name === 'help') await this.#skillHelp();
        return;
      case 'error':
        this.#output.line(palette.red(markdown(result.text ?? 'The command failed.')));
        return;
      case 'session':
        if (result.text) this.#output.line(markdown(result.text));
        if (result.agent) await this.#switchTo(result.agent);
        return;
      case 'turn':
        if (result.text) this.#output.line(markdown(result.text));
        if (result.turn) await this.#renderTurn(result.turn);
        return;
      case 'ui':
        this.#uiCommand(result.ui?.name ?? '', result.ui?.args ?? '');
        return;
    }
  }

  /** Lists the skill commands after `/help`. */
  async #skillHelp(): Promise<void> {
    const skills = await this.#host.skills.list({ cwd: this.#agent.cwd }).catch(() => []);
    if (skills.length === 0) return;
    const lines = skills.map((skill) => `- \`/${skill.command} [request]\`: ${skill.description}`);
    this.#output.line(`Skills:\n${lines.join('\n')}`);
  }

  #uiCommand(name: string, args: string): void {
    const palette = this.#palette;
    if (name !== 'queue') {
      this.#output.line(palette.yellow(`/${name} is not available in the terminal chat.`));
      return;
    }
    if (args === '') {
      this.#output.line(
        this.#queue.length === 0
          ? 'The queue is empty. Usage: /queue <text>'
          : this.#queue.map((text, index) => `${index + 1}. ${text}`).join('\n'),
      );
      return;
    }
    // Without a running turn the queued text is simply the next turn: the work loop that ran this
    // command sends it as soon as the command returns.
    if (this.#turn === null) this.#queue.push(args);
    else this.#enqueue(args);
  }

  async #switchTo(next: Agent): Promise<void> {
    const previous = this.#agent;
    if (next === previous) return;
    this.#agent = next;
    next.setYolo(this.#approvalMode === 'yolo');
    // The terminal drives one session at a time; the one left behind is ended so it can be resumed later.
    await previous.close({ endReason: 'switched' });
    // A session with a past (/resume, /branch) gets the last exchange, as `hermes --resume` shows it
    // (the command's own text already said which session this is).
    const history = await next.history();
    if (history.length > 0)
      for (const line of resumeRecap(next, history, this.#palette).slice(1)) this.#output.line(line);
    this.#output.line(this.#statusLine(next));
  }

  #onInterrupt(): void {
    const readline = this.#readline;
    if (readline !== null && readline.line !== '' && !this.#exiting) {
      // Ctrl-C with text on the line clears the line; Ctrl-C on an empty line goes on below.
      readline.write(null, { ctrl: true, name: 'e' });
      readline.write(null, { ctrl: true, name: 'u' });
      return;
    }
    const turn = this.#turn;
    if (turn !== null && !turn.interruptRequested && !this.#exiting) {
      turn.interruptRequested = true;
      this.#agent.interrupt({ issuer: 'user', reason: 'Ctrl-C' });
      this.#output.line(this.#palette.dim('Interrupting… (press Ctrl-C again to quit)'));
      return;
    }
    this.#exit();
  }

  #exit(): void {
    if (this.#exiting) return;
    this.#exiting = true;
    if (this.#turn !== null) this.#agent.interrupt({ issuer: 'user', reason: 'exit' });
    this.#finish();
  }

  /** Asks on the input line until `parse` accepts an answer; rejects when `signal` aborts. */
  #ask<T>(
    prompt: string,
    parse: (line: string) => ParsedAnswer<T>,
    signal: AbortSignal,
    oneKey?: (key: string) => boolean,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (signal.aborted) {
        reject(signal.reason);
        return;
      }
      const remove = () => {
        const index = this.#questions.indexOf(question);
        if (index >= 0) this.#questions.splice(index, 1);
        signal.removeEventListener('abort', onAbort);
      };
      const question: PendingQuestion = {
        prompt,
        ...(oneKey === undefined ? {} : { oneKey }),
        answer: (line) => {
          const parsed = parse(line);
          if (!parsed.ok) {
            this.#output.line(this.#palette.yellow(parsed.hint));
            this.#showPrompt();
            return;
          }
          remove();
          resolve(parsed.value);
          this.#showPrompt();
        },
      };
      const onAbort = () => {
        const wasShown = this.#questions[0] === question;
        remove();
        if (wasShown) {
          this.#output.endLine();
          this.#output.line(this.#palette.dim('(question withdrawn)'));
        }
        reject(signal.reason);
        this.#showPrompt();
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.#questions.push(question);
      if (this.#questions[0] === question) this.#showPrompt();
    });
  }

  /** The approve callback: asks on the input line. */
  async approve(request: ApprovalRequest, signal: AbortSignal): Promise<ApprovalDecision> {
    const palette = this.#palette;
    this.#output.stopSpinner();
    const who = request.subagent ? ` (subagent: ${request.subagent.goal})` : '';
    const why = request.descriptions.length > 0 ? `: ${request.descriptions.join('; ')}` : '';
    this.#output.line(palette.yellow(`⚠ Approval needed${who}${why}`));
    this.#output.line(`  ${palette.bold(`$ ${request.command}`)}`);
    this.#output.line(palette.dim(`  in ${request.cwd}`));
    const always = alwaysScopeText(request);
    if (always !== null) this.#output.line(palette.dim(`  ${always}`));
    const prompt = `${palette.yellow('Run it?')} ${approvalChoicesText(request.choices)} › `;
    const choice = await this.#ask(
      prompt,
      (line) => parseApprovalAnswer(line, request.choices),
      signal,
      (key) => parseApprovalAnswer(key, request.choices).ok && key.trim() !== '',
    );
    this.#output.line(choice === 'deny' ? palette.red('  denied') : palette.green(`  approved (${choice})`));
    return choice;
  }

  /** The clarify callback: asks each question on the input line. */
  async clarify(
    request: ClarifyRequest,
    signal: AbortSignal,
  ): Promise<ClarifyAnswer | { answers: Record<string, ClarifyAnswer> }> {
    this.#output.stopSpinner();
    if (request.questions && request.questions.length > 0) {
      const answers: Record<string, ClarifyAnswer> = {};
      for (const question of request.questions) {
        answers[question.id] = await this.#askOne(
          question.question,
          question.choices ?? [],
          question.multiSelect ?? false,
          signal,
        );
      }
      return { answers };
    }
    return this.#askOne(request.question, request.choices, request.multiSelect, signal);
  }

  #askOne(question: string, choices: string[], multiSelect: boolean, signal: AbortSignal): Promise<ClarifyAnswer> {
    const palette = this.#palette;
    this.#output.line(`${palette.magenta('?')} ${palette.bold(question)}`);
    choices.forEach((choice, index) => {
      this.#output.line(`  ${palette.cyan(String(index + 1))}. ${choice}`);
    });
    const how =
      choices.length === 0
        ? 'your answer'
        : multiSelect
          ? 'numbers (e.g. 1,3) or your own answer'
          : 'a number or your own answer';
    const prompt = `${palette.magenta('answer')} ${palette.dim(`(${how}; Enter skips)`)} › `;
    return this.#ask(prompt, (line) => parseClarifyAnswer(line, choices, multiSelect), signal);
  }
}

/** Characters of each message shown when a session is resumed. */
const RECAP_CHARS = 300;

function clip(text: string): string {
  const flat = text.trim().replace(/\s+/g, ' ');
  return flat.length > RECAP_CHARS ? `${flat.slice(0, RECAP_CHARS - 1)}…` : flat;
}

/** Where a resumed conversation stands: its title, its size and the last exchange, so the user can pick up. */
function resumeRecap(agent: Agent, history: StoredMessage[], palette: Palette): string[] {
  const title = agent.title();
  const lines = [palette.dim(`Resumed ${title ? `"${title}" ` : ''}(${agent.sessionId}, ${history.length} messages).`)];
  const lastUser = history.findLast((message) => message.role === 'user' && message.content.trim() !== '');
  const lastAnswer = history.findLast((message) => message.role === 'assistant' && message.content.trim() !== '');
  if (lastUser) lines.push(`${palette.dim('you:')} ${clip(lastUser.content)}`);
  if (lastAnswer && lastAnswer.rowId > (lastUser?.rowId ?? -1))
    lines.push(`${palette.dim('hermes:')} ${clip(lastAnswer.content)}`);
  return lines;
}

/**
 * Runs the interactive terminal chat of `hermes` (the default when stdin is a terminal and no -q
 * is given) until the user quits. Returns the process exit code: 0 after a normal exit, 1 when the
 * host or the session could not be opened.
 */
export async function runInteractiveChat(options: InteractiveChatOptions = {}): Promise<number> {
  const input = options.input ?? process.stdin;
  const outputStream = options.output ?? process.stdout;
  const env = options.env ?? process.env;
  const palette = createPalette(shouldUseColor(outputStream, env));
  const output = new ChatOutput(outputStream, palette, outputStream.isTTY === true);
  // Loaded while the host opens; only colors need it.
  const highlighter = palette.enabled ? loadHighlighter().catch(() => {}) : Promise.resolve();
  // The host needs the callbacks before the chat exists, so they forward to it once it does.
  let chat: InteractiveChat | undefined;
  const callbacks: HostCallbacks = {
    approve: (request, signal) => chat?.approve(request, signal) ?? Promise.resolve('deny'),
    clarify: (request, signal) => chat?.clarify(request, signal) ?? Promise.resolve(null),
  };
  let host: AgentHost;
  try {
    host = await createCliHost({ callbacks });
  } catch (error) {
    process.stderr.write(`${describeStartupError(error)}\n`);
    return 1;
  }
  try {
    const agent = await openSession(host, { ...options, demoWhenUnconfigured: true });
    chat = new InteractiveChat(host, agent, output, options.yolo === true);
    await highlighter;
    const recap = options.resume || options.continue ? resumeRecap(agent, await agent.history(), palette) : [];
    await chat.run(input, outputStream, recap);
    await chat.agent.close({ endReason: 'cli_exit' });
    return 0;
  } catch (error) {
    output.stopSpinner();
    process.stderr.write(`${describeStartupError(error)}\n`);
    return 1;
  } finally {
    await host.close();
  }
}
