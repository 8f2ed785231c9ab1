/**
 * @hermes/protocol-tui: the TUI gateway (JSON-RPC over stdio and WebSocket).
 *
 * @packageDocumentation
 */
export { createGateway, type Gateway, type GatewayOptions } from './gateway.js';
export { GATEWAY_TICKET_LIFETIME_MS, type GatewayTicket, GatewayTicketStore } from './gateway-tickets.js';
export type { RelayBus } from './instance-relay.js';
export { type ServeStdioOptions, serveStdio } from './stdio.js';
export { VERSION } from './version.js';
export {
  admit,
  attachGatewayWebSocket,
  type GatewayWebSocketOptions,
  generateGatewayToken,
  isLoopbackHost,
  tokensEqual,
} from './websocket-endpoint.js';
export {
  ErrorCode,
  GATEWAY_PROTOCOL_VERSION,
  GATEWAY_SUBPROTOCOL,
  GATEWAY_TICKET_PROTOCOL_PREFIX,
  RpcError,
  type Transport,
} from './wire/index.js';
