import type { TuiClientMethodParamsSchemas } from '../wire/schemas/tui-client-methods.js';
import { promptBtw } from './btw-method.js';
import type { MethodHandler } from './context.js';
import { modelDisconnect, modelSaveKey } from './model-key-methods.js';
import { rollbackDiff, rollbackList, rollbackRestore } from './rollback-methods.js';
import { sessionDelete, sessionMostRecent, sessionSave } from './session-store-methods.js';
import { toolsConfigure } from './tools-configure.js';
import {
  completePath,
  completeSlash,
  inputDetectDrop,
  pasteCollapse,
  secretRespond,
  sessionControlRead,
  setupStatus,
  sharedMetricsSlashCommand,
  shellExec,
  sudoRespond,
} from './tui-client-methods.js';
import { accountUsage, sessionSearch, systemBattery, workspaceInfo } from './tui-host-methods.js';
import {
  petDisabled,
  unavailableFeature,
  voiceRecord,
  voiceToggle,
  wakeStart,
  wakeStatus,
  wakeStop,
} from './unavailable-methods.js';

/** Handlers of the Hermes TUI's methods beyond the v1 set (issue 16.1, ADR 0006). */
export const TUI_CLIENT_HANDLERS: Record<keyof typeof TuiClientMethodParamsSchemas, MethodHandler> = {
  'setup.status': setupStatus,
  'complete.slash': completeSlash,
  'complete.path': completePath,
  'input.detect_drop': inputDetectDrop,
  'paste.collapse': pasteCollapse,
  'shell.exec': shellExec,
  'session.delete': sessionDelete,
  'session.most_recent': sessionMostRecent,
  'session.save': sessionSave,
  'session.redo': unavailableFeature('redo of an undone exchange'),
  'session.control.read': sessionControlRead,
  'prompt.btw': promptBtw,
  'model.save_key': modelSaveKey,
  'model.disconnect': modelDisconnect,
  'rollback.list': rollbackList,
  'rollback.diff': rollbackDiff,
  'rollback.restore': rollbackRestore,
  'tools.configure': toolsConfigure,
  'sudo.respond': sudoRespond,
  'secret.respond': secretRespond,
  'shared_metrics.slash_command': sharedMetricsSlashCommand,
  'system.battery': systemBattery,
  'account.usage': accountUsage,
  'workspace.info': workspaceInfo,
  'session.search': sessionSearch,
  'browser.manage': unavailableFeature('browser management over CDP'),
  'voice.toggle': voiceToggle,
  'voice.record': voiceRecord,
  'wake.start': wakeStart,
  'wake.stop': wakeStop,
  'wake.status': wakeStatus,
  'pet.info.meta': petDisabled,
  'pet.cells': petDisabled,
  'billing.state': unavailableFeature('billing'),
  'billing.step_up': unavailableFeature('billing'),
  'billing.charge': unavailableFeature('billing'),
  'billing.charge_status': unavailableFeature('billing'),
  'billing.auto_reload': unavailableFeature('billing'),
  'subscription.state': unavailableFeature('subscription management'),
  'subscription.preview': unavailableFeature('subscription management'),
  'subscription.resume': unavailableFeature('subscription management'),
  'subscription.change': unavailableFeature('subscription management'),
  'subscription.upgrade': unavailableFeature('subscription management'),
};
