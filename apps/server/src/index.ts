/**
 * @hermes/server: the HTTP API and the gateway WebSocket on one port, for deployment.
 *
 * @packageDocumentation
 */
export { VERSION } from './version.js';
