import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import type {
  Agent,
  AgentHost,
  ApprovalDecision,
  ApprovalRequest,
  HostCallbacks,
  TurnResult,
  TurnRun,
} from '@hermes/core';
import { alwaysScopeText, approvalChoicesText, parseApprovalAnswer } from '../chat/answers.js';
import { createCliHost, describeStartupError } from '../host.js';
import { openSession } from '../session-choice.js';

/** What `-q` prints on stdout: the answer, one JSON result, or one JSON object per event. */
export type OutputFormat = 'text' | 'json' | 'stream-json';

/** The values `--output-format` accepts. */
export const OUTPUT_FORMATS: readonly OutputFormat[] = ['text', 'json', 'stream-json'];

/** Options of a one-shot run (`hermes -q`). */
export interface OneShotOptions {
  query: string;
  /** Default 'text'. */
  outputFormat?: OutputFormat;
  /** Already read prompt text for `query: '-'` (piped into `hermes` without -q). */
  stdinText?: string;
  model?: string;
  resume?: string;
  continue?: boolean;
  yolo?: boolean;
  cwd?: string;
  /** Where approvals are asked; default process.stdin (asked only when it is a terminal). */
  input?: NodeJS.ReadableStream & { isTTY?: boolean; setRawMode?: (raw: boolean) => unknown };
  /** Where approval questions and progress go; default process.stderr. */
  errors?: NodeJS.WritableStream & { isTTY?: boolean };
}

/** What `-q` prints instead of the core's generic notice when a command was denied for lack of a terminal. */
export const NO_TERMINAL_APPROVAL_TEXT =
  'hermes: a dangerous command was denied: -q asks for approval only at a terminal, and stdin is not one. ' +
  'Re-run with --yolo to allow dangerous commands, or allow them in config.yaml (command_allowlist entries `- command: <exact command>`, approvals.mode).';

/**
 * The approve callback of `-q` at a terminal: shows the command on stderr and reads one key (or a
 * word and Enter) from the terminal; Enter alone or Ctrl-C denies.
 */
function terminalApprover(
  input: NonNullable<OneShotOptions['input']>,
  errors: NonNullable<OneShotOptions['errors']>,
): NonNullable<HostCallbacks['approve']> {
  return (request: ApprovalRequest, signal: AbortSignal) =>
    new Promise<ApprovalDecision>((resolve) => {
      const why = request.descriptions.length > 0 ? `: ${request.descriptions.join('; ')}` : '';
      errors.write(`⚠ Approval needed${why}\n  $ ${request.command}\n  in ${request.cwd}\n`);
      const always = alwaysScopeText(request);
      if (always !== null) errors.write(`  ${always}\n`);
      const readline = createInterface({ input, output: errors, terminal: true });
      let settled = false;
      const finish = (choice: ApprovalDecision) => {
        if (settled) return;
        settled = true;
        input.off('keypress', onKeypress);
        signal.removeEventListener('abort', onAbort);
        readline.close();
        // readline leaves a terminal stdin flowing; pause it so the process can end after the turn.
        input.pause();
        errors.write(choice === 'deny' ? '  denied\n' : `  approved (${choice})\n`);
        resolve(choice);
      };
      const ask = () => {
        readline.setPrompt(`Run it? ${approvalChoicesText(request.choices)} › `);
        readline.prompt();
      };
      // One key answers: readline has put it on the line already, so Enter is sent for it.
      const onKeypress = (typed: string | undefined, key: { ctrl?: boolean; meta?: boolean } | undefined) => {
        if (typed === undefined || key?.ctrl || key?.meta || readline.line !== typed || typed.trim() === '') return;
        if (parseApprovalAnswer(typed, request.choices).ok) readline.write(null, { name: 'return' });
      };
      const onAbort = () => finish('deny');
      input.on('keypress', onKeypress);
      signal.addEventListener('abort', onAbort, { once: true });
      readline.on('line', (line) => {
        const parsed = parseApprovalAnswer(line, request.choices);
        if (parsed.ok) finish(parsed.value);
        else {
          errors.write(`${parsed.hint}\n`);
          ask();
        }
      });
      readline.on('SIGINT', () => finish('deny'));
      readline.on('close', () => finish('deny'));
      ask();
    });
}

/** Error objects (which JSON.stringify turns into `{}`) as their name and message. */
function jsonSafe(_key: string, value: unknown): unknown {
  return value instanceof Error ? { name: value.name, message: value.message } : value;
}

/** The skill commands, listed after `/help` as the interactive chat lists them; empty when there are none. */
async function skillHelp(host: AgentHost, cwd: string): Promise<string> {
  const skills = await host.skills.list({ cwd }).catch(() => []);
  if (skills.length === 0) return '';
  const lines = skills.map((skill) => `- \`/${skill.command} [request]\`: ${skill.description}`);
  return `\n\nSkills:\n${lines.join('\n')}`;
}

