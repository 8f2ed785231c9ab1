import * as z from 'zod';

/** A JSON-RPC id as the gateway accepts it. */
export const RequestIdSchema = z.union([z.string(), z.number()]);

/** A request from a client (§2.1). */
export const RequestFrameSchema = z.object({
  jsonrpc: z.literal('2.0').optional(),
  id: RequestIdSchema.optional(),
  method: z.string(),
  params: z.record(z.string(), z.unknown()).nullable().optional(),
});
/** A request from a client. */
export type RequestFrame = z.infer<typeof RequestFrameSchema>;

/** A JSON-RPC error object. */
export const ErrorObjectSchema = z.object({
  code: z.number().int(),
  message: z.string(),
  data: z.unknown().optional(),
});

/** A response from the server. */
export const ResponseFrameSchema = z.union([
  z.object({ jsonrpc: z.literal('2.0'), id: RequestIdSchema, result: z.record(z.string(), z.unknown()) }),
  z.object({ jsonrpc: z.literal('2.0'), id: RequestIdSchema.nullable(), error: ErrorObjectSchema }),
]);
/** A response from the server. */
export type ResponseFrame = z.infer<typeof ResponseFrameSchema>;

/** The `params` of an event frame (§2.2). */
export const EventEnvelopeSchema = z.object({
  type: z.string(),
  session_id: z.string(),
  payload: z.record(z.string(), z.unknown()),
  seq: z.number().int().optional(),
});
/** The `params` of an event frame. */
export type EventEnvelope = z.infer<typeof EventEnvelopeSchema>;

/** An event frame. */
export const EventFrameSchema = z.object({
  jsonrpc: z.literal('2.0'),
  method: z.literal('event'),
  params: EventEnvelopeSchema,
});
/** An event frame. */
export type EventFrame = z.infer<typeof EventFrameSchema>;

/** A request the server sends to a client (§6). */
export const ServerRequestFrameSchema = z.object({
  jsonrpc: z.literal('2.0'),
  id: z.string().regex(/^srq-[0-9a-f]{12}$/),
  method: z.enum(['approval', 'clarify', 'sudo', 'secret']),
  params: z.record(z.string(), z.unknown()).and(z.object({ session_id: z.string() })),
});
/** A request the server sends to a client. */
export type ServerRequestFrame = z.infer<typeof ServerRequestFrameSchema>;

/** A client's answer to a server request. */
export const ServerRequestAnswerSchema = z.union([
  z.object({ jsonrpc: z.literal('2.0').optional(), id: z.string(), result: z.unknown() }),
  z.object({ jsonrpc: z.literal('2.0').optional(), id: z.string(), error: ErrorObjectSchema }),
]);
/** A client's answer to a server request. */
export type ServerRequestAnswer = z.infer<typeof ServerRequestAnswerSchema>;

/** Builds a success response. */
export function successFrame(id: string | number, result: Record<string, unknown>): ResponseFrame {
  return { jsonrpc: '2.0', id, result };
}

/** Builds an error response. */
export function errorFrame(
  id: string | number | null,
  error: { code: number; message: string; data?: unknown },
): ResponseFrame {
  return { jsonrpc: '2.0', id, error };
}

/** Builds an event frame. */
export function eventFrame(params: EventEnvelope): EventFrame {
  return { jsonrpc: '2.0', method: 'event', params };
}
