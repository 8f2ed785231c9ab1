import * as z from 'zod';
import { SessionLiveInfoSchema, SubagentPayloadSchema, UsageSchema } from './shared.js';

/** `gateway.ready` payload (§1.5). */
export const GatewayReadyPayloadSchema = z.object({
  skin: z.object({}),
  change_events: z.literal(false),
  replay_epoch: z.string().regex(/^[0-9a-f]{16}$/),
  heartbeat: z.boolean(),
});

/** `message.complete` payload (§5.2). */
export const MessageCompletePayloadSchema = z.object({
  text: z.string(),
  usage: UsageSchema,
  status: z.enum(['complete', 'error', 'interrupted']),
  reasoning: z.string().optional(),
  warning: z.string().optional(),
  error: z.string().optional(),
  recoverable: z.boolean().optional(),
  error_surface: z
    .object({
      layer: z.string(),
      code: z.string(),
      retryable: z.boolean(),
      provider: z.string().optional(),
      model: z.string().optional(),
      resets_at: z.number().optional(),
    })
    .optional(),
  partial: z.boolean().optional(),
  persisted_turn: z
    .object({
      row_ids: z.array(z.number().int()),
      user_row_id: z.number().int().optional(),
      final_assistant_row_id: z.number().int().optional(),
      complete: z.boolean(),
    })
    .optional(),
});

const text = z.object({ text: z.string() });

/** Payload schemas of every [v1] event, by type (§5.1). */
export const EventPayloadSchemas = {
  'gateway.ready': GatewayReadyPayloadSchema,
  'message.start': z.object({ input: z.object({ role: z.literal('user'), text: z.string() }).nullable() }),
  'message.delta': text,
  'reasoning.delta': text,
  'message.interim': z.object({ text: z.string(), already_streamed: z.boolean() }),
  'message.complete': MessageCompletePayloadSchema,
  'tool.generating': z.object({ name: z.string() }),
  'tool.start': z.object({
    tool_id: z.string(),
    name: z.string(),
    context: z.string().optional(),
    args: z.unknown().optional(),
    args_text: z.string().optional(),
    preview: z.string().optional(),
  }),
  'tool.complete': z.object({
    tool_id: z.string(),
    name: z.string(),
    args: z.unknown().optional(),
    duration_s: z.number().optional(),
    result: z.unknown().optional(),
    summary: z.string().optional(),
    result_text: z.string().optional(),
    inline_diff: z.string().optional(),
    todos: z.array(z.unknown()).optional(),
    revision: z.number().int().optional(),
  }),
  'todo.updated': z.object({ todos: z.array(z.unknown()), revision: z.number().int() }),
  'session.info': SessionLiveInfoSchema,
  'session.usage': z.object({ usage: UsageSchema }),
  'status.update': z.object({ kind: z.string(), text: z.string() }),
  'session.title': z.object({ session_id: z.string(), title: z.string() }),
  'session.reclaimed': z.object({ session_id: z.string(), stored_session_id: z.string(), reason: z.string() }),
  notice: z.object({ message: z.string() }),
  error: z.object({ message: z.string() }),
  'request.cancel': z.object({
    id: z.string(),
    method: z.string(),
    reason: z.enum(['resolved', 'timeout', 'interrupted', 'session_closed', 'shutdown']),
  }),
  'background.complete': z.object({ task_id: z.string(), text: z.string() }),
  /** The answer of a `prompt.btw` side question (issue 16.1). */
  'btw.complete': z.object({ task_id: z.string(), text: z.string() }),
  'subagent.spawn_requested': SubagentPayloadSchema,
  'subagent.start': SubagentPayloadSchema,
  'subagent.progress': SubagentPayloadSchema,
  'subagent.thinking': SubagentPayloadSchema,
  'subagent.tool': SubagentPayloadSchema,
  'subagent.complete': SubagentPayloadSchema,
} as const;

/** Names of every [v1] event. */
export type EventType = keyof typeof EventPayloadSchemas;

/** Payload of an event. */
export type EventPayload<T extends EventType> = z.infer<(typeof EventPayloadSchemas)[T]>;

/** Params of the server requests (§6.4). */
export const ServerRequestParamsSchemas = {
  approval: z.object({
    session_id: z.string(),
    request_id: z.string(),
    command: z.string(),
    description: z.string(),
    choices: z.array(z.string()),
    allow_permanent: z.boolean(),
    /** Present with `allow_permanent`: the exact command `always` allows from then on (ADR 0034). */
    always_scope: z.string().optional(),
    allow_session: z.boolean(),
    tool_name: z.string().optional(),
    pattern_keys: z.array(z.string()).optional(),
    pattern_key: z.string().optional(),
    subagent: z.object({ child_id: z.string(), goal: z.string() }).optional(),
  }),
  clarify: z.object({
    session_id: z.string(),
    question: z.string().optional(),
    choices: z.array(z.string()).nullable().optional(),
    multi_select: z.literal(true).optional(),
    questions: z
      .array(
        z.object({
          qid: z.string(),
          question: z.string(),
          choices: z.array(z.string()).nullable(),
          multi_select: z.boolean(),
        }),
      )
      .optional(),
    answers: z.record(z.string(), z.unknown()).optional(),
  }),
  sudo: z.object({ session_id: z.string(), command: z.string() }),
  secret: z.object({
    session_id: z.string(),
    env_var: z.string(),
    prompt: z.string(),
    metadata: z.record(z.string(), z.unknown()).optional(),
  }),
} as const;
