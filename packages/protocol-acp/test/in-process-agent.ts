import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '@hermes/core';
import { createTestHost, type TestHost, type TestHostOptions } from '@hermes/core/testing';
import { createAcpAgent, serveAcp } from '../src/index.js';

// biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary message fields without narrowing each one.
export type Message = Record<string, any>;

/**
 * An ACP agent served in this process over NDJSON streams, so a test can reach its host and registry, with a
 * client that reads the agent's output as it comes or one chunk every `readEveryMs`. Its clean-up goes on
 * `cleanups`. `initialize` and `session/new` are done.
 */
export async function inProcessAgent(
  cleanups: (() => Promise<void> | void)[],
  options: { host?: TestHostOptions; readEveryMs?: number } = {},
) {
  const project = await mkdtemp(join(tmpdir(), 'hermes-acp-in-process-'));
  cleanups.push(() => rm(project, { recursive: true, force: true }));
  let host: TestHost | undefined;
  const agent = createAcpAgent({
    createHost: async () => {
      host = await createTestHost(options.host);
      return host;
    },
    version: '0.0.0-test',
    logger: silentLogger,
  });
  const toAgent = new TransformStream<Uint8Array, Uint8Array>();
  const fromAgent = new TransformStream<Uint8Array, Uint8Array>();
  const served = serveAcp(agent, { input: toAgent.readable, output: fromAgent.writable });
  const writer = toAgent.writable.getWriter();
  const received: Message[] = [];
  const waiters = new Set<() => void>();
  void (async () => {
    const decoder = new TextDecoder();
    let buffer = '';
    for await (const chunk of fromAgent.readable) {
      buffer += decoder.decode(chunk, { stream: true });
      for (let newline = buffer.indexOf('\n'); newline >= 0; newline = buffer.indexOf('\n')) {
        const line = buffer.slice(0, newline).trim();
        buffer = buffer.slice(newline + 1);
        if (line) received.push(JSON.parse(line) as Message);
      }
      for (const waiter of [...waiters]) waiter();
      if (options.readEveryMs) await new Promise((resolve) => setTimeout(resolve, options.readEveryMs));
    }
  })();
  const waitFor = (predicate: (message: Message) => boolean): Promise<Message> =>
    new Promise((resolve) => {
      const check = () => {
        const found = received.find(predicate);
        if (!found) return;
        waiters.delete(check);
        resolve(found);
      };
      waiters.add(check);
      check();
    });
  let nextId = 0;
  /** Sends a request and resolves with its whole answer (result or error). */
  const send = async (method: string, params: unknown): Promise<Message> => {
    const id = ++nextId;
    await writer.write(new TextEncoder().encode(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`));
    return waitFor((message) => message.id === id && !('method' in message));
  };
  /** Sends a request and resolves with its result; an error answer throws. */
  const request = async (method: string, params: unknown): Promise<Message> => {
    const answer = await send(method, params);
    if (answer.error) throw new Error(JSON.stringify(answer.error));
    return answer.result as Message;
  };
  cleanups.push(async () => {
    await writer.close().catch(() => undefined);
    await served.catch(() => undefined);
    await host?.dispose();
  });
  await request('initialize', { protocolVersion: 1, clientCapabilities: {} });
  const session = await request('session/new', { cwd: project, mcpServers: [] });
  return {
    agent,
    project,
    host: () => host as TestHost,
    sessionId: session.sessionId as string,
    received,
    waitFor,
    send,
    request,
  };
}
