import * as z from 'zod';
import { OpenRequestSchema, SessionLiveInfoSchema, TranscriptMessageSchema, UsageSchema } from './shared.js';
import { TUI_CLIENT_SLOW_METHODS, TuiClientMethodParamsSchemas } from './tui-client-methods.js';

const sessionId = z.string();
const any = z.unknown();

/** Seed row of `session.create` (§4.2). Other keys are allowed and ignored. */
export const SeedMessageSchema = z.looseObject({
  role: z.string(),
  content: z.string().optional(),
  text: z.string().optional(),
  display_kind: z.string().optional(),
});

/**
 * Params of every [v1] method (§4). The keys of each object are the complete set the method
 * accepts (plus `profile`, §2.4); [later] parameters are listed too, because they are accepted and
 * ignored. Types document the contract; handlers still read raw values, because the spec gives
 * each mistyped field its own error code or treats it as absent (§2.3 step 10).
 */
export const MethodParamsSchemas = {
  ping: z.object({}),
  'gateway.ping': z.object({}),
  'client.capabilities': z.object({ server_requests: z.boolean().optional() }),
  'session.create': z.object({
    cols: z.number().int().min(1).optional(),
    source: z.string().optional(),
    cwd: z.string().optional(),
    messages: z.array(SeedMessageSchema).optional(),
    parent_session_id: z.string().optional(),
    title: z.string().optional(),
    model: z.string().optional(),
    provider: z.string().optional(),
    reasoning_effort: z.string().optional(),
    close_on_disconnect: z.boolean().optional(),
    hidden: z.boolean().optional(),
    persist: z.boolean().optional(),
    fast: any.optional(),
    room_plumbing: any.optional(),
    follow_profile_config: any.optional(),
  }),
  'session.resume': z.object({
    session_id: z.string(),
    cols: z.number().int().min(1).optional(),
    omit_messages: z.boolean().optional(),
    eager_build: z.boolean().optional(),
    close_on_disconnect: z.boolean().optional(),
    source: z.string().optional(),
    lazy: any.optional(),
    defer_history: any.optional(),
  }),
  'session.activate': z.object({ session_id: sessionId, cols: any.optional(), omit_messages: z.boolean().optional() }),
  'session.close': z.object({ session_id: sessionId }),
  'session.list': z.object({
    title: z.string().optional(),
    limit: z.number().int().min(1).optional(),
    include_hidden: z.boolean().optional(),
  }),
  'session.active_list': z.object({ current_session_id: z.string().optional() }),
  'session.history': z.object({ session_id: sessionId }),
  'session.title': z.object({ session_id: sessionId, title: z.string().optional() }),
  'session.usage': z.object({ session_id: sessionId }),
  'session.status': z.object({ session_id: sessionId }),
  'session.undo': z.object({ session_id: sessionId }),
  'session.compress': z.object({ session_id: sessionId, focus_topic: z.string().optional() }),
  'session.branch': z.object({
    session_id: sessionId,
    name: z.string().optional(),
    count: z.number().int().optional(),
  }),
  'session.events.since': z.object({
    session_id: z.string().optional(),
    last_seen: z.number().int().min(0).optional(),
  }),
  'prompt.submit': z.object({
    session_id: sessionId,
    text: z.string(),
    display_kind: z.string().optional(),
    queued: z.boolean().optional(),
    truncate_before_row_id: z.number().int().optional(),
    truncate_before_message_id: z.string().optional(),
    truncate_before_user_ordinal: z.number().int().optional(),
    confirm_truncate: z.boolean().optional(),
    confirm_empty_truncate: z.boolean().optional(),
    rebind_survivor_row_ids: z.array(z.number().int()).optional(),
    interrupted: any.optional(),
    surface: any.optional(),
    voice_context: any.optional(),
    title_preview: any.optional(),
    submission_ref: any.optional(),
  }),
  'prompt.background': z.object({ session_id: sessionId, text: z.string() }),
  'session.interrupt': z.object({ session_id: sessionId, expected_hosted_task_id: any.optional() }),
  'session.steer': z.object({
    session_id: sessionId,
    text: z.string(),
    submission_ref: any.optional(),
    input_visibility: any.optional(),
  }),
  'clipboard.paste': z.object({ session_id: sessionId }),
  'image.attach': z.object({ session_id: sessionId, path: z.string() }),
  'image.detach': z.object({ session_id: sessionId, path: z.string() }),
  'terminal.resize': z.object({ session_id: sessionId, cols: z.number().int().min(1) }),
  'clarify.lock': z.object({ request_id: z.string(), question_id: z.string(), answer: any.optional() }),
  'request.answer': z.object({ id: z.string(), result: z.record(z.string(), z.unknown()) }),
  'approval.pending': z.object({ session_id: sessionId }),
  'approval.respond': z.object({
    session_id: z.string().optional(),
    choice: z.enum(['once', 'session', 'always', 'deny']).optional(),
    all: z.boolean().optional(),
    request_id: z.string().optional(),
  }),
  'config.get': z.object({ key: z.string(), session_id: z.string().optional(), cwd: any.optional() }),
  'config.set': z.object({
    key: z.string(),
    value: any.optional(),
    session_id: z.string().optional(),
    scope: z.enum(['session', 'global', 'once']).optional(),
    confirm_expensive_model: any.optional(),
  }),
  'commands.catalog': z.object({ session_id: z.string().optional() }),
  'command.resolve': z.object({ name: z.string() }),
  'command.dispatch': z.object({
    name: z.string().optional(),
    arg: z.string().optional(),
    /** The whole command line (`"/model openai:gpt-4o"`), an alternative to `name` + `arg`. */
    command: z.string().optional(),
    session_id: z.string().optional(),
  }),
  'slash.exec': z.object({ session_id: sessionId, command: z.string() }),
  'cli.exec': z.object({ argv: z.array(z.string()), timeout: z.number().optional() }),
  'skills.manage': z.object({
    action: z.string().optional(),
    query: z.string().optional(),
    page: z.number().int().optional(),
    page_size: z.number().int().optional(),
    session_id: z.string().optional(),
  }),
  'skills.reload': z.object({ session_id: z.string().optional() }),
  'reload.mcp': z.object({
    session_id: z.string().optional(),
    confirm: z.boolean().optional(),
    always: z.boolean().optional(),
    rev: z.string().optional(),
  }),
  'reload.env': z.object({}),
  'process.list': z.object({ session_id: sessionId }),
  'permissions.list': z.object({}),
  'permissions.revoke': z.object({ command: z.string().optional(), pattern: z.string().optional() }),
  'process.kill': z.object({ session_id: sessionId, process_id: z.string() }),
  'process.stop': z.object({}),
  'model.options': z.object({
    session_id: z.string().optional(),
    explicit_only: z.boolean().optional(),
    include_unconfigured: z.boolean().optional(),
    refresh: z.boolean().optional(),
  }),
  'delegation.status': z.object({ session_id: z.string().optional() }),
  'delegation.pause': z.object({ paused: z.boolean().optional() }),
  'subagent.interrupt': z.object({ subagent_id: z.string(), session_id: z.string() }),
  'subagent.steer': z.object({ session_id: z.string(), subagent_id: z.string(), text: z.string() }),
  'subagent.list': z.object({ session_id: sessionId }),
  'spawn_tree.save': z.object({
    subagents: z.array(z.record(z.string(), z.unknown())),
    session_id: z.string().optional(),
    started_at: z.number().optional(),
    finished_at: z.number().optional(),
    label: z.string().optional(),
  }),
  'spawn_tree.list': z.object({
    session_id: z.string().optional(),
    cross_session: z.boolean().optional(),
    limit: z.number().int().min(1).optional(),
  }),
  'spawn_tree.load': z.object({ path: z.string() }),
  ...TuiClientMethodParamsSchemas,
} as const;

