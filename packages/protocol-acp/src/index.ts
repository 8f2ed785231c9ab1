/**
 * @hermes/protocol-acp: Hermes as an Agent Client Protocol agent over stdio.
 *
 * @packageDocumentation
 */

export { ACP_REQUEST_METHODS, type AcpAgent, type AcpAgentOptions, createAcpAgent } from './acp-agent.js';
export {
  type AcpCommand,
  type AcpCommandContext,
  type AcpCommandOutcome,
  type AcpCommandRegistry,
  builtinAcpCommands,
} from './acp-commands.js';
export {
  answerInitializeEarly,
  type EarlyInitialize,
  type InitializeCapabilities,
  initializeResponse,
  readInitializeCapabilities,
} from './initialize.js';
export { type AcpCheckLine, type AcpCheckOptions, runAcpSelfCheck } from './self-check.js';
export { type AcpByteStreams, type ServeAcpOptions, serveAcp } from './serve-acp.js';
export { VERSION } from './version.js';
