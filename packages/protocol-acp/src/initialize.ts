/**
 * The `initialize` response, also published alone as `@hermes/protocol-acp/initialize`: an entry
 * that imports nothing at run time, so `hermes acp` can answer an editor's `initialize` before it
 * loads the ACP SDK and its ~300 zod schemas (docs/adr/0019).
 *
 * @module
 */
import type { InitializeResponse } from '@agentclientprotocol/sdk/unstable';

/** The client capabilities the agent reads from `initialize` (spec/acp.md §2.2). */
export interface InitializeCapabilities {
  readTextFile: boolean;
  writeTextFile: boolean;
  terminal: boolean;
  /** The client can run `hermes acp --setup` in a terminal (the unstable `auth.terminal`). */
  terminalAuth: boolean;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Reads the capabilities from `initialize`'s `clientCapabilities`. A field of the wrong type reads
 * as `false`, as the SDK's schema reads it (each capability defaults on error).
 */
export function readInitializeCapabilities(clientCapabilities: unknown): InitializeCapabilities {
  const capabilities = isObject(clientCapabilities) ? clientCapabilities : {};
  const fs = isObject(capabilities.fs) ? capabilities.fs : {};
  const auth = isObject(capabilities.auth) ? capabilities.auth : {};
  return {
    readTextFile: fs.readTextFile === true,
    writeTextFile: fs.writeTextFile === true,
    terminal: capabilities.terminal === true,
    terminalAuth: auth.terminal === true,
  };
}

/** The agent's `initialize` result for a client with `capabilities` (spec/acp.md §2.2). */
export function initializeResponse(capabilities: InitializeCapabilities, version: string): InitializeResponse {
  return {
    protocolVersion: 1,
    agentCapabilities: {
      loadSession: true,
      promptCapabilities: { image: true, audio: false, embeddedContext: true },
      mcpCapabilities: { http: true, sse: false },
      sessionCapabilities: { list: {}, resume: {}, close: {}, fork: {} },
    },
    agentInfo: { name: 'hermes-agent', title: 'Hermes Agent', version },
    authMethods: [
      {
        id: 'api-key-env',
        name: 'API key from environment',
        description: 'Use the provider API key from the environment or the Hermes .env file',
      },
      ...(capabilities.terminalAuth
        ? [
            {
              id: 'hermes-setup',
              name: 'Set up Hermes in a terminal',
              type: 'terminal' as const,
              args: ['--setup'],
            },
          ]
        : []),
    ],
  };
}

/** An `initialize` request answered before the SDK has loaded. */
export interface EarlyInitialize {
  /** The request's id; the SDK's own answer to it, when the line is replayed to it, is dropped. */
  id: string | number;
  /** The NDJSON response line, newline included. */
  reply: string;
}

/**
 * Answers the first line a client sent when it is an `initialize` request the SDK accepts: a
 * JSON-RPC 2.0 request with a string or number id whose params are an object with an integer
 * `protocolVersion` from 0 to 65535 (the SDK's schema accepts any other field, reading a malformed
 * one as its default). Anything else returns `undefined` and is left to the SDK, which answers it
 * as it always has, errors included.
 */
export function answerInitializeEarly(line: string, version: string): EarlyInitialize | undefined {
  let message: unknown;
  try {
    message = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (!isObject(message) || message.jsonrpc !== '2.0' || message.method !== 'initialize') return undefined;
  const id = message.id;
  if (!(typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)))) return undefined;
  const params = message.params;
  if (!isObject(params)) return undefined;
  const protocolVersion = params.protocolVersion;
  if (!(Number.isInteger(protocolVersion) && (protocolVersion as number) >= 0 && (protocolVersion as number) <= 65535))
    return undefined;
  const result = initializeResponse(readInitializeCapabilities(params.clientCapabilities), version);
  return { id, reply: `${JSON.stringify({ jsonrpc: '2.0', id, result })}\n` };
}
