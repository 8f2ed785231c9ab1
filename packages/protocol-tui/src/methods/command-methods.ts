import { spawn } from 'node:child_process';
import type { LiveSession } from '../live-session.js';
import { isUserOriginated } from '../projection.js';
import { ErrorCode, RpcError } from '../wire/index.js';
import { configSet } from './config-methods.js';
import { fail, type MethodContext, requireSession, stringParam } from './context.js';
import { enqueueInput, REMOTE_UNREACHABLE } from './prompt-methods.js';
import { cutBefore } from './rewind.js';
import { sessionCompress, sessionUndo } from './session-methods.js';
import { isSkillCommand, skillCatalog, skillDirective, skillScope } from './skill-methods.js';

const CLIENT_COMMANDS: [string, string][] = [
  ['/density', 'Change the display density'],
  ['/logs', 'Show gateway logs'],
  ['/mouse', 'Toggle mouse support'],
  ['/sessions', 'Browse sessions'],
];

/** `commands.catalog` (§4.8). */
export async function commandsCatalog(context: MethodContext) {
  try {
    const commands = context.gateway.host.commands
      .list()
      .filter((command) => command.scope === 'core' || command.scope === 'ui');
    const pairs: [string, string][] = commands.map((command) => [`/${command.name}`, command.description]);
    pairs.push(...CLIENT_COMMANDS);
    const quick = quickCommands(context);
    for (const name of Object.keys(quick)) pairs.push([`/${name}`, 'quick command']);
    const skills = await skillCatalog(context);
    pairs.push(...skills.pairs);
    pairs.sort((left, right) => left[0].localeCompare(right[0]));
    const canon: Record<string, string> = {};
    const commandModes: Record<string, Record<string, string>> = {};
    for (const command of commands) {
      canon[`/${command.name.toLowerCase()}`] = `/${command.name}`;
      for (const alias of command.aliases ?? []) canon[`/${alias.toLowerCase()}`] = `/${command.name}`;
      commandModes[`/${command.name}`] = { argument_mode: command.argsHint ? 'optional' : 'none' };
    }
    for (const [name] of skills.pairs) commandModes[name] = { argument_mode: 'optional' };
    return {
      pairs,
      sub: {},
      canon,
      commands: commandModes,
      categories: [
        { name: 'Commands', pairs: pairs.filter((pair) => !skills.skills[pair[0]]) },
        ...(skills.pairs.length > 0 ? [{ name: 'Skills', pairs: skills.pairs }] : []),
      ],
      skills: skills.skills,
      skill_count: skills.skill_count,
      ...(skills.warning ? { warning: skills.warning } : {}),
    };
  } catch (error) {
    fail(ErrorCode.catalogFailed, `command catalog failed: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** `command.resolve` (§4.8). */
export async function commandResolve(context: MethodContext) {
  const name = (stringParam(context.params, 'name') ?? '').replace(/^\//, '').toLowerCase();
  const command = context.gateway.host.commands.find(name);
  if (!command) {
    const skill = await context.gateway.host.skills.find(name, skillScope(context));
    if (skill) return { canonical: `/${skill.command}`, description: skill.description, category: 'skill' };
    fail(ErrorCode.unknownCommand, `unknown command: ${name}`);
  }
  return { canonical: `/${command.name}`, description: command.description, category: command.scope };
}

function quickCommands(context: MethodContext): Record<string, { type?: string; command?: string; target?: string }> {
  const value = context.gateway.host.configSection('quick_commands');
  return typeof value === 'object' && value !== null ? (value as Record<string, { type?: string }>) : {};
}

const BUILTINS = new Set(['queue', 'q', 'steer', 'retry', 'undo', 'compress', 'compact', 'model']);

/**
 * The command named by `command.dispatch` params: `name` + `arg` (the TUI's form), or one
 * `command` line such as `"/model openai:gpt-4o"` (the form other clients send).
 */
function dispatchLine(params: Record<string, unknown>): { name: string; arg: string } {
  const whole = stringParam(params, 'command');
  const rawName = stringParam(params, 'name');
  if (whole !== undefined && rawName === undefined) {
    const trimmed = whole.trim();
    const space = trimmed.search(/\s/);
    const head = space === -1 ? trimmed : trimmed.slice(0, space);
    const tail = space === -1 ? '' : trimmed.slice(space + 1).trim();
    return { name: head.replace(/^\//, '').toLowerCase(), arg: stringParam(params, 'arg') ?? tail };
  }
  return { name: (rawName ?? '').replace(/^\//, '').trim().toLowerCase(), arg: stringParam(params, 'arg') ?? '' };
}

/** `command.dispatch` (§4.8). */
export async function commandDispatch(context: MethodContext): Promise<Record<string, unknown>> {
  const line = dispatchLine(context.params);
  const name = line.name;
  const arg = line.arg;
  const quick = quickCommands(context)[name];
  const sessionFor = (): LiveSession => {
    const id = stringParam(context.params, 'session_id');
    const session = id ? context.gateway.sessions.get(id) : undefined;
    if (!session) fail(ErrorCode.sessionNotFound, 'no active session');
    return session;
  };
  if (quick) {
    if (quick.type === 'alias' && quick.target)
      return { type: 'alias', target: arg ? `${quick.target} ${arg}` : quick.target };
    if (quick.command) {
      const id = stringParam(context.params, 'session_id');
      const cwd = (id ? context.gateway.sessions.get(id)?.agent.cwd : undefined) ?? process.cwd();
      const { code, output } = await runShell(arg ? `${quick.command} ${arg}` : quick.command, cwd, 45_000);
      if (code !== 0) {
        const lines = output.trim().split('\n');
        fail(ErrorCode.staleTarget, `quick command failed (exit ${code}): ${lines[lines.length - 1] ?? ''}`);
      }
      return { type: 'exec', output };
    }
  }
  const skill = await skillDirective(context, name, arg);
  if (skill) return skill;
  if (!BUILTINS.has(name)) fail(ErrorCode.staleTarget, `not a quick, skill or built-in command: /${name}`);
  const session = sessionFor();
  const sub = (params: Record<string, unknown>) => ({
    ...context,
    params: { session_id: session.runtimeId, ...params },
  });
  switch (name) {
    case 'queue':
    case 'q': {
      if (!arg) fail(ErrorCode.malformedTruncation, 'usage: /queue <prompt>');
      if (session.busy) {
        enqueueInput(session, { text: arg, hidden: false, images: [], connection: context.connection });
        context.gateway.attach(session, context.connection);
        return { type: 'exec', output: 'queued' };
      }
      context.gateway.attach(session, context.connection);
      session.reserveTurn();
      context.after(() => session.startTurn({ text: arg, hidden: false, images: [] }));
      return { type: 'exec', output: 'started' };
    }
    case 'steer': {
      if (!arg) fail(ErrorCode.malformedTruncation, 'usage: /steer <text>');
      if (!session.running && !session.foreignTurn) return { type: 'exec', output: 'steer rejected' };
      if (!session.running && session.remoteTurnId !== null) {
        // A turn of another instance is steered there, through the hub (ADR 0076).
        const remote = await session.steerRemoteTurn(arg, false);
        if (remote === 'unreachable') fail(ErrorCode.genericFailure, REMOTE_UNREACHABLE('steer'));
        return { type: 'exec', output: remote === null || remote.status === 'rejected' ? 'steer rejected' : 'steered' };
      }
      if (session.buildState !== 'ready') {
        session.heldSteers.push(arg);
        session.recordCorrection(arg);
        return { type: 'exec', output: 'steered' };
      }
      const result = session.agent.steer(arg);
      if (result.status === 'rejected') return { type: 'exec', output: 'steer rejected' };
      session.recordCorrection(arg);
      return { type: 'exec', output: 'steered' };
    }
    case 'retry': {
      if (session.busy) fail(ErrorCode.sessionBusy, 'session busy — interrupt the current turn before /retry');
      // Claimed before the history is cut, so that no other surface starts a turn on the session meanwhile.
      session.reserveTurn();
      let last: Awaited<ReturnType<typeof session.agent.history>>[number] | undefined;
      try {
        const rows = await session.agent.history();
        const users = rows.filter(isUserOriginated);
        last = users[users.length - 1];
        if (!last) fail(ErrorCode.staleTarget, 'nothing to retry');
        await cutBefore(session, last, rows, null, 'failed to persist history truncation');
      } catch (error) {
        session.running = false;
        session.releaseTurn();
        throw error;
      }
      context.gateway.attach(session, context.connection);
      const display =
        typeof last.displayMetadata?.display_text === 'string' ? last.displayMetadata.display_text : undefined;
      context.after(() =>
        session.startTurn({
          text: last.content,
          hidden: false,
          images: [],
          ...(display ? { displayText: display } : {}),
        }),
      );
      return { type: 'exec', output: '' };
    }
    case 'model': {
      if (!arg.trim()) {
        // A pin not yet applied (agent still building, or a turn running) is the model that answers next.
        const info = session.modelPin
          ? context.gateway.host.resolveModel(session.modelPin)
          : context.gateway.info(session);
        return { type: 'exec', output: `model: ${info.provider ? `${info.provider}:` : ''}${info.model}` };
      }
      const result = await configSet(sub({ key: 'model', value: arg }));
      const route = `${String(result.provider)}:${String(result.value)}`;
      return { type: 'exec', output: result.deferred ? `model → ${route} (from the next turn)` : `model → ${route}` };
    }
    case 'undo': {
      const result = await sessionUndo(sub({}));
      return { type: 'exec', output: `Removed ${String(result.removed)} messages.` };
    }
    default: {
      let result: Record<string, unknown>;
      try {
        result = await sessionCompress(sub(arg ? { focus_topic: arg } : {}));
      } catch (error) {
        if ((error as { code?: number }).code === ErrorCode.compressionFailed)
          fail(
            ErrorCode.compressCommandFailed,
            `compress failed: ${(error as Error).message.replace(/^compression failed: /, '')}`,
          );
        throw error;
      }
      const summary = result.summary as { headline?: string; token_line?: string } | undefined;
      return { type: 'exec', output: `${summary?.headline ?? ''}\n${summary?.token_line ?? ''}` };
    }
  }
}

/** `slash.exec` (§4.8). */
export async function slashExec(context: MethodContext): Promise<Record<string, unknown>> {
  const session = requireSession(context);
  const command = (stringParam(context.params, 'command') ?? '').trim();
  if (!command) fail(ErrorCode.malformedTruncation, 'empty command');
  const [first = '', ...rest] = command.split(/\s+/);
  const name = first.replace(/^\//, '').toLowerCase();
  // A bare `/model` stays the core command: it lists the models the host knows.
  if (BUILTINS.has(name) && !(name === 'model' && rest.length === 0)) {
    return commandDispatch({ ...context, params: { session_id: session.runtimeId, name, arg: rest.join(' ') } });
  }
  if (await isSkillCommand(context, name)) fail(ErrorCode.staleTarget, 'skill commands must use command.dispatch');
  const host = context.gateway.host;
  if (!host.commands.find(name)) return { output: `Unknown command: /${name}` };
  try {
    const result = await Promise.race([
      host.commands.execute(session.agent, command.startsWith('/') ? command : `/${command}`),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error('timed out after 45 s')), 45_000)),
    ]);
    const output: Record<string, unknown> = { output: result.text ?? '' };
    if (result.kind === 'error') output.warning = result.text ?? '';
    if (result.kind === 'ui' && (result.ui?.name === 'exit' || result.ui?.name === 'quit')) output.exit = true;
    return output;
  } catch (error) {
    fail(ErrorCode.slashFailed, `slash command failed: ${error instanceof Error ? error.message : String(error)}`);
  }
}

function runShell(command: string, cwd: string, timeoutMs: number): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, { cwd, shell: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, output });
    });
    child.on('error', () => {
      clearTimeout(timer);
      resolve({ code: -1, output });
    });
  });
}

/** `cli.exec` (§4.8). */
export async function cliExec(context: MethodContext): Promise<Record<string, unknown>> {
  const argv = context.params.argv;
  if (!Array.isArray(argv) || !argv.every((item) => typeof item === 'string'))
    fail(ErrorCode.argvInvalid, 'argv must be list[str]');
  const words = argv as string[];
  const blocked =
    words.length === 0 ||
    words[0] === 'setup' ||
    words[0] === 'gateway' ||
    (words[0] === 'sessions' && words[1] === 'browse') ||
    (words[0] === 'config' && words[1] === 'edit');
  if (blocked) return { blocked: true, hint: `run this in a terminal: ${words.join(' ')}`, code: -1, output: '' };
  const requested = context.params.timeout;
  const seconds = typeof requested === 'number' && requested > 0 ? Math.min(requested, 600) : 240;
  const executable = context.gateway.cliCommand;
  if (!executable) fail(ErrorCode.cliExecFailed, 'cli.exec failed: no CLI executable is configured');
  return new Promise((resolve, reject) => {
    const [command = process.execPath, ...prefix] = executable;
    const rejectWith = (code: number, message: string) => reject(new RpcError(code, message));
    const child = spawn(command, [...prefix, ...words], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const append = (chunk: Buffer) => {
      output = (output + chunk.toString('utf8')).slice(-48_000);
    };
    child.stdout.on('data', append);
    child.stderr.on('data', append);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, seconds * 1000);
    child.on('error', (error) => {
      clearTimeout(timer);
      rejectWith(ErrorCode.cliExecFailed, `cli.exec failed: ${error.message}`);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      if (timedOut) {
        rejectWith(ErrorCode.cliExecTimeout, `cli.exec timed out after ${seconds} s`);
        return;
      }
      resolve({ blocked: false, code: code ?? -1, output });
    });
  });
}
