import { CLIENT_REQUEST_METHODS } from '../client-requests.js';
import type { MethodName } from '../wire/index.js';
import { approvalPending, approvalRespond, clarifyLock, requestAnswer } from './answer-methods.js';
import { clipboardPaste } from './clipboard.js';
import { cliExec, commandDispatch, commandResolve, commandsCatalog, slashExec } from './command-methods.js';
import { configGet, configSet } from './config-methods.js';
import type { MethodHandler } from './context.js';
import { modelOptions } from './model-options.js';
import { permissionsList, permissionsRevoke } from './permission-methods.js';
import { promptBackground, promptSubmit, sessionInterrupt, sessionSteer } from './prompt-methods.js';
import {
  delegationPause,
  delegationStatus,
  imageAttach,
  imageDetach,
  processKill,
  processList,
  processStop,
  reloadEnv,
  reloadMcp,
  spawnTreeList,
  spawnTreeLoad,
  spawnTreeSave,
  subagentInterrupt,
  subagentList,
  subagentSteer,
  terminalResize,
} from './runtime-methods.js';
import {
  sessionActivate,
  sessionActiveList,
  sessionBranch,
  sessionClose,
  sessionCompress,
  sessionCreate,
  sessionEventsSince,
  sessionHistory,
  sessionList,
  sessionResume,
  sessionStatus,
  sessionTitle,
  sessionUndo,
  sessionUsage,
} from './session-methods.js';
import { skillsManage, skillsReload } from './skill-methods.js';
import { TUI_CLIENT_HANDLERS } from './tui-client-table.js';

export type { MethodContext, MethodHandler } from './context.js';

/** The handler of every [v1] method (§4). */
export const METHOD_HANDLERS: Record<MethodName, MethodHandler> = {
  ping: () => ({ pong: true }),
  'gateway.ping': () => ({ pong: true }),
  'client.capabilities': (context) => {
    context.connection.serverRequests = context.params.server_requests === true;
    return {
      server_requests: ['approval', 'clarify', 'sudo', 'secret', ...CLIENT_REQUEST_METHODS],
      declines_not_shown: false,
    };
  },
  'session.create': sessionCreate,
  'session.resume': sessionResume,
  'session.activate': sessionActivate,
  'session.close': sessionClose,
  'session.list': sessionList,
  'session.active_list': sessionActiveList,
  'session.history': sessionHistory,
  'session.title': sessionTitle,
  'session.usage': sessionUsage,
  'session.status': sessionStatus,
  'session.undo': sessionUndo,
  'session.compress': sessionCompress,
  'session.branch': sessionBranch,
  'session.events.since': sessionEventsSince,
  'prompt.submit': promptSubmit,
  'prompt.background': promptBackground,
  'session.interrupt': sessionInterrupt,
  'session.steer': sessionSteer,
  'clipboard.paste': clipboardPaste,
  'image.attach': imageAttach,
  'image.detach': imageDetach,
  'terminal.resize': terminalResize,
  'clarify.lock': clarifyLock,
  'request.answer': requestAnswer,
  'approval.pending': approvalPending,
  'approval.respond': approvalRespond,
  'config.get': configGet,
  'config.set': configSet,
  'commands.catalog': commandsCatalog,
  'command.resolve': commandResolve,
  'command.dispatch': commandDispatch,
  'slash.exec': slashExec,
  'cli.exec': cliExec,
  'skills.manage': skillsManage,
  'skills.reload': skillsReload,
  'reload.mcp': reloadMcp,
  'reload.env': reloadEnv,
  'process.list': processList,
  'permissions.list': permissionsList,
  'permissions.revoke': permissionsRevoke,
  'process.kill': processKill,
  'process.stop': processStop,
  'model.options': modelOptions,
  'delegation.status': delegationStatus,
  'delegation.pause': delegationPause,
  'subagent.interrupt': subagentInterrupt,
  'subagent.steer': subagentSteer,
  'subagent.list': subagentList,
  'spawn_tree.save': spawnTreeSave,
  'spawn_tree.list': spawnTreeList,
  'spawn_tree.load': spawnTreeLoad,
  ...TUI_CLIENT_HANDLERS,
};
