import { silentLogger } from '@hermes/core';
import { describe, expect, it } from 'vitest';
import { createAcpAgent } from './acp-agent.js';
import { answerInitializeEarly } from './initialize.js';
import { serveAcp } from './serve-acp.js';

/** Sends `line` to an agent served by the SDK and resolves with its first reply line. */
async function sdkReply(line: string): Promise<string> {
  const agent = createAcpAgent({
    createHost: () => Promise.reject(new Error('no host in this test')),
    version: '9.9.9',
    logger: silentLogger,
  });
  const toAgent = new TransformStream<Uint8Array, Uint8Array>();
  const fromAgent = new TransformStream<Uint8Array, Uint8Array>();
  const served = serveAcp(agent, { input: toAgent.readable, output: fromAgent.writable });
  const writer = toAgent.writable.getWriter();
  await writer.write(new TextEncoder().encode(`${line}\n`));
  const decoder = new TextDecoder();
  let text = '';
  for await (const chunk of fromAgent.readable) {
    text += decoder.decode(chunk, { stream: true });
    if (text.includes('\n')) break;
  }
  await writer.close();
  await served;
  return text.slice(0, text.indexOf('\n') + 1);
}

const request = (params: unknown, id: unknown = 1) =>
  JSON.stringify({ jsonrpc: '2.0', id, method: 'initialize', params });

describe('answerInitializeEarly', () => {
  it.each([
    ['no capabilities', request({ protocolVersion: 1 })],
    [
      'every capability',
      request({
        protocolVersion: 1,
        clientCapabilities: {
          fs: { readTextFile: true, writeTextFile: true },
          terminal: true,
          auth: { terminal: true },
        },
        clientInfo: { name: 'zed', version: '1.0' },
      }),
    ],
    [
      'malformed capabilities, read as their defaults',
      request({
        protocolVersion: 1,
        clientCapabilities: { fs: 'yes', terminal: 'yes', auth: { terminal: 'yes' } },
        clientInfo: 7,
      }),
    ],
    ['capabilities that are not an object', request({ protocolVersion: 2, clientCapabilities: [true] })],
    ['a string id and unknown fields', request({ protocolVersion: 0, extra: { any: 1 } }, 'init-1')],
  ])('answers exactly as the SDK-served agent does: %s', async (_name, line) => {
    const early = answerInitializeEarly(line, '9.9.9');
    expect(early).toBeDefined();
    expect(JSON.parse(early?.reply ?? '')).toEqual(JSON.parse(await sdkReply(line)));
  });

  it.each([
    ['a missing protocol version', request({})],
    ['a protocol version out of range', request({ protocolVersion: 70000 })],
    ['a fractional protocol version', request({ protocolVersion: 1.5 })],
    ['no params', JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize' })],
    ['a null id', request({ protocolVersion: 1 }, null)],
    ['another method', JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'session/list', params: {} })],
    ['a notification', JSON.stringify({ jsonrpc: '2.0', method: 'initialize', params: { protocolVersion: 1 } })],
    ['a line that is not JSON', '{"jsonrpc":'],
  ])('leaves %s to the SDK', (_name, line) => {
    expect(answerInitializeEarly(line, '9.9.9')).toBeUndefined();
  });

  it('the SDK rejects a protocol version the early check refuses', async () => {
    const reply = JSON.parse(await sdkReply(request({ protocolVersion: 70000 })));
    expect(reply.error?.code).toBe(-32602);
  });
});
