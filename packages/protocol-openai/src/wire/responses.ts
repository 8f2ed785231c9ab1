import * as z from 'zod';

/** Responses usage (spec §14.4). */
export const ResponseUsageSchema = z.object({
  input_tokens: z.number().int(),
  input_tokens_details: z.object({ cached_tokens: z.number().int() }),
  output_tokens: z.number().int(),
  output_tokens_details: z.object({ reasoning_tokens: z.number().int() }),
  total_tokens: z.number().int(),
});
/** Responses usage. */
export type ResponseUsage = z.infer<typeof ResponseUsageSchema>;

/** An `output_text` content part. */
export const OutputTextSchema = z.object({
  type: z.literal('output_text'),
  text: z.string(),
  annotations: z.array(z.unknown()),
});

/** The output items a response can hold (spec §14.4). */
export const ResponseOutputItemSchema = z.discriminatedUnion('type', [
  z.object({
    id: z.string(),
    type: z.literal('message'),
    role: z.literal('assistant'),
    status: z.enum(['in_progress', 'completed', 'incomplete']),
    phase: z.enum(['commentary', 'final_answer']).optional(),
    content: z.array(OutputTextSchema),
  }),
  z.object({
    id: z.string(),
    type: z.literal('reasoning'),
    summary: z.array(z.object({ type: z.literal('summary_text'), text: z.string() })),
  }),
  // A tool call the agent ran on the server (ADR 0010): `server_label` is `hermes`, `output` the result the model saw.
  z.object({
    id: z.string(),
    type: z.literal('mcp_call'),
    status: z.enum(['in_progress', 'completed', 'incomplete', 'failed']),
    server_label: z.string(),
    name: z.string(),
    arguments: z.string(),
    output: z.string().nullable(),
    error: z.string().nullable(),
  }),
  // A call of one of the client's own tools (ADR 0052): the client runs it and sends a `function_call_output` back.
  z.object({
    id: z.string(),
    type: z.literal('function_call'),
    status: z.enum(['in_progress', 'completed']),
    call_id: z.string(),
    name: z.string(),
    arguments: z.string(),
  }),
]);
/** A Responses output item. */
export type ResponseOutputItem = z.infer<typeof ResponseOutputItemSchema>;

/** The response object (spec §14.4). */
export const ResponseObjectSchema = z.object({
  id: z.string().regex(/^resp_[0-9a-f]{24}$/),
  object: z.literal('response'),
  created_at: z.number().int(),
  status: z.enum(['in_progress', 'completed', 'failed', 'incomplete']),
  model: z.string(),
  output: z.array(ResponseOutputItemSchema),
  usage: ResponseUsageSchema.nullable(),
  error: z.object({ code: z.string(), message: z.string() }).nullable(),
  incomplete_details: z.object({ reason: z.string() }).nullable(),
  instructions: z.string().nullable(),
  metadata: z.record(z.string(), z.string()),
  parallel_tool_calls: z.boolean(),
  temperature: z.null(),
  top_p: z.null(),
  /** `auto` unless the request sent a `tool_choice` (echoed as sent, ADR 0052). */
  tool_choice: z.union([z.enum(['auto', 'none', 'required']), z.looseObject({ type: z.string() })]),
  /** The client's declared function tools (ADR 0052); the server's own tools are never listed. */
  tools: z.array(z.unknown()),
  previous_response_id: z.string().nullable(),
  store: z.boolean(),
  truncation: z.enum(['disabled', 'auto']),
});
/** A response object. */
export type ResponseObject = z.infer<typeof ResponseObjectSchema>;

/** One Responses stream event: `type` names it and `sequence_number` orders it (spec §14.7). */
export const ResponseStreamEventSchema = z.looseObject({
  type: z.string().startsWith('response.'),
  sequence_number: z.number().int().nonnegative(),
});
/** A Responses stream event. */
export type ResponseStreamEvent = z.infer<typeof ResponseStreamEventSchema>;
