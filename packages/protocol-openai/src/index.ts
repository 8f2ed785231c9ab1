/**
 * @hermes/protocol-openai: the OpenAI-compatible HTTP API, Responses and runs API as a hono app.
 *
 * @packageDocumentation
 */
export { createOpenAIApp, type OpenAIApp, type OpenAIAppOptions } from './app.js';
export {
  BROWSER_CAPABILITIES,
  BROWSER_CONTROL_PROTOCOL,
  BrowserControlBroker,
  type BrowserControlOptions,
  principalOfKey,
} from './browser-control.js';
export { ApiError, type ApiErrorType } from './http-error.js';
export {
  DEFAULT_HTTP_TIMEOUTS,
  type HttpTimeouts,
  handleClientError,
  hardenHttpServer,
  httpServerOptions,
  refuseUpgrade,
  resolveHttpTimeouts,
} from './http-hardening.js';
export { BODY_LIMIT_BYTES, SECURITY_HEADERS } from './pipeline.js';
export {
  type ApiServerSettings,
  DEFAULT_SETTINGS,
  type ModelRouteAlias,
  resolveApiServerSettings,
  weakKeyReason,
} from './settings.js';
export { VERSION } from './version.js';
export { API_BASE_PATH } from './wire/index.js';
