/**
 * The gateway wire without its schemas: error codes, NDJSON framing, the WebSocket transport and the ticket
 * subprotocol. It imports no zod and no Node module, so a browser bundle of a client stays small; `./wire` has all
 * of this plus the schemas.
 *
 * @packageDocumentation
 */

export { CloseCode, ErrorCode } from './error-codes.js';
export { encodeFrame, type InboundFrame, parseFrameText } from './ndjson.js';
export { RpcError } from './rpc-error.js';
export { GATEWAY_SUBPROTOCOL, GATEWAY_TICKET_PROTOCOL_PREFIX } from './subprotocol.js';
export type { Transport } from './transport.js';
export { createWebSocketTransport, type WebSocketLike, type WebSocketTransportOptions } from './websocket-transport.js';
