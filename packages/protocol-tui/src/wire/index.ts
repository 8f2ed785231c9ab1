/**
 * Wire schemas, NDJSON framing and transports of the TUI gateway. Imports nothing from @hermes/core.
 *
 * @packageDocumentation
 */

/** The gateway protocol version this package speaks. */
export const GATEWAY_PROTOCOL_VERSION = 1;
