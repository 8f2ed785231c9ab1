import WebSocket from 'ws';
import { cleanups, type StartedServer } from './server-process.js';

/** A gateway frame as the tests read it. */
export interface Frame {
  jsonrpc?: '2.0';
  id?: string | number;
  method?: string;
  params?: Record<string, unknown> & {
    type?: string;
    session_id?: string;
    payload?: Record<string, unknown>;
    seq?: number;
  };
  result?: Record<string, unknown>;
  error?: { code: number; message: string };
}

/**
 * A raw WebSocket client of an apps/server instance's gateway, keeping every frame it receives; it resolves once
 * `gateway.ready` has arrived and is closed after the test.
 */
export async function connectGateway(server: StartedServer, token: string) {
  const socket = new WebSocket(`${server.url.replace('http', 'ws')}/api/ws?token=${token}`);
  cleanups.push(() => socket.close());
  const frames: Frame[] = [];
  socket.on('message', (data: Buffer) => frames.push(JSON.parse(data.toString()) as Frame));
  let next = 0;
  /** The first frame that matches, waited for (bounded, generous: this is not a timing assertion). */
  const waitFor = async (predicate: (frame: Frame) => boolean, what: string, timeoutMs = 60_000): Promise<Frame> => {
    const started = Date.now();
    for (;;) {
      const found = frames.find(predicate);
      if (found) return found;
      if (Date.now() - started > timeoutMs)
        throw new Error(`${what} not received; got ${JSON.stringify(frames).slice(-1500)}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };
  const call = async (method: string, params: Record<string, unknown>): Promise<Frame> => {
    next += 1;
    const id = next;
    socket.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    return waitFor((frame) => frame.id === id && frame.method === undefined, `the answer to ${method}`);
  };
  /** The events of `type` on a session, in arrival order. */
  const events = (sessionId: string, type: string) =>
    frames.filter(
      (frame) => frame.method === 'event' && frame.params?.session_id === sessionId && frame.params?.type === type,
    );
  await waitFor((frame) => frame.params?.type === 'gateway.ready', 'gateway.ready');
  return { socket, frames, waitFor, call, events, send: (frame: unknown) => socket.send(JSON.stringify(frame)) };
}