/** Exit codes of `hermes -q`: completed, failed, cancelled (as after SIGINT). */
export function exitCodeFor(result: TurnResult): number {
  if (result.outcome === 'completed') return 0;
  if (result.outcome === 'cancelled') return 130;
  return 1;
}

/**
 * Runs one prompt and prints the final answer on stdout; progress (tool calls, retries, notices)
 * goes to stderr. A dangerous command is asked about at a terminal (stdin and stderr are TTYs and
 * the prompt was not read from stdin); elsewhere it is denied with a hint about `--yolo`.
 */
export async function runOneShot(options: OneShotOptions): Promise<number> {
  const query = options.query === '-' ? (options.stdinText ?? readFileSync(0, 'utf8')) : options.query;
  const format = options.outputFormat ?? 'text';
  // In the JSON formats stdout carries JSON only, one object per line; progress text stays off stderr.
  const progress = (text: string) => {
    if (format === 'text') process.stderr.write(text);
  };
  const json = (value: unknown) => process.stdout.write(`${JSON.stringify(value, jsonSafe)}\n`);
  if (query.trim() === '') {
    process.stderr.write('hermes: the prompt is empty. Pass text to -q, or - to read it from stdin.\n');
    return 2;
  }
  const input = options.input ?? process.stdin;
  const errors = options.errors ?? process.stderr;
  const atTerminal = input.isTTY === true && errors.isTTY === true && options.query !== '-';
  let host: AgentHost;
  try {
    host = await createCliHost(atTerminal ? { callbacks: { approve: terminalApprover(input, errors) } } : {});
  } catch (error) {
    process.stderr.write(`${describeStartupError(error)}\n`);
    return 1;
  }
  let exitCode = 1;
  const onSignal = () => agent?.interrupt({ issuer: 'user', reason: 'Ctrl-C' });
  let agent: Agent | undefined;
  try {
    agent = await openSession(host, options);
    if (options.yolo) agent.setYolo(true);
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    const printTurn = async (run: TurnRun): Promise<number> => {
      for await (const event of run) {
        if (format === 'stream-json') json(event);
        if (event.type === 'tool.start') progress(`→ ${event.title}\n`);
        else if (event.type === 'tool.end' && event.status !== 'completed')
          progress(`  ${event.name}: ${event.status}\n`);
        else if (event.type === 'retry')
          progress(`retrying (${event.reason}) in ${Math.round(event.delayMs / 1000)} s…\n`);
        else if (event.type === 'notice')
          progress(`${event.key === 'no_approval_callback' ? NO_TERMINAL_APPROVAL_TEXT : event.text}\n`);
      }
      const result = await run.result;
      if (format !== 'text') json({ type: 'result', ...result });
      else if (result.finalText !== '')
        process.stdout.write(result.finalText.endsWith('\n') ? result.finalText : `${result.finalText}\n`);
      if (result.outcome === 'failed') process.stderr.write(`hermes: ${result.error?.message ?? result.exitReason}\n`);
      if (result.outcome === 'cancelled') process.stderr.write('hermes: cancelled.\n');
      return exitCodeFor(result);
    };
    // `hermes -q "/<skill> <request>"` runs the skill, and `hermes -q "/help"` the built-in command, as the
    // interactive chat does; any other text (a path such as `/etc/hosts …` included) is the prompt.
    const skill = await host.skills.expand(query, { cwd: agent.cwd });
    const command = skill ? null : host.commands.parse(query);
    const definition = command ? host.commands.find(command.name) : undefined;
    if (command && definition) {
      const outcome = await host.commands.execute(agent, query);
      if (outcome.kind === 'turn' && outcome.turn) {
        if (outcome.text) progress(`${outcome.text}\n`);
        exitCode = await printTurn(outcome.turn);
      } else if (outcome.kind === 'ui') {
        process.stderr.write(`hermes: /${definition.name} works in the interactive chat only (run \`hermes\`).\n`);
        exitCode = 2;
      } else {
        let text = outcome.text ?? '';
        if (definition.name === 'help') text += await skillHelp(host, agent.cwd);
        if (format !== 'text')
          json({ type: 'command', command: definition.name, kind: outcome.kind, text, data: outcome.data ?? null });
        else if (outcome.kind === 'error') process.stderr.write(`hermes: ${text || 'the command failed.'}\n`);
        else if (text !== '') process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
        exitCode = outcome.kind === 'error' ? 1 : 0;
      }
    } else {
      exitCode = await printTurn(agent.runTurn(skill?.input ?? { text: query }));
    }
  } catch (error) {
    process.stderr.write(`${describeStartupError(error)}\n`);
    exitCode = 1;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await host.close();
  }
  return exitCode;
}
