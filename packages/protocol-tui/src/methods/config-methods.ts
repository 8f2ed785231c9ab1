import { statSync } from 'node:fs';
import { join } from 'node:path';
import { gitBranch } from '../git-branch.js';
import type { LiveSession } from '../live-session.js';
import { ErrorCode } from '../wire/index.js';
import { fail, type MethodContext, stringParam } from './context.js';
import { displayConfigGet, displayConfigSet } from './display-config.js';
import { mcpRevision } from './runtime-methods.js';
import { directoryOrNull } from './session-methods.js';

const KEYS = [
  'model',
  'busy',
  'approval_mode',
  'approvals.mode',
  'yolo',
  'reasoning',
  'cwd',
  'terminal.cwd',
  'workdir',
  'verbose',
  'mtime',
];
const VERBOSE_CYCLE = ['off', 'new', 'all', 'verbose'];

function liveSession(context: MethodContext): LiveSession | undefined {
  const id = stringParam(context.params, 'session_id');
  return id ? context.gateway.sessions.get(id) : undefined;
}

function mtime(context: MethodContext): number {
  try {
    return statSync(join(context.gateway.host.homeDir, 'config.yaml')).mtimeMs / 1000;
  } catch {
    return 0;
  }
}

/** `config.get` (§4.7). */
export function configGet(context: MethodContext) {
  const key = stringParam(context.params, 'key');
  if (!key) fail(ErrorCode.invalidValue, 'key is required');
  const display = displayConfigGet(context, key);
  if (display) return display;
  if (!KEYS.includes(key)) fail(ErrorCode.invalidValue, `unknown config key: ${key}`);
  const { gateway } = context;
  const session = liveSession(context);
  const config = gateway.host.config;
  switch (key) {
    case 'model': {
      const info = session ? gateway.info(session) : null;
      const spec = config.model.default ?? gateway.host.lookupEnv('HERMES_MODEL') ?? '';
      const model = info?.model ?? spec;
      return { value: model, model, provider: info?.provider ?? config.model.provider ?? '' };
    }
    case 'busy':
      return { value: gateway.busyMode() };
    case 'approval_mode':
    case 'approvals.mode':
      return { value: config.approvals.mode };
    case 'yolo':
      return { value: config.approvals.yolo };
    case 'reasoning':
      return { value: session?.agent.status().reasoningEffort ?? config.model.reasoning_effort ?? 'none' };
    case 'verbose':
      return { value: gateway.toolProgressMode(), tool_progress: gateway.toolProgressMode() };
    case 'mtime': {
      const value = mtime(context);
      return { value, mtime: value, mcp_rev: mcpRevision(context) };
    }
    default: {
      const cwd = session?.agent.cwd ?? gateway.defaultCwd ?? process.cwd();
      return { value: cwd, cwd, branch: gitBranch(cwd) };
    }
  }
}

