import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defaultConfig, systemClock } from '@hermes/core';
import { createTestHost, type ModelScript, startScriptedOpenAIServer, type TestHost } from '@hermes/core/testing';
import WebSocket from 'ws';
import { createGateway, type Gateway, type GatewayOptions } from '../../src/index.js';
import { createLinkedPair } from '../../src/wire/index.js';

/** A frame as received. */
// biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary frame fields without narrowing each one.
export type Frame = Record<string, any>;

/**
 * A test client over any wire: records every frame, answers nothing by itself, and offers
 * request/response and bounded waits (no timing assertions).
 */
export class TestClient {
  readonly frames: Frame[] = [];
  private waiters: { predicate: (frame: Frame) => boolean; resolve: (frame: Frame) => void }[] = [];
  private nextId = 1;
  closed = false;
  onClose: (() => void)[] = [];

  constructor(private readonly sendText: (text: string) => void) {}

  /** Feeds one received frame. */
  push(frame: Frame): void {
    this.frames.push(frame);
    for (const waiter of [...this.waiters]) {
      if (waiter.predicate(frame)) {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        waiter.resolve(frame);
      }
    }
  }

  markClosed(): void {
    this.closed = true;
    for (const callback of this.onClose) callback();
  }

  send(message: unknown): void {
    this.sendText(typeof message === 'string' ? message : JSON.stringify(message));
  }

  /** Sends a request and waits for its response frame. */
  async call(method: string, params?: Record<string, unknown>, timeoutMs = 10_000): Promise<Frame> {
    const id = `t${this.nextId++}`;
    const waiting = this.waitFor(
      (frame) => frame.id === id && !('method' in frame),
      timeoutMs,
      `response to ${method}`,
    );
    this.send(params === undefined ? { jsonrpc: '2.0', id, method } : { jsonrpc: '2.0', id, method, params });
    return waiting;
  }

  /** The result of a request; throws when it was an error. */
  async result(method: string, params?: Record<string, unknown>): Promise<Frame> {
    const frame = await this.call(method, params);
    if (frame.error) throw new Error(`${method} failed: ${JSON.stringify(frame.error)}`);
    return frame.result;
  }

  /** Waits for a frame (already received or future). */
  waitFor(predicate: (frame: Frame) => boolean, timeoutMs = 10_000, label = 'frame', fromIndex = 0): Promise<Frame> {
    const existing = this.frames.slice(fromIndex).find(predicate);
    if (existing) return Promise.resolve(existing);
    return new Promise((resolvePromise, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((waiter) => waiter.resolve !== done);
        reject(new Error(`timed out waiting for ${label}`));
      }, timeoutMs);
      const done = (frame: Frame) => {
        clearTimeout(timer);
        resolvePromise(frame);
      };
      this.waiters.push({ predicate, resolve: done });
    });
  }

  /** Waits for a future frame only (received after this call). */
  next(predicate: (frame: Frame) => boolean, timeoutMs = 10_000, label = 'frame'): Promise<Frame> {
    return this.waitFor(predicate, timeoutMs, label, this.frames.length);
  }

  /** Events of a type (optionally of one session), in order. */
  events(type?: string, sessionId?: string): Frame[] {
    return this.frames
      .filter((frame) => frame.method === 'event')
      .map((frame) => frame.params)
      .filter(
        (params) =>
          (type === undefined || params.type === type) && (sessionId === undefined || params.session_id === sessionId),
      );
  }

  /** Waits for an event. */
  event(type: string, sessionId?: string, match: (params: Frame) => boolean = () => true, timeoutMs = 10_000) {
    return this.waitFor(
      (frame) =>
        frame.method === 'event' &&
        frame.params.type === type &&
        (sessionId === undefined || frame.params.session_id === sessionId) &&
        match(frame.params),
      timeoutMs,
      `event ${type}`,
    ).then((frame) => frame.params as Frame);
  }

  /** Waits for the nth (1-based) event of a type. */
  async nthEvent(type: string, count: number, sessionId?: string, timeoutMs = 10_000): Promise<Frame> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const list = this.events(type, sessionId);
      if (list.length >= count) return list[count - 1] as Frame;
      await sleep(10);
    }
    throw new Error(`timed out waiting for ${count} × ${type}`);
  }

  /** Server requests received. */
  serverRequests(method?: string): Frame[] {
    return this.frames.filter(
      (frame) =>
        typeof frame.id === 'string' &&
        frame.id.startsWith('srq-') &&
        typeof frame.method === 'string' &&
        (method === undefined || frame.method === method),
    );
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolvePromise) => setTimeout(resolvePromise, ms));
}

