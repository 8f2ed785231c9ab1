/**
 * @hermes/protocol-tui: the TUI gateway (JSON-RPC over stdio and WebSocket).
 *
 * @packageDocumentation
 */
export { VERSION } from './version.js';
export { GATEWAY_PROTOCOL_VERSION } from './wire/index.js';
