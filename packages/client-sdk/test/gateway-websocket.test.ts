import { existsSync, mkdtempSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { delay, step, text, toolCall } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type AnyGatewayEvent,
  type ApprovalAnswer,
  ClientError,
  type ConnectionState,
  GatewayClient,
  type GatewayClientOptions,
  type ReconnectReport,
} from '../src/index.js';
import { Cleanups, makeHome, sleep, startModel, startWebSocketGateway, TcpProxy, until } from './support/fixtures.js';

const cleanups = new Cleanups();
afterEach(() => cleanups.run());

/** A WebSocket gateway (`hermes gateway --ws --port 0`) behind a TCP proxy the test controls. */
async function gatewayBehindProxy(script: Parameters<typeof startModel>[0]) {
  const home = makeHome(cleanups);
  const model = await startModel(script, cleanups);
  const gateway = await startWebSocketGateway(home, model.baseURL, cleanups);
  const proxy = new TcpProxy(gateway.port);
  await proxy.start();
  cleanups.add(() => proxy.stop());
  const url = `ws://127.0.0.1:${proxy.port}/api/ws`;
  return { gateway, proxy, url, model };
}

async function connect(options: GatewayClientOptions): Promise<GatewayClient> {
  const client = await GatewayClient.connect(options);
  cleanups.add(() => client.close());
  return client;
}

function recordStates(client: GatewayClient): ConnectionState[] {
  const states: ConnectionState[] = [];
  client.onStateChange((state) => states.push(state));
  return states;
}

