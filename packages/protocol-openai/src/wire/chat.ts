import * as z from 'zod';

/** Token usage in the chat-completions shape (spec §13.4). */
export const ChatUsageSchema = z.object({
  prompt_tokens: z.number().int(),
  completion_tokens: z.number().int(),
  total_tokens: z.number().int(),
  prompt_tokens_details: z.object({ cached_tokens: z.number().int() }),
  completion_tokens_details: z.object({ reasoning_tokens: z.number().int() }),
});
/** Chat-completions usage. */
export type ChatUsage = z.infer<typeof ChatUsageSchema>;

/** One message of a chat-completions request; content is normalised later, so it stays loose here. */
export const ChatRequestMessageSchema = z.looseObject({ role: z.string(), content: z.unknown().optional() });
/** A chat-completions request message. */
export type ChatRequestMessage = z.infer<typeof ChatRequestMessageSchema>;

/** The fields of `POST /v1/chat/completions` this server reads; unknown fields are ignored (spec §13.1). */
export const ChatCompletionRequestSchema = z.looseObject({
  messages: z.array(ChatRequestMessageSchema).min(1),
  model: z.string().optional(),
  provider: z.string().optional(),
  model_options: z.record(z.string(), z.unknown()).optional(),
  stream: z.unknown().optional(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullable().optional(),
});
/** A chat-completions request. */
export type ChatCompletionRequest = z.infer<typeof ChatCompletionRequestSchema>;

/** The `hermes` outcome object of partial or failed turns (spec §13.5). */
export const HermesOutcomeSchema = z.object({
  completed: z.boolean(),
  partial: z.boolean(),
  failed: z.boolean(),
  interrupted: z.boolean(),
  error: z.string().nullable(),
  error_code: z.string(),
  turn_exit_reason: z.string(),
});
/** A turn outcome object. */
export type HermesOutcome = z.infer<typeof HermesOutcomeSchema>;

/**
 * Finish reasons this server sends; `error` is a Hermes addition (spec §13.5), `tool_calls` ends an answer that hands
 * calls of the client's own tools to the client (ADR 0052).
 */
export const ChatFinishReasonSchema = z.enum(['stop', 'length', 'content_filter', 'tool_calls', 'error']);
/** A chat finish reason. */
export type ChatFinishReason = z.infer<typeof ChatFinishReasonSchema>;

/** A call of one of the client's own tools, for the client to run (ADR 0052). */
export const ChatToolCallSchema = z.object({
  id: z.string(),
  type: z.literal('function'),
  function: z.object({ name: z.string(), arguments: z.string() }),
});
/** A chat tool call. */
export type ChatToolCall = z.infer<typeof ChatToolCallSchema>;

/** A non-streaming chat completion (spec §13.4). */
export const ChatCompletionSchema = z.object({
  id: z.string().regex(/^chatcmpl-[0-9a-f]{29}$/),
  object: z.literal('chat.completion'),
  created: z.number().int(),
  model: z.string(),
  choices: z
    .array(
      z.object({
        index: z.literal(0),
        message: z.object({
          role: z.literal('assistant'),
          /** Null only beside `tool_calls`, when the step wrote no text. */
          content: z.string().nullable(),
          refusal: z.null(),
          reasoning_content: z.string().optional(),
          tool_calls: z.array(ChatToolCallSchema).min(1).optional(),
        }),
        logprobs: z.null(),
        finish_reason: ChatFinishReasonSchema,
      }),
    )
    .length(1),
  usage: ChatUsageSchema,
  hermes: HermesOutcomeSchema.optional(),
});
/** A chat completion. */
export type ChatCompletion = z.infer<typeof ChatCompletionSchema>;

/** One streamed chat chunk (spec §13.6). */
export const ChatCompletionChunkSchema = z.object({
  id: z.string(),
  object: z.literal('chat.completion.chunk'),
  created: z.number().int(),
  model: z.string(),
  choices: z.array(
    z.object({
      index: z.literal(0),
      delta: z.object({
        role: z.literal('assistant').optional(),
        content: z.string().optional(),
        reasoning_content: z.string().optional(),
        /** One call per chunk, whole, before the finish chunk (ADR 0052). */
        tool_calls: z
          .array(ChatToolCallSchema.extend({ index: z.number().int().nonnegative() }))
          .length(1)
          .optional(),
      }),
      logprobs: z.null(),
      finish_reason: ChatFinishReasonSchema.nullable(),
    }),
  ),
  usage: ChatUsageSchema.nullable().optional(),
  error: z
    .object({ message: z.string(), type: z.literal('server_error'), param: z.null(), code: z.string() })
    .optional(),
  hermes: HermesOutcomeSchema.optional(),
});
/** A chat chunk. */
export type ChatCompletionChunk = z.infer<typeof ChatCompletionChunkSchema>;
