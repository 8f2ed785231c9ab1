/**
 * @hermes/client-sdk: typed clients for the TUI gateway (stdio or WebSocket) and the runs API.
 * Depends only on the protocols' `/wire` entries, so installing it installs neither the core nor
 * any native module. This is the Node entry; a bundler targeting the browser gets the `browser` entry instead.
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
export {
  type GatewayConnectionOptions,
  isSpawnConnection,
  type SpawnConnectionOptions,
  type WebSocketConnectionOptions,
} from './gateway/connection.js';
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
export { GatewayClient, type GatewayClientOptions } from './gateway/node-client.js';
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