/** `config.set` (§4.7). */
export async function configSet(context: MethodContext) {
  const { gateway, params } = context;
  const key = stringParam(params, 'key');
  if (!key) fail(ErrorCode.invalidValue, 'key is required');
  const value = 'value' in params ? params.value : '';
  const display = await displayConfigSet(context, key, value);
  if (display) return display;
  if (!KEYS.includes(key) || key === 'mtime') fail(ErrorCode.invalidValue, `unknown config key: ${key}`);
  const invalid = () =>
    fail(
      ErrorCode.invalidValue,
      `invalid value for ${key}: ${typeof value === 'string' ? value : JSON.stringify(value)}`,
    );
  const persist = async (path: string[], stored: unknown) => {
    try {
      await gateway.persistConfig(path, stored);
    } catch (error) {
      fail(ErrorCode.configSetFailed, `config.set failed: ${error instanceof Error ? error.message : String(error)}`);
    }
  };
  const session = liveSession(context);
  const scopeParam = stringParam(params, 'scope');
  switch (key) {
    case 'busy': {
      if (value === 'status') return { key, value: gateway.busyMode() };
      if (value !== 'queue' && value !== 'steer' && value !== 'interrupt') return invalid();
      gateway.busyModeOverride = value;
      await persist(['display', 'busy_input_mode'], value);
      return { key, value };
    }
    case 'verbose': {
      let next = value;
      if (value === 'cycle') {
        const index = VERBOSE_CYCLE.indexOf(gateway.toolProgressMode());
        next = VERBOSE_CYCLE[(index + 1) % VERBOSE_CYCLE.length];
      }
      if (typeof next !== 'string' || !VERBOSE_CYCLE.includes(next)) return invalid();
      gateway.toolProgressOverride = next;
      await persist(['display', 'tool_progress'], next);
      return { key, value: next, tool_progress: next };
    }
    case 'approval_mode':
    case 'approvals.mode': {
      if (value !== 'manual' && value !== 'smart' && value !== 'off') return invalid();
      await persist(['approvals', 'mode'], value);
      for (const live of gateway.sessions.values()) live.emit('session.info', gateway.info(live));
      return { key, value };
    }
    case 'yolo': {
      let next: boolean;
      if (value === true || value === 'on') next = true;
      else if (value === false || value === 'off') next = false;
      // The TUI's /yolo sends no value: a toggle.
      else if (value === 'toggle' || !('value' in params)) next = !gateway.host.config.approvals.yolo;
      else return invalid();
      const scope = scopeParam === 'global' ? 'global' : scopeParam ? 'session' : session ? 'session' : 'global';
      if (scope === 'session') {
        if (!session) fail(ErrorCode.sessionNotFound, 'session not found');
        session.agent.setYolo(next);
        session.emit('session.info', gateway.info(session));
      } else {
        await persist(['approvals', 'yolo'], next);
        for (const live of gateway.sessions.values()) live.emit('session.info', gateway.info(live));
      }
      return { key, value: next };
    }
    case 'reasoning': {
      if (value !== 'none' && value !== 'low' && value !== 'medium' && value !== 'high') return invalid();
      const scope = scopeParam === 'global' ? 'global' : scopeParam ? 'session' : session ? 'session' : 'global';
      if (scope === 'session') {
        if (!session) fail(ErrorCode.sessionNotFound, 'session not found');
        await session.agent.setReasoningEffort(value);
        session.emit('session.info', gateway.info(session));
      } else {
        await persist(['model', 'reasoning_effort'], value);
      }
      return { key, value };
    }
    case 'model': {
      if (typeof value !== 'string' || value.trim() === '') return invalid();
      const words = value.trim().split(/\s+/);
      let scope = scopeParam === 'global' ? 'global' : scopeParam ? 'session' : null;
      let provider: string | null = null;
      const parts: string[] = [];
      for (let index = 0; index < words.length; index += 1) {
        const word = words[index] ?? '';
        if (word === '--session') scope ??= 'session';
        else if (word === '--global') scope ??= 'global';
        else if (word === '--provider') {
          provider = words[index + 1] ?? null;
          index += 1;
        } else parts.push(word);
      }
      const model = parts.join(' ');
      const spec = provider ? `${provider}:${model}` : model;
      let route: { provider: string; model: string };
      try {
        route = gateway.host.resolveModel(spec);
      } catch (error) {
        fail(ErrorCode.invalidValue, `unknown model: ${error instanceof Error ? error.message : String(error)}`);
      }
      scope ??= session ? 'session' : 'global';
      if (scope === 'session' && !session) fail(ErrorCode.sessionNotFound, 'session not found');
      if (scope === 'global') {
        await persist(['model', 'default'], spec);
      }
      let deferred = false;
      if (session) {
        if (session.buildState !== 'ready') session.modelPin = spec;
        else if (session.running) {
          session.deferredModel = spec;
          session.modelPin = spec;
          deferred = true;
        } else {
          const result = await session.agent.switchModel(spec);
          if (!result.ok) fail(ErrorCode.invalidValue, `unknown model: ${result.error?.message ?? spec}`);
          session.modelPin = spec;
          context.after(() => session.emit('session.info', gateway.info(session)));
        }
      }
      return { key, value: route.model, provider: route.provider, deferred };
    }
    default: {
      const directory = directoryOrNull(typeof value === 'string' ? value : undefined);
      if (!directory)
        fail(ErrorCode.invalidValue, `not a directory: ${typeof value === 'string' ? value : JSON.stringify(value)}`);
      if (session) {
        if (session.running) fail(ErrorCode.sessionBusy, 'session busy — cannot change cwd during a turn');
        await session.agent.setCwd(directory);
        context.after(() => session.emit('session.info', gateway.info(session)));
      } else {
        gateway.defaultCwd = directory;
        await persist(['tui_gateway', 'default_cwd'], directory);
      }
      return { key, value: directory, cwd: directory, branch: gitBranch(directory) };
    }
  }
}