/** A gateway on a scripted test host, plus linked-pair clients. */
export interface GatewayFixture {
  host: TestHost;
  gateway: Gateway;
  /** A new in-memory client; `kind: 'websocket'` behaves like a WebSocket for capabilities and heartbeat. */
  connect(kind?: 'memory' | 'websocket' | 'stdio'): Promise<TestClient & { close(): Promise<void> }>;
  dispose(): Promise<void>;
}

/** The default toolsets plus those of `tools`. */
function withToolsetsOf(tools: { toolset: string }[]): string[] {
  return [...new Set([...defaultConfig().toolsets, ...tools.map((tool) => tool.toolset)])];
}

export async function createFixture(
  options: {
    script?: ModelScript;
    scripts?: Record<string, ModelScript>;
    gateway?: Partial<GatewayOptions>;
    config?: Record<string, unknown>;
    /** Written as HERMES_HOME/config.yaml before the host starts (protocol-owned sections live there). */
    configYaml?: string;
    storage?: 'memory' | 'file';
    /** Connect the configured MCP servers when the host starts (the test host does not by default). */
    connectMcp?: boolean;
    tools?: Parameters<typeof createTestHost>[0] extends infer O ? (O extends { tools?: infer T } ? T : never) : never;
  } = {},
): Promise<GatewayFixture> {
  let homeDir: string | undefined;
  if (options.configYaml !== undefined) {
    homeDir = mkdtempSync(join(tmpdir(), 'hermes-gw-home-'));
    writeFileSync(join(homeDir, 'config.yaml'), options.configYaml);
  }
  const host = await createTestHost({
    ...(homeDir ? { homeDir } : {}),
    ...(options.tools ? { tools: options.tools } : {}),
    script: options.script ?? [],
    ...(options.scripts ? { scripts: options.scripts } : {}),
    clock: systemClock as never,
    // Automatic titling would consume scripted steps concurrently with turns; tests opt in explicitly.
    // The toolsets of the tools a test registers are enabled, as a user would list them in `toolsets`.
    config: {
      session: { auto_title: false },
      ...(options.tools ? { toolsets: withToolsetsOf(options.tools as { toolset: string }[]) } : {}),
      ...(options.config ?? {}),
    } as never,
    ...(options.storage ? { storage: options.storage } : {}),
    ...(options.connectMcp ? { connectMcp: true } : {}),
  });
  const gateway = createGateway({ host, buildDelayMs: 5, ...options.gateway });
  const clients: { close(): Promise<void> }[] = [];
  return {
    host,
    gateway,
    async connect(kind = 'memory') {
      const pair = createLinkedPair({ kind });
      const client = new TestClient((text) => pair.client.sendText(text)) as TestClient & { close(): Promise<void> };
      client.close = async () => {
        await pair.client.close();
      };
      void (async () => {
        const reader = pair.client.readable.getReader();
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          client.push(value as Frame);
        }
        client.markClosed();
      })();
      gateway.connect(pair.server);
      await client.waitFor((frame) => frame.params?.type === 'gateway.ready');
      clients.push(client);
      return client;
    },
    async dispose() {
      for (const client of clients) await client.close();
      await gateway.shutdown().catch(() => {});
      await host.dispose().catch(() => {});
      if (homeDir) rmSync(homeDir, { recursive: true, force: true });
    },
  };
}

/** Connects a real WebSocket client; resolves once open (frames recorded from the start). */
export function connectWebSocket(
  url: string,
  options: WebSocket.ClientOptions = {},
): Promise<TestClient & { socket: WebSocket; closeCode: Promise<number> }> {
  return new Promise((resolvePromise, reject) => {
    const socket = new WebSocket(url, options);
    const client = new TestClient((text) => socket.send(text)) as TestClient & {
      socket: WebSocket;
      closeCode: Promise<number>;
    };
    client.socket = socket;
    client.closeCode = new Promise((resolveCode) => {
      socket.on('close', (code) => {
        client.markClosed();
        resolveCode(code);
      });
    });
    socket.on('message', (data) => client.push(JSON.parse(String(data)) as Frame));
    socket.on('open', () => resolvePromise(client));
    socket.on('error', reject);
  });
}

const here = fileURLToPath(new URL('.', import.meta.url));
/** apps/cli/dist/bin.js */
export const CLI_BIN = resolve(here, '../../../../apps/cli/dist/bin.js');

/** A spawned `hermes gateway` child with a stdout line reader. */
export interface ChildGateway {
  child: ChildProcessWithoutNullStreams;
  client: TestClient;
  /** Every stdout line, raw. */
  lines: string[];
  stderr: () => string;
  exit: Promise<number | null>;
  home: string;
  dispose(): Promise<void>;
}

