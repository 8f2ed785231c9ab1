import * as z from 'zod';

/** Run statuses on the wire (spec §19.5). */
export const RunWireStatusSchema = z.enum([
  'queued',
  'running',
  'waiting_for_approval',
  'stopping',
  'completed',
  'failed',
  'cancelled',
  'interrupted',
]);
/** A run status. */
export type RunWireStatus = z.infer<typeof RunWireStatusSchema>;

/** The `POST /v1/runs` answer (spec §19.1). */
export const RunCreatedSchema = z.object({
  object: z.literal('hermes.run'),
  run_id: z.string(),
  session_id: z.string(),
  status: z.string(),
  replayed: z.boolean(),
});
/** A run-creation answer. */
export type RunCreated = z.infer<typeof RunCreatedSchema>;

/** Run usage in the native shape (spec §22.3). */
export const RunUsageSchema = z.object({
  input_tokens: z.number().int(),
  output_tokens: z.number().int(),
  total_tokens: z.number().int(),
});
/** Run usage. */
export type RunUsage = z.infer<typeof RunUsageSchema>;

/** The run status object (spec §19.2). */
export const RunStatusObjectSchema = z.looseObject({
  object: z.literal('hermes.run'),
  run_id: z.string(),
  status: RunWireStatusSchema,
  created_at: z.number(),
  updated_at: z.number(),
  session_id: z.string(),
  model: z.string(),
  last_event: z.string().nullable(),
  completed: z.boolean(),
  partial: z.boolean(),
  interrupted: z.boolean(),
  output: z.string().nullable(),
  usage: RunUsageSchema.nullable(),
});
/** A run status object. */
export type RunStatusObject = z.infer<typeof RunStatusObjectSchema>;

/** One event of a run's events stream (spec §19.4); the catalogue adds payload keys per `event`. */
export const RunEventSchema = z.looseObject({
  event: z.string(),
  run_id: z.string(),
  timestamp: z.number(),
  seq: z.number().int().nonnegative().optional(),
});
/** A run event. */
export type RunEvent = z.infer<typeof RunEventSchema>;

/** `POST /v1/runs/{id}/approval` body (spec §19.7). */
export const ApprovalResponseRequestSchema = z.looseObject({
  choice: z.string(),
  request_id: z.string().optional(),
  all: z.boolean().optional(),
  resolve_all: z.boolean().optional(),
});
/** An approval answer. */
export type ApprovalResponseRequest = z.infer<typeof ApprovalResponseRequestSchema>;
