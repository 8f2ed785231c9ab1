import { EventEnvelopeSchema, GatewayReadyPayloadSchema, ServerRequestParamsSchemas } from '@hermes/protocol-tui/wire';
import type { FrameChecks } from './frame-checks.js';
import type { ServerRequestMethod } from './types.js';

/** The Node client's checks: the wire's own zod schemas, whose errors say exactly which field failed. */
export const zodFrameChecks: FrameChecks = {
  envelopeIssue: (params) => EventEnvelopeSchema.safeParse(params).error,
  readyPayloadIssue: (payload) => GatewayReadyPayloadSchema.safeParse(payload).error,
  serverRequestIssue: (method, params) => ServerRequestParamsSchemas[method].safeParse(params).error,
  isServerRequestMethod: (method): method is ServerRequestMethod => Object.hasOwn(ServerRequestParamsSchemas, method),
};
