import { ErrorCode } from '../wire/index.js';
import { fail, type MethodContext, requireSession } from './context.js';

/**
 * `tools.configure`: enables or disables tools or toolsets for the session (the core's
 * `setToolEnabled`). The conversation is kept (`reset:false`), so no `info` is returned for the
 * TUI to clear its transcript with; a `session.info` with the new tool list follows instead.
 */
export function toolsConfigure(context: MethodContext) {
  const session = requireSession(context);
  const action = context.params.action;
  if (action !== 'enable' && action !== 'disable') fail(ErrorCode.invalidValue, 'action must be enable or disable');
  const names = context.params.names;
  if (!Array.isArray(names) || names.length === 0 || !names.every((name) => typeof name === 'string' && name !== ''))
    fail(ErrorCode.invalidValue, 'names must be a non-empty list of tool or toolset names');
  const tools = context.gateway.host.tools.list({ sessionId: session.storedId });
  const known = new Set<string>();
  for (const tool of tools) {
    known.add(tool.name);
    if (tool.toolset) known.add(tool.toolset);
  }
  const changed: string[] = [];
  const unknown: string[] = [];
  for (const name of names as string[]) {
    if (!known.has(name)) {
      unknown.push(name);
      continue;
    }
    session.agent.setToolEnabled(name, action === 'enable');
    changed.push(name);
  }
  if (changed.length > 0) context.after(() => session.emit('session.info', context.gateway.info(session)));
  return { changed, unknown, missing_servers: [], reset: false };
}