describe('GatewayClient over a real loopback WebSocket', () => {
  it('reconnects after the connection is cut mid-turn, delivers every event once in seq order, and an approval open across a drop is answered after it', async () => {
    const target = mkdtempSync(join(tmpdir(), 'hermes-sdk-reconnect-'));
    const before = Array.from({ length: 10 }, (_, index) => [text(`p${index} `), delay(150)]).flat();
    const after = Array.from({ length: 5 }, (_, index) => [text(`a${index} `), delay(50)]).flat();
    const { proxy, url, gateway } = await gatewayBehindProxy([
      step(...before, toolCall('terminal', { command: `rm -rf ${target}` }, 'call_rm')),
      step(...after, text('done')),
    ]);
    let releaseApproval!: (answer: ApprovalAnswer) => void;
    const approvalAnswer = new Promise<ApprovalAnswer>((resolve) => {
      releaseApproval = resolve;
    });
    const approvals: { id: string; redelivered: boolean }[] = [];
    const client = await connect({
      connection: { url, token: gateway.token },
      reconnect: { initialDelayMs: 100, maxDelayMs: 400 },
      handlers: {
        approval: (_params, context) => {
          approvals.push({ id: context.id, redelivered: context.redelivered });
          return approvalAnswer;
        },
      },
    });
    const states = recordStates(client);
    const reports: ReconnectReport[] = [];
    client.onReconnect((report) => reports.push(report));
    const created = await client.session.create({});
    const sessionId = created.session_id;
    const events: AnyGatewayEvent[] = [];
    client.on('*', (event) => {
      if (event.session_id === sessionId) events.push(event);
    });
    const completed = client.waitForEvent('message.complete', { sessionId, timeoutMs: 60_000 });
    await client.prompt.submit({ session_id: sessionId, text: 'go' });

    // First outage while the reply streams: events keep being emitted (into the replay ring) meanwhile.
    await until(() => events.filter((event) => event.type === 'message.delta').length >= 3, 20_000, 'three deltas');
    await proxy.stop();
    await until(() => client.state === 'reconnecting', 10_000, 'reconnecting');
    await sleep(600);
    await proxy.start();
    await until(() => reports.length === 1, 20_000, 'first reconnect');

    // Second outage while the approval is open and unanswered.
    await until(() => approvals.length === 1, 20_000, 'the approval request');
    await proxy.stop();
    await until(() => client.state === 'reconnecting', 10_000, 'reconnecting again');
    await sleep(300);
    await proxy.start();
    await until(() => reports.length === 2, 20_000, 'second reconnect');

    // Answered only now, on the new connection; the handler ran once although the request was re-listed.
    releaseApproval({ choice: 'once' });
    const complete = await completed;
    expect(complete.payload.status).toBe('complete');
    expect(complete.payload.text).toContain('done');
    expect(existsSync(target)).toBe(false);
    expect(approvals).toHaveLength(1);
    const reattached = { previousSessionId: sessionId, sessionId, storedSessionId: created.stored_session_id };
    expect(reports.map((report) => report.sessions.map(({ replayedEvents: _, ...rest }) => rest))).toEqual([
      [reattached],
      [reattached],
    ]);
    // Deltas streamed while the first outage lasted reached the host only through the replay ring.
    expect(reports[0]?.sessions[0]?.replayedEvents).toBeGreaterThan(0);
    expect(reports.every((report) => !report.epochChanged)).toBe(true);
    expect(states).toEqual(['reconnecting', 'connected', 'reconnecting', 'connected']);
    expect(proxy.accepted).toBeGreaterThanOrEqual(3);

    // Exactly once, in order, with no gap: compare with everything the server recorded for the session.
    const seqs = events.map((event) => event.seq);
    expect(seqs).toEqual(seqs.map((_, index) => index + 1));
    const ring = await client.session.eventsSince({ session_id: sessionId, last_seen: 0 });
    expect(ring.truncated).toBe(false);
    const recorded = ring.events.filter((event) => Number(event.seq) <= (seqs.at(-1) ?? 0));
    expect(events.map((event) => [event.seq, event.type])).toEqual(recorded.map((event) => [event.seq, event.type]));
    expect(events.filter((event) => event.type === 'tool.complete')).toHaveLength(1);
    expect(events.filter((event) => event.type === 'message.complete')).toHaveLength(1);
    const cancel = events.find((event) => event.type === 'request.cancel');
    expect(cancel?.payload).toEqual({ id: approvals[0]?.id, method: 'approval', reason: 'resolved' });
  });

  it('after the gateway process restarts, sessions are resumed by stored id under a new runtime id', async () => {
    const home = makeHome(cleanups);
    const model = await startModel([step(text('first answer')), step(text('second answer'))], cleanups);
    const first = await startWebSocketGateway(home, model.baseURL, cleanups);
    const client = await connect({
      connection: { url: first.url, token: first.token },
      reconnect: { initialDelayMs: 100, maxDelayMs: 400 },
    });
    const reports: ReconnectReport[] = [];
    client.onReconnect((report) => reports.push(report));
    const created = await client.session.create({});
    await (await client.startTurn({ session_id: created.session_id, text: 'one' })).completed;
    const oldEpoch = client.replayEpoch;
    await first.stop();
    await until(() => client.state === 'reconnecting', 10_000, 'reconnecting');
    // The same port and token, a new process: a new replay_epoch and new runtime ids.
    await startWebSocketGateway(home, model.baseURL, cleanups, { port: first.port, token: first.token });
    await until(() => reports.length === 1, 30_000, 'the reconnect');
    const report = reports[0] as ReconnectReport;
    expect(report.epochChanged).toBe(true);
    expect(client.replayEpoch).not.toBe(oldEpoch);
    const moved = report.sessions[0];
    expect(moved?.previousSessionId).toBe(created.session_id);
    expect(moved?.storedSessionId).toBe(created.stored_session_id);
    expect(moved?.sessionId).not.toBe(created.session_id);
    expect(client.sessions.map((session) => session.sessionId)).toEqual([moved?.sessionId]);
    // The resumed session continues where it was, under its new runtime id.
    const turn = await client.startTurn({ session_id: moved?.sessionId as string, text: 'two' });
    expect((await turn.completed).text).toBe('second answer');
    const history = await client.session.history({ session_id: moved?.sessionId as string });
    expect(history.messages.map((message) => message.text)).toEqual(['one', 'first answer', 'two', 'second answer']);
  });

  it('a request whose answer does not arrive within timeoutMs rejects with request_timeout', async () => {
    const { proxy, url, gateway } = await gatewayBehindProxy([]);
    const client = await connect({ connection: { url, token: gateway.token }, heartbeat: false, reconnect: false });
    expect(await client.ping()).toEqual({ pong: true });
    proxy.stall();
    const error = await client.ping(undefined, { timeoutMs: 300 }).catch((caught: unknown) => caught);
    expect(ClientError.isInstance(error) && error.code).toBe('request_timeout');
  });

  it('the heartbeat detects a stalled connection and the client reconnects', async () => {
    const { proxy, url, gateway } = await gatewayBehindProxy([]);
    const client = await connect({
      connection: { url, token: gateway.token },
      heartbeat: { intervalMs: 100, timeoutMs: 300 },
      reconnect: { initialDelayMs: 50, maxDelayMs: 200 },
    });
    const states = recordStates(client);
    proxy.stall();
    await until(() => states.includes('reconnecting') && client.state === 'connected', 20_000, 'a reconnect');
    expect(proxy.accepted).toBeGreaterThanOrEqual(2);
    expect(await client.ping()).toEqual({ pong: true });
  });

  it('onReconnect and onStateChange passed to connect() are told about a reconnect', async () => {
    const { proxy, url, gateway } = await gatewayBehindProxy([step(text('hello'))]);
    const reports: ReconnectReport[] = [];
    const states: ConnectionState[] = [];
    const client = await connect({
      connection: { url, token: gateway.token },
      reconnect: { initialDelayMs: 50, maxDelayMs: 200 },
      onReconnect: (report) => reports.push(report),
      onStateChange: (state) => states.push(state),
    });
    const created = await client.session.create({});
    await proxy.stop();
    await until(() => client.state === 'reconnecting', 10_000, 'reconnecting');
    await proxy.start();
    await until(() => reports.length === 1, 20_000, 'the reconnect');
    expect(states).toEqual(['connected', 'reconnecting', 'connected']);
    expect(reports[0]?.epochChanged).toBe(false);
    expect(reports[0]?.sessions.map((session) => session.sessionId)).toEqual([created.session_id]);
    // The session still works on the new connection.
    const turn = await client.startTurn({ session_id: created.session_id, text: 'hi' });
    expect((await turn.completed).text).toBe('hello');
  });

  it('an option the client does not know is refused, not ignored', async () => {
    const options = { connection: { url: 'ws://127.0.0.1:1/api/ws', token: 't' }, onReconnected: () => {} };
    expect(() => new GatewayClient(options as GatewayClientOptions)).toThrow(
      /Unknown GatewayClient option "onReconnected"; the options are .*onReconnect/,
    );
  });

  it('a wrong token is refused with 4401 and connect rejects without retrying', async () => {
    const { url, proxy } = await gatewayBehindProxy([]);
    const error = await GatewayClient.connect({
      connection: { url, token: 'not-the-token' },
      reconnect: { initialDelayMs: 10 },
    }).catch((caught: unknown) => caught);
    expect(ClientError.isInstance(error) && error.code).toBe('unauthorized');
    expect(String((error as Error).message)).toMatch(/rejected the token \(close code 4401/);
    expect(proxy.accepted).toBe(1);
  });

  it('a refused connection names ECONNREFUSED, with the system error as cause', async () => {
    // A port that was just free: nothing listens there.
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const error = await GatewayClient.connect({
      connection: { url: `ws://127.0.0.1:${port}/api/ws`, token: 't' },
    }).catch((caught: unknown) => caught);
    expect(ClientError.isInstance(error) && error.code).toBe('connection_refused');
    expect(String((error as Error).message)).toContain('ECONNREFUSED');
    expect(String((error as Error).message)).not.toContain('1006');
    expect(((error as Error).cause as NodeJS.ErrnoException).code).toBe('ECONNREFUSED');
  });
});