export function spawnGateway(baseURL: string, args: string[] = [], env: Record<string, string> = {}): ChildGateway {
  const home = mkdtempSync(join(tmpdir(), 'hermes-gw-'));
  // Automatic titling would consume scripted steps concurrently with turns.
  writeFileSync(join(home, 'config.yaml'), 'session:\n  auto_title: false\n');
  const child = spawn(process.execPath, [CLI_BIN, 'gateway', ...args], {
    env: {
      PATH: process.env.PATH ?? '',
      HOME: home,
      HERMES_HOME: home,
      HERMES_MODEL: 'custom:scripted',
      HERMES_BASE_URL: baseURL,
      HERMES_API_KEY: 'test-key',
      ...env,
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  // Writes racing the child's exit fail with EPIPE; the exit itself is what tests assert.
  child.stdin.on('error', () => {});
  const client = new TestClient((text) => {
    if (child.stdin.writable) child.stdin.write(`${text}\n`);
  });
  let buffer = '';
  child.stdout.on('data', (chunk: Buffer) => {
    buffer += chunk.toString('utf8');
    for (;;) {
      const index = buffer.indexOf('\n');
      if (index < 0) break;
      const line = buffer.slice(0, index);
      buffer = buffer.slice(index + 1);
      lines.push(line);
      try {
        client.push(JSON.parse(line) as Frame);
      } catch {
        client.push({ unparsable: line });
      }
    }
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  const exit = new Promise<number | null>((resolveExit) => child.on('exit', (code) => resolveExit(code)));
  return {
    child,
    client,
    lines,
    stderr: () => stderr,
    exit,
    home,
    async dispose() {
      if (child.exitCode === null) child.kill('SIGKILL');
      await exit;
      rmSync(home, { recursive: true, force: true });
    },
  };
}

/**
 * A `hermes gateway` child on a scripted model that plays `script`, ready, with one new session whose first prompt
 * (`prompt`, default `go`) is submitted. The model server and the child are disposed through `cleanups`.
 */
export async function promptedChildGateway(
  script: ModelScript,
  cleanups: (() => Promise<void>)[],
  options: { prompt?: string; readyTimeoutMs?: number } = {},
): Promise<{ gateway: ChildGateway; client: TestClient; sessionId: string }> {
  const server = await startScriptedOpenAIServer({ script, apiKey: 'test-key' });
  cleanups.push(() => server.close());
  const gateway = spawnGateway(server.baseURL);
  cleanups.push(() => gateway.dispose());
  const client = gateway.client;
  await client.waitFor((frame) => frame.params?.type === 'gateway.ready', options.readyTimeoutMs ?? 30_000);
  const created = await client.result('session.create', {});
  await client.result('prompt.submit', { session_id: created.session_id, text: options.prompt ?? 'go' });
  return { gateway, client, sessionId: created.session_id as string };
}

/** A gateway fixture served over a real loopback WebSocket. */
export interface WebSocketFixture extends GatewayFixture {
  port: number;
  token: string;
  url(token?: string | null): string;
  ws(options?: WebSocket.ClientOptions, token?: string | null): ReturnType<typeof connectWebSocket>;
  /** Connects and waits for gateway.ready. */
  open(): Promise<TestClient & { socket: WebSocket; closeCode: Promise<number> }>;
}

export async function createWebSocketFixture(
  options: Parameters<typeof createFixture>[0] = {},
  endpoint: { allowedHosts?: string[]; tickets?: import('../../src/index.js').GatewayTicketStore } = {},
): Promise<WebSocketFixture> {
  const { createServer } = await import('node:http');
  const { attachGatewayWebSocket, generateGatewayToken } = await import('../../src/index.js');
  const base = await createFixture(options);
  const server = createServer();
  const token = generateGatewayToken();
  const detach = attachGatewayWebSocket(server, { gateway: base.gateway, token, ...endpoint });
  await new Promise<void>((resolvePromise) => server.listen(0, '127.0.0.1', () => resolvePromise()));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const sockets: WebSocket[] = [];
  const url = (given: string | null = token) =>
    given === null
      ? `ws://127.0.0.1:${port}/api/ws`
      : `ws://127.0.0.1:${port}/api/ws?token=${encodeURIComponent(given)}`;
  const fixture: WebSocketFixture = {
    ...base,
    port,
    token,
    url,
    async ws(clientOptions = {}, given = token) {
      const client = await connectWebSocket(url(given), clientOptions);
      sockets.push(client.socket);
      return client;
    },
    async open() {
      const client = await fixture.ws();
      await client.waitFor((frame) => frame.params?.type === 'gateway.ready');
      return client;
    },
    async dispose() {
      for (const socket of sockets) socket.terminate();
      detach();
      await new Promise<void>((resolvePromise) => server.close(() => resolvePromise()));
      await base.dispose();
    },
  };
  return fixture;
}
