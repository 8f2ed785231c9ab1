/**
 * @hermes/client-sdk: typed clients for the TUI gateway and the runs API.
 *
 * @packageDocumentation
 */
export { VERSION } from './version.js';