/** Names of every [v1] method. */
export type MethodName = keyof typeof MethodParamsSchemas;

/** Params of a method. */
export type MethodParams<M extends MethodName> = z.infer<(typeof MethodParamsSchemas)[M]>;

/** Slow methods: started in order, not awaited by the dispatcher, at most 8 at once (§2.5). */
export const SLOW_METHODS: ReadonlySet<string> = new Set([
  'session.resume',
  'session.list',
  'session.active_list',
  'session.branch',
  'session.compress',
  'session.close',
  'session.undo',
  'session.usage',
  'clipboard.paste',
  'command.dispatch',
  'slash.exec',
  'cli.exec',
  'model.options',
  'reload.mcp',
  'process.list',
  ...TUI_CLIENT_SLOW_METHODS,
]);

/** True when `name` is a [v1] method. */
export function isMethodName(name: string): name is MethodName {
  return Object.hasOwn(MethodParamsSchemas, name);
}

/** The keys a method accepts, `profile` included (§2.4). */
export function acceptedKeys(method: MethodName): ReadonlySet<string> {
  return new Set([...Object.keys(MethodParamsSchemas[method].shape), 'profile']);
}

/** The live-session snapshot of `session.resume` and `session.activate` (§9.1). */
export const SessionSnapshotSchema = z.object({
  session_id: z.string(),
  stored_session_id: z.string(),
  session_key: z.string(),
  resumed: z.string().optional(),
  message_count: z.number().int(),
  messages: z.array(TranscriptMessageSchema),
  messages_omitted: z.literal(true).optional(),
  info: SessionLiveInfoSchema,
  running: z.boolean(),
  status: z.enum(['waiting', 'starting', 'working', 'idle']),
  started_at: z.number(),
  turn_started_at: z.number().nullable(),
  inflight: z.record(z.string(), z.unknown()).nullable(),
  queued: z.object({ user: z.string() }).optional(),
  open_requests: z.array(OpenRequestSchema),
  todo_state: z.object({ todos: z.array(z.unknown()), revision: z.number().int() }).optional(),
});
/** The live-session snapshot. */
export type SessionSnapshot = z.infer<typeof SessionSnapshotSchema>;

