/**
 * Wire schemas, NDJSON framing and transports of the TUI gateway. Imports nothing from @hermes/core.
 *
 * @packageDocumentation
 */

/** The gateway protocol version this package speaks. */
export const GATEWAY_PROTOCOL_VERSION = 1;

export { CloseCode, ErrorCode } from './error-codes.js';
export { createLinkedPair, type LinkedPair } from './memory-transport.js';
export {
  createNdjsonDecoder,
  createNdjsonLineReader,
  DEFAULT_MAX_LINE_BYTES,
  EncodedFrame,
  encodeFrame,
  type InboundFrame,
  type NdjsonLineReader,
  PARSE_ERROR_FRAME,
  parseFrameText,
} from './ndjson.js';
export { RpcError } from './rpc-error.js';
export {
  type EventPayload,
  EventPayloadSchemas,
  type EventType,
  GatewayReadyPayloadSchema,
  MessageCompletePayloadSchema,
  ServerRequestParamsSchemas,
} from './schemas/events.js';
export {
  ErrorObjectSchema,
  type EventEnvelope,
  EventEnvelopeSchema,
  type EventFrame,
  EventFrameSchema,
  errorFrame,
  eventFrame,
  type RequestFrame,
  RequestFrameSchema,
  RequestIdSchema,
  type ResponseFrame,
  ResponseFrameSchema,
  type ServerRequestAnswer,
  ServerRequestAnswerSchema,
  type ServerRequestFrame,
  ServerRequestFrameSchema,
  successFrame,
} from './schemas/frames.js';
export {
  acceptedKeys,
  isMethodName,
  type MethodName,
  type MethodParams,
  MethodParamsSchemas,
  MethodResultSchemas,
  SeedMessageSchema,
  type SessionSnapshot,
  SessionSnapshotSchema,
  SLOW_METHODS,
} from './schemas/methods.js';
export {
  type OpenRequest,
  OpenRequestSchema,
  type PendingApproval,
  PendingApprovalSchema,
  type SessionLiveInfo,
  SessionLiveInfoSchema,
  type SubagentPayload,
  SubagentPayloadSchema,
  type TranscriptMessage,
  TranscriptMessageSchema,
  type Usage,
  UsageSchema,
} from './schemas/shared.js';
export {
  type ByteSink,
  type ByteSource,
  createStdioTransport,
  type StdioTransportOptions,
} from './stdio-transport.js';
export { GATEWAY_SUBPROTOCOL, GATEWAY_TICKET_PROTOCOL_PREFIX } from './subprotocol.js';
export type { Transport } from './transport.js';
export { createWebSocketTransport, type WebSocketLike, type WebSocketTransportOptions } from './websocket-transport.js';
