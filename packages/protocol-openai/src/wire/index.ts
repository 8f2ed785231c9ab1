/**
 * Request, response and stream-event schemas of the HTTP API. Imports nothing from @hermes/core.
 *
 * @packageDocumentation
 */

export {
  type ChatCompletion,
  type ChatCompletionChunk,
  ChatCompletionChunkSchema,
  type ChatCompletionRequest,
  ChatCompletionRequestSchema,
  ChatCompletionSchema,
  type ChatFinishReason,
  ChatFinishReasonSchema,
  type ChatRequestMessage,
  ChatRequestMessageSchema,
  type ChatUsage,
  ChatUsageSchema,
  type HermesOutcome,
  HermesOutcomeSchema,
} from './chat.js';
export { type ErrorEnvelope, ErrorEnvelopeSchema } from './errors.js';
export {
  OutputTextSchema,
  type ResponseObject,
  ResponseObjectSchema,
  type ResponseOutputItem,
  ResponseOutputItemSchema,
  type ResponseStreamEvent,
  ResponseStreamEventSchema,
  type ResponseUsage,
  ResponseUsageSchema,
} from './responses.js';
export {
  type ApprovalResponseRequest,
  ApprovalResponseRequestSchema,
  type RunCreated,
  RunCreatedSchema,
  type RunEvent,
  RunEventSchema,
  type RunStatusObject,
  RunStatusObjectSchema,
  type RunUsage,
  RunUsageSchema,
  type RunWireStatus,
  RunWireStatusSchema,
} from './runs.js';

/** The path prefix of the OpenAI-compatible routes. */
export const API_BASE_PATH = '/v1';
