/**
 * @hermes/protocol-acp: Hermes as an Agent Client Protocol agent over stdio.
 *
 * @packageDocumentation
 */
export { VERSION } from './version.js';
