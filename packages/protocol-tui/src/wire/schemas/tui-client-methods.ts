import * as z from 'zod';

const any = z.unknown();
const optionalSession = z.string().optional();

/**
 * Params of the methods the Hermes TUI (ui-tui in NousResearch/hermes-agent) calls beyond the v1
 * set (issue 16.1). Each object lists exactly the keys the TUI sends, plus `session_id` where a
 * client may name the session. Features this host lacks are listed too: they answer that they are
 * not available instead of `-32601` (ADR 0006).
 */
export const TuiClientMethodParamsSchemas = {
  'setup.status': z.object({}),
  'complete.slash': z.object({ text: z.string(), session_id: optionalSession }),
  'complete.path': z.object({ word: z.string(), session_id: optionalSession }),
  'input.detect_drop': z.object({ session_id: z.string(), text: z.string() }),
  'paste.collapse': z.object({ text: z.string(), session_id: optionalSession }),
  'shell.exec': z.object({ command: z.string(), session_id: optionalSession, timeout: z.number().optional() }),
  'session.delete': z.object({ session_id: z.string() }),
  'session.most_recent': z.object({ include_hidden: z.boolean().optional() }),
  'session.save': z.object({ session_id: z.string() }),
  'session.redo': z.object({ session_id: z.string() }),
  'session.control.read': z.object({ session_id: z.string() }),
  'prompt.btw': z.object({ session_id: z.string(), text: z.string() }),
  'model.save_key': z.object({ slug: z.string(), api_key: z.string(), session_id: optionalSession }),
  'model.disconnect': z.object({ slug: z.string(), session_id: optionalSession }),
  'rollback.list': z.object({ session_id: z.string() }),
  'rollback.diff': z.object({ session_id: z.string(), hash: z.string() }),
  'rollback.restore': z.object({ session_id: z.string(), hash: z.string(), file_path: z.string().optional() }),
  'tools.configure': z.object({
    action: z.enum(['enable', 'disable']),
    names: z.array(z.string()),
    session_id: z.string(),
  }),
  'sudo.respond': z.object({ request_id: z.string(), password: z.string(), session_id: optionalSession }),
  'secret.respond': z.object({ request_id: z.string(), value: z.string(), session_id: optionalSession }),
  'shared_metrics.slash_command': z.object({ command: z.string(), session_id: optionalSession }),
  // Status bar, footer and search overlay polls (tui-host-methods.ts).
  'system.battery': z.object({}),
  'account.usage': z.object({ session_id: optionalSession, refresh: any.optional() }),
  'workspace.info': z.object({ cwd: z.string() }),
  'session.search': z.object({ query: z.string(), limit: z.number().optional() }),
  // Features this host does not have (ADR 0006).
  'browser.manage': z.object({ action: z.string(), session_id: z.string().nullable().optional(), url: any.optional() }),
  'voice.toggle': z.object({ action: z.string().optional() }),
  'voice.record': z.object({ action: z.string().optional(), session_id: z.string().nullable().optional() }),
  'wake.start': z.object({ persist: z.boolean().optional(), surface: z.string().optional() }),
  'wake.stop': z.object({ persist: z.boolean().optional() }),
  'wake.status': z.object({}),
  'pet.info.meta': z.object({}),
  'pet.cells': z.object({ graphics: any.optional(), state: any.optional() }),
  'billing.state': z.object({}),
  'billing.step_up': z.object({ session_id: optionalSession }),
  'billing.charge': z.object({ amount_usd: any.optional() }),
  'billing.charge_status': z.object({ charge_id: any.optional() }),
  'billing.auto_reload': z.object({
    enabled: any.optional(),
    threshold: any.optional(),
    top_up_amount: any.optional(),
  }),
  'subscription.state': z.object({}),
  'subscription.preview': z.object({ subscription_type_id: any.optional() }),
  'subscription.resume': z.object({}),
  'subscription.change': z.object({ cancel: any.optional(), subscription_type_id: any.optional() }),
  'subscription.upgrade': z.object({ subscription_type_id: any.optional(), idempotency_key: any.optional() }),
} as const;

/** Those of them that wait on a child process, the store or the disk: slow methods (§2.5). */
export const TUI_CLIENT_SLOW_METHODS = [
  'shell.exec',
  'session.delete',
  'session.most_recent',
  'session.save',
  'model.save_key',
  'model.disconnect',
  'rollback.diff',
  'rollback.restore',
  'workspace.info',
  'session.search',
] as const;
