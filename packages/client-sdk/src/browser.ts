/**
 * @hermes/client-sdk for browsers and webviews (the `browser` export condition): the same clients with the global
 * `WebSocket` and `fetch`, a ticket instead of the API key in the gateway URL, and no Node module and no zod, so the
 * bundle stays small (ADR 0044).
 *
 * @packageDocumentation
 */

export type {
  RunCreated,
  RunEvent,
  RunStatusObject,
  RunUsage,
  RunWireStatus,
} from '@hermes/protocol-openai/wire';
// The wire's own types, re-exported so a host needs no second import for results and payloads.
export type {
  EventPayload,
  PendingApproval,
  SessionLiveInfo,
  SessionSnapshot,
  TranscriptMessage,
  Usage,
} from '@hermes/protocol-tui/wire';
export { ClientError, type ClientErrorCode, RpcError } from './errors.js';
export { GatewayClient, type GatewayClientOptions } from './gateway/browser-client.js';
export { type BrowserConnectionOptions, defaultTicketUrl } from './gateway/browser-connection.js';
export {
  type EventStreamOptions,
  GatewayClientBase,
  type HeartbeatOptions,
  type ReconnectOptions,
  type ReconnectReport,
  type ResyncNotice,
  type StartedTurn,
  type TrackedSession,
  type WaitForEventOptions,
} from './gateway/gateway-client.js';
export type {
  AnyGatewayEvent,
  ApprovalAnswer,
  ApprovalChoice,
  ClarifyAnswer,
  ConnectionState,
  GatewayEvent,
  GatewayEventType,
  GatewayMethod,
  GatewayMethodParams,
  GatewayMethodResult,
  MethodArguments,
  MethodCall,
  OpenRequest,
  RequestOptions,
  ServerRequestAnswers,
  ServerRequestContext,
  ServerRequestHandler,
  ServerRequestHandlers,
  ServerRequestMethod,
  ServerRequestParams,
  ValueAnswer,
} from './gateway/types.js';
export {
  type ApprovalResult,
  type CreatedRun,
  type CreateRunOptions,
  type CreateRunParams,
  type PollOptions,
  type RunEventsOptions,
  RunsApiError,
  RunsClient,
  type RunsClientOptions,
  type RunsRequestOptions,
  type SteerResult,
  TERMINAL_RUN_EVENTS,
  TERMINAL_RUN_STATUSES,
} from './runs/runs-client.js';
export { readServerSentEvents, type SseItem } from './runs/sse.js';
export { VERSION } from './version.js';
