/**
 * @hermes/protocol-openai: the OpenAI-compatible HTTP API, Responses and runs API as a hono app.
 *
 * @packageDocumentation
 */
export { VERSION } from './version.js';
export { API_BASE_PATH } from './wire/index.js';