/** Results of the main methods. */
export const MethodResultSchemas = {
  ping: z.object({ pong: z.literal(true) }),
  'gateway.ping': z.object({ pong: z.literal(true) }),
  'client.capabilities': z.object({ server_requests: z.array(z.string()), declines_not_shown: z.boolean() }),
  'session.create': z.object({
    session_id: z.string(),
    stored_session_id: z.string(),
    /** The durable key (the stored id) a client records to resume later. */
    session_key: z.string(),
    message_count: z.number().int(),
    messages: z.array(TranscriptMessageSchema),
    info: SessionLiveInfoSchema,
  }),
  'session.resume': SessionSnapshotSchema,
  'session.activate': SessionSnapshotSchema,
  'session.close': z.object({ closed: z.boolean() }),
  'session.list': z.object({
    sessions: z.array(
      z.object({
        id: z.string(),
        title: z.string(),
        preview: z.string(),
        started_at: z.number(),
        message_count: z.number().int(),
        source: z.string(),
      }),
    ),
  }),
  'session.history': z.object({ count: z.number().int(), messages: z.array(TranscriptMessageSchema) }),
  'session.usage': UsageSchema,
  'session.events.since': z.object({
    events: z.array(z.record(z.string(), z.unknown())),
    latest_seq: z.number().int(),
    truncated: z.boolean(),
    count: z.number().int(),
    epoch: z.string(),
    open_requests: z.array(OpenRequestSchema),
  }),
  'prompt.submit': z.object({
    status: z.enum(['streaming', 'queued', 'steered', 'redirected']),
    survivor_user_row_ids: z.array(z.number().int().nullable()).optional(),
    survivor_row_id_map: z.record(z.string(), z.number().int().nullable()).optional(),
  }),
  'session.interrupt': z.object({ status: z.literal('interrupted') }),
  'session.steer': z.object({ status: z.enum(['queued', 'rejected']), text: z.string() }),
} as const;
