/**
 * Request, response and stream-event schemas of the HTTP API. Imports nothing from @hermes/core.
 *
 * @packageDocumentation
 */

/** The path prefix of the OpenAI-compatible routes. */
export const API_BASE_PATH = '/v1';
