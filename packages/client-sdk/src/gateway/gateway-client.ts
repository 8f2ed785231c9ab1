import type { EventPayload, GatewayReadyPayloadSchema, OpenRequest } from '@hermes/protocol-tui/wire';
import { ErrorCode, type InboundFrame, RpcError } from '@hermes/protocol-tui/wire/framing';
import {
  createJSONRPCErrorResponse,
  JSONRPC,
  JSONRPCClient,
  type JSONRPCErrorResponse,
  type JSONRPCResponse,
  JSONRPCServer,
} from 'json-rpc-2.0';
import type { z } from 'zod';
import { AsyncQueue } from '../async-queue.js';
import { ClientError } from '../errors.js';
import type { FrameChecks } from './frame-checks.js';
import type { OpenedConnection } from './opened-connection.js';
import type {
  AnyGatewayEvent,
  ConnectionState,
  GatewayEvent,
  GatewayEventType,
  GatewayMethod,
  GatewayMethodParams,
  GatewayMethodResult,
  MethodArguments,
  MethodCall,
  RequestOptions,
  ServerRequestContext,
  ServerRequestHandler,
  ServerRequestHandlers,
  ServerRequestMethod,
} from './types.js';
import { wireEndedError } from './wire-errors.js';

/** What differs between the Node and the browser client: how a wire is opened, and how frames are checked. */
export interface GatewayRuntime<TConnection> {
  /** Opens a wire; the returned transport may still fail (its readable then simply ends). */
  open(options: TConnection): Promise<OpenedConnection>;
  checks: FrameChecks;
}

/** Reconnect policy: exponential backoff, as Hermes Agent clients do (1 s doubling up to 30 s, spec §1.7). */
export interface ReconnectOptions {
  /** First delay in milliseconds; default 1000. */
  initialDelayMs?: number;
  /** Cap on the delay; default 30 000. */
  maxDelayMs?: number;
  /** Attempts before giving up (the client then closes); default unlimited. */
  maxAttempts?: number;
}

/** Heartbeat policy on WebSocket (spec §1.7): `gateway.ping` every interval, reconnect after the timeout. */
export interface HeartbeatOptions {
  /** Default 15 000 ms. */
  intervalMs?: number;
  /** Default 45 000 ms without an answer. */
  timeoutMs?: number;
}

/**
 * Options of {@link GatewayClient}. `TConnection` is how the client reaches its gateway: in Node a spawned child or a
 * WebSocket with a token, in a browser a WebSocket with a ticket.
 */
export interface GatewayClientOptions<TConnection> {
  /** How to reach the gateway: e.g. `{ command, args }` or `{ url, token }` in Node, `{ url, apiKey }` in a browser. */
  connection: TConnection;
  /** Server-request handlers; a kind left out is declined with `-32601`. More can be added with `handle()`. */
  handlers?: ServerRequestHandlers;
  /** Default timeout of every request in milliseconds; default 120 000; 0 waits forever. */
  requestTimeoutMs?: number;
  /** How long to wait for `gateway.ready` after opening a wire; default 30 000 ms. */
  readyTimeoutMs?: number;
  /** `false` disables reconnecting: a lost wire closes the client. */
  reconnect?: ReconnectOptions | false;
  /** `false` disables the heartbeat even when the server asks for it. */
  heartbeat?: HeartbeatOptions | false;
  /** Told about frames that break the protocol or its schemas; they are still delivered when usable. */
  onProtocolError?: (error: ClientError) => void;
  /** Registered before the first connection: the same as calling {@link GatewayClient.onReconnect}. */
  onReconnect?: (report: ReconnectReport) => void;
  /** Registered before the first connection: the same as calling {@link GatewayClient.onResync}. */
  onResync?: (notice: ResyncNotice) => void;
  /** Registered before the first connection: the same as calling {@link GatewayClient.onStateChange}. */
  onStateChange?: (state: ConnectionState) => void;
}

/** Every key of {@link GatewayClientOptions}; anything else is a mistake the constructor reports. */
const GATEWAY_CLIENT_OPTION_KEYS: readonly (keyof GatewayClientOptions<unknown>)[] = [
  'connection',
  'handlers',
  'requestTimeoutMs',
  'readyTimeoutMs',
  'reconnect',
  'heartbeat',
  'onProtocolError',
  'onReconnect',
  'onResync',
  'onStateChange',
];

/** Options of {@link GatewayClient.events}. */
export interface EventStreamOptions {
  /** Only events of this runtime id (connection-wide events are left out too). */
  sessionId?: string;
  /** Ends the stream. */
  signal?: AbortSignal;
}

/** Options of {@link GatewayClient.waitForEvent}. */
export interface WaitForEventOptions<T extends GatewayEventType> {
  sessionId?: string;
  predicate?: (event: GatewayEvent<T>) => boolean;
  /** Default: the client's request timeout. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** A session whose events the client delivers in `seq` order and re-attaches after a reconnect. */
export interface TrackedSession {
  /** Runtime id. */
  sessionId: string;
  /** Stored id, when known (needed to resume in a new gateway process). */
  storedSessionId: string | undefined;
  /** The seq of the last event delivered to the host; undefined before the first one. */
  lastSeq: number | undefined;
}

/** What a reconnect did, for hosts that rebuild their view. */
export interface ReconnectReport {
  /** The gateway process changed (new `replay_epoch`): runtime ids and seq watermarks were replaced. */
  epochChanged: boolean;
  /** Each re-attached session: its runtime id before and after (they differ when the process changed). */
  sessions: {
    previousSessionId: string;
    sessionId: string;
    storedSessionId: string | undefined;
    /** Events emitted while disconnected and delivered from the replay ring. */
    replayedEvents: number;
  }[];
  /** Sessions that could not be re-attached (closed, reaped without a stored id, …). */
  lost: string[];
}

/** Told when replayed events could not fill a gap (ring truncated or process changed): re-read the history. */
export interface ResyncNotice {
  sessionId: string;
  reason: 'truncated' | 'epoch_changed';
}

/** A started turn: the submit result, the turn's events, and its final `message.complete` payload. */
export interface StartedTurn {
  result: GatewayMethodResult<'prompt.submit'>;
  /** Every event of the session from the submit up to and including the next `message.complete`. */
  events: AsyncIterable<AnyGatewayEvent>;
  /** Resolves with the `message.complete` payload that ends the stream. */
  completed: Promise<EventPayload<'message.complete'>>;
}

interface Connection {
  opened: OpenedConnection;
  writer: WritableStreamDefaultWriter<unknown>;
  /** The requests sent on this wire, waiting for their responses by id. */
  calls: JSONRPCClient;
  /** Why this wire's unanswered requests failed (the wire was lost, or the client closed), once they did. */
  endError: ClientError | undefined;
  ready: Promise<z.output<typeof GatewayReadyPayloadSchema>>;
  resolveReady(payload: z.output<typeof GatewayReadyPayloadSchema>): void;
  lost: Promise<void>;
  isLost: boolean;
  established: boolean;
}

interface SessionTrack extends TrackedSession {
  buffering: boolean;
  buffer: AnyGatewayEvent[];
  catchingUp: Promise<number> | undefined;
}

interface ServerRequestEntry {
  controller: AbortController;
  answer: Record<string, unknown> | undefined;
}

type Listener = (event: AnyGatewayEvent) => void;

const DEFAULT_REQUEST_TIMEOUT_MS = 120_000;

/**
 * The code json-rpc-2.0's client gives the error responses it makes up itself (`rejectAllPendingRequests`); the
 * gateway never answers with it (spec §10).
 */
const LIBRARY_ERROR_CODE = 0;

/**
 * A typed client of the TUI gateway (spec/tui-gateway.md) over a spawned `hermes gateway` (stdio) or a
 * WebSocket. It answers server requests through host handlers, keeps the connection alive, reconnects
 * with backoff, and after a reconnect re-attaches its sessions, re-delivers their open requests and
 * replays missed events, so that the host sees every session event exactly once, in `seq` order.
 */
export class GatewayClientBase<TConnection> {
  readonly #options: GatewayClientOptions<TConnection>;
  readonly #runtime: GatewayRuntime<TConnection>;
  readonly #handlers: ServerRequestHandlers = {};
  /** Dispatches server requests to the host's handlers and builds their answers (spec §6). */
  readonly #serverRequestServer = new JSONRPCServer<ServerRequestContext>({ errorListener: () => {} });
  readonly #sessions = new Map<string, SessionTrack>();
  readonly #serverRequests = new Map<string, ServerRequestEntry>();
  readonly #listeners = new Map<string, Set<Listener>>();
  readonly #stateListeners = new Set<(state: ConnectionState) => void>();
  readonly #reconnectListeners = new Set<(report: ReconnectReport) => void>();
  readonly #resyncListeners = new Set<(notice: ResyncNotice) => void>();
  readonly #endListeners = new Set<() => void>();
  #connection: Connection | undefined;
  #state: ConnectionState = 'connecting';
  #epoch: string | undefined;
  #nextId = 1;
  #nextHeartbeat = 1;
  #heartbeatTimer: ReturnType<typeof setInterval> | undefined;
  #closedByHost = false;
  #connected!: Promise<void>;
  #resolveConnected!: () => void;
  #rejectConnected!: (error: unknown) => void;
  #wakeReconnect: (() => void) | undefined;

  /** Creates a client; call `connect()` (or use the subclass's static `connect`) to open it. */
  constructor(options: GatewayClientOptions<TConnection>, runtime: GatewayRuntime<TConnection>) {
    const unknown = Object.keys(options).filter(
      (key) => !(GATEWAY_CLIENT_OPTION_KEYS as readonly string[]).includes(key),
    );
    if (unknown.length > 0) {
      throw new TypeError(
        `Unknown GatewayClient option${unknown.length > 1 ? 's' : ''} ${unknown.map((key) => `"${key}"`).join(', ')}; the options are ${GATEWAY_CLIENT_OPTION_KEYS.join(', ')}`,
      );
    }
    this.#options = options;
    this.#runtime = runtime;
    // Client obligations (spec §6.4): a kind without a handler answers -32601, a failed handler -32603.
    this.#serverRequestServer.handleMethodNotFound = async (request) =>
      createJSONRPCErrorResponse(
        request.id ?? null,
        ErrorCode.methodNotFound,
        `no handler for server request: ${request.method}`,
      );
    this.#serverRequestServer.mapErrorToJSONRPCErrorResponse = (id, error) =>
      createJSONRPCErrorResponse(
        id,
        ErrorCode.internalError,
        `server request handler failed: ${error instanceof Error ? error.message : String(error)}`,
      );
    for (const [method, handler] of Object.entries(options.handlers ?? {}))
      if (handler) this.handle(method as ServerRequestMethod, handler as ServerRequestHandler<ServerRequestMethod>);
    if (options.onReconnect) this.#reconnectListeners.add(options.onReconnect);
    if (options.onResync) this.#resyncListeners.add(options.onResync);
    if (options.onStateChange) this.#stateListeners.add(options.onStateChange);
    this.#resetConnected();
  }

  /** The connection state. */
  get state(): ConnectionState {
    return this.#state;
  }

  /** The `replay_epoch` of the gateway process last connected to (spec §1.5). */
  get replayEpoch(): string | undefined {
    return this.#epoch;
  }

  /** Sessions the client tracks (created, resumed, activated, branched or prompted through it). */
  get sessions(): readonly TrackedSession[] {
    return [...this.#sessions.values()].map(({ sessionId, storedSessionId, lastSeq }) => ({
      sessionId,
      storedSessionId,
      lastSeq,
    }));
  }

  /** Opens the first connection. Rejects when it cannot be opened; later losses reconnect instead. */
  async connect(): Promise<void> {
    if (this.#closedByHost) throw new ClientError('not_connected', 'the client is closed');
    this.#setState('connecting');
    try {
      await this.#establish(false);
    } catch (error) {
      this.#closedByHost = true;
      this.#setState('closed');
      this.#rejectConnected(error);
      throw error;
    }
  }

  /** Closes the client: pending requests fail, handlers are aborted, a spawned gateway gets EOF and exits. */
  async close(): Promise<void> {
    if (this.#closedByHost && this.#state === 'closed') return;
    this.#closedByHost = true;
    this.#wakeReconnect?.();
    this.#stopHeartbeat();
    const connection = this.#connection;
    this.#connection = undefined;
    if (connection) this.#endCalls(connection, new ClientError('not_connected', 'the client was closed'));
    this.#rejectConnected(new ClientError('not_connected', 'the client was closed'));
    for (const entry of this.#serverRequests.values())
      entry.controller.abort(new ClientError('not_connected', 'closed'));
    this.#serverRequests.clear();
    this.#setState('closed');
    if (connection) await connection.opened.dispose();
    this.#emitEnd();
  }

  /**
   * Sends any [v1] method, typed by the wire schemas. Requests made while reconnecting wait for the new
   * connection; a request already sent when the wire drops fails with `ClientError('connection_closed')`.
   * Server errors are rethrown as {@link RpcError} with the spec's code, message and data.
   */
  call<M extends GatewayMethod>(method: M, ...arguments_: MethodArguments<M>): Promise<GatewayMethodResult<M>> {
    const [params, options] = arguments_;
    return this.#call(method, (params ?? {}) as Record<string, unknown>, options ?? {}, undefined).then((result) => {
      this.#observeResult(method, (params ?? {}) as Record<string, unknown>, result);
      return result as GatewayMethodResult<M>;
    });
  }

  /** Registers (or replaces) the handler of one server-request kind; returns a function that removes it. */
  handle<M extends ServerRequestMethod>(method: M, handler: ServerRequestHandler<M>): () => void {
    (this.#handlers as Record<string, unknown>)[method] = handler;
    // A kind the protocol does not define is never dispatched: it is answered -32601 like one without a handler.
    if (this.#runtime.checks.isServerRequestMethod(method))
      this.#serverRequestServer.addMethod(method, (params, context) => handler(params, context));
    return () => {
      if ((this.#handlers as Record<string, unknown>)[method] !== handler) return;
      delete this.#handlers[method];
      this.#serverRequestServer.removeMethod(method);
    };
  }

  /** Listens to one event type (or `'*'` for all); returns a function that removes the listener. */
  on<T extends GatewayEventType>(type: T, listener: (event: GatewayEvent<T>) => void): () => void;
  on(type: '*', listener: (event: AnyGatewayEvent) => void): () => void;
  on(type: string, listener: (event: never) => void): () => void {
    let set = this.#listeners.get(type);
    if (!set) {
      set = new Set();
      this.#listeners.set(type, set);
    }
    set.add(listener as Listener);
    return () => set.delete(listener as Listener);
  }

  /** Listens to connection state changes. */
  onStateChange(listener: (state: ConnectionState) => void): () => void {
    this.#stateListeners.add(listener);
    return () => this.#stateListeners.delete(listener);
  }

  /** Told after each successful reconnect, once sessions are re-attached and caught up. */
  onReconnect(listener: (report: ReconnectReport) => void): () => void {
    this.#reconnectListeners.add(listener);
    return () => this.#reconnectListeners.delete(listener);
  }

  /** Told when missed events could not be replayed for a session; the host should re-read its history. */
  onResync(listener: (notice: ResyncNotice) => void): () => void {
    this.#resyncListeners.add(listener);
    return () => this.#resyncListeners.delete(listener);
  }

  /** Events from now on, as an async iterable; it ends when the client closes or the signal fires. */
  events(options: EventStreamOptions = {}): AsyncIterable<AnyGatewayEvent> {
    const removers: (() => void)[] = [];
    const queue = new AsyncQueue<AnyGatewayEvent>(() => {
      for (const remove of removers) remove();
    });
    removers.push(
      this.on('*', (event) => {
        if (options.sessionId === undefined || event.session_id === options.sessionId) queue.push(event);
      }),
    );
    removers.push(this.#onEnd(() => queue.end()));
    if (options.signal) {
      const signal = options.signal;
      if (signal.aborted) queue.end();
      const abort = () => queue.end();
      signal.addEventListener('abort', abort, { once: true });
      removers.push(() => signal.removeEventListener('abort', abort));
    }
    return queue;
  }

  /** Waits for the next event of a type (future events only); rejects on timeout, abort or close. */
  waitForEvent<T extends GatewayEventType>(type: T, options: WaitForEventOptions<T> = {}): Promise<GatewayEvent<T>> {
    return new Promise((resolve, reject) => {
      const timeoutMs = options.timeoutMs ?? this.#options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
      const cleanups: (() => void)[] = [];
      const finish = (action: () => void) => {
        for (const cleanup of cleanups) cleanup();
        action();
      };
      cleanups.push(
        this.on(type, (event) => {
          if (options.sessionId !== undefined && event.session_id !== options.sessionId) return;
          if (options.predicate && !options.predicate(event)) return;
          finish(() => resolve(event));
        }),
      );
      cleanups.push(this.#onEnd(() => finish(() => reject(new ClientError('not_connected', 'the client was closed')))));
      if (timeoutMs > 0) {
        const timer = setTimeout(
          () => finish(() => reject(new ClientError('request_timeout', `no ${type} event within ${timeoutMs} ms`))),
          timeoutMs,
        );
        cleanups.push(() => clearTimeout(timer));
      }
      if (options.signal) {
        const signal = options.signal;
        const abort = () => finish(() => reject(new ClientError('aborted', 'aborted', { cause: signal.reason })));
        if (signal.aborted) return abort();
        signal.addEventListener('abort', abort, { once: true });
        cleanups.push(() => signal.removeEventListener('abort', abort));
      }
    });
  }

  /**
   * Submits a prompt and streams its turn: every event of the session from the submit up to and
   * including the next `message.complete`. The subscription starts before the submit is sent, so no
   * event of the turn is missed.
   */
  async startTurn(params: GatewayMethodParams<'prompt.submit'>, options: RequestOptions = {}): Promise<StartedTurn> {
    const sessionId = params.session_id;
    let resolveCompleted!: (payload: EventPayload<'message.complete'>) => void;
    let rejectCompleted!: (error: unknown) => void;
    const completed = new Promise<EventPayload<'message.complete'>>((resolve, reject) => {
      resolveCompleted = resolve;
      rejectCompleted = reject;
    });
    // Unhandled when the host only iterates the events; the rejection is still visible through the stream.
    completed.catch(() => {});
    const removers: (() => void)[] = [];
    const queue = new AsyncQueue<AnyGatewayEvent>(() => {
      for (const remove of removers) remove();
    });
    removers.push(
      this.on('*', (event) => {
        if (event.session_id !== sessionId) return;
        queue.push(event);
        if (event.type === 'message.complete') {
          resolveCompleted(event.payload);
          queue.end();
        }
      }),
    );
    removers.push(
      this.#onEnd(() => {
        const error = new ClientError('not_connected', 'the client was closed before the turn completed');
        rejectCompleted(error);
        queue.end(error);
      }),
    );
    try {
      const result = await this.call('prompt.submit', params, options);
      return { result, events: queue, completed };
    } catch (error) {
      queue.end();
      rejectCompleted(error);
      throw error;
    }
  }

  // ---- typed methods, one per [v1] gateway method (spec §4) ----

  /** `ping`: an ordinary inline liveness check. */
  readonly ping: MethodCall<'ping'> = this.#bind('ping');

  /** `client.capabilities`: the client sends `{server_requests:true}` by itself after each `gateway.ready`. */
  readonly capabilities: MethodCall<'client.capabilities'> = this.#bind('client.capabilities');

  /** `gateway.*` methods. */
  readonly gateway = {
    /** `gateway.ping`: answered ahead of queued work; used by the heartbeat. */
    ping: this.#bind('gateway.ping'),
  };

  /** `session.*` methods (spec §4.2–§4.4). */
  readonly session = {
    /** `session.create`: a new live session; the client tracks it. */
    create: this.#bind('session.create'),
    /** `session.resume`: a stored id or exact title; the client tracks the result. */
    resume: this.#bind('session.resume'),
    /** `session.activate`: attach to a live runtime id; the client tracks it. */
    activate: this.#bind('session.activate'),
    /** `session.close`: finalize; the client stops tracking it. */
    close: this.#bind('session.close'),
    /** `session.list`: stored sessions, most recently active first. */
    list: this.#bind('session.list'),
    /** `session.active_list`: the live sessions of the gateway process. */
    activeList: this.#bind('session.active_list'),
    /** `session.history`: the display projection. */
    history: this.#bind('session.history'),
    /** `session.title`: read or set the title. */
    title: this.#bind('session.title'),
    /** `session.usage`: token accounting. */
    usage: this.#bind('session.usage'),
    /** `session.status`: a printable status block. */
    status: this.#bind('session.status'),
    /** `session.undo`: cut before the last user turn. */
    undo: this.#bind('session.undo'),
    /** `session.compress`: manual compaction. */
    compress: this.#bind('session.compress'),
    /** `session.branch`: copy into a new session; the client tracks it. */
    branch: this.#bind('session.branch'),
    /** `session.events.since`: replay from the ring. */
    eventsSince: this.#bind('session.events.since'),
    /** `session.interrupt`: stop the running turn and withdraw open requests. */
    interrupt: this.#bind('session.interrupt'),
    /** `session.steer`: inject text at the next tool boundary. */
    steer: this.#bind('session.steer'),
  };

  /** `prompt.*` methods (spec §4.4). */
  readonly prompt = {
    /** `prompt.submit`, including rewinds (`truncate_before_*` with `confirm_truncate`, spec §7). */
    submit: this.#bind('prompt.submit'),
    /** `prompt.background`: a side agent without history. */
    background: this.#bind('prompt.background'),
  };

  /** `clipboard.paste` (spec §4.5). */
  readonly clipboard = { paste: this.#bind('clipboard.paste') };

  /** `image.*` methods (spec §4.5). */
  readonly image = { attach: this.#bind('image.attach'), detach: this.#bind('image.detach') };

  /** `terminal.resize` (spec §4.5). */
  readonly terminal = { resize: this.#bind('terminal.resize') };

  /** `clarify.lock` (spec §4.6). */
  readonly clarify = { lock: this.#bind('clarify.lock') };

  /** `request.answer`: answer a server request by id, without a handler (spec §4.6). */
  readonly request = { answer: this.#bind('request.answer') };

  /** `approval.*` methods (spec §4.6). */
  readonly approval = { pending: this.#bind('approval.pending'), respond: this.#bind('approval.respond') };

  /** `config.*` methods (spec §4.7). */
  readonly config = { get: this.#bind('config.get'), set: this.#bind('config.set') };

  /** `commands.catalog` (spec §4.8). */
  readonly commands = { catalog: this.#bind('commands.catalog') };

  /** `command.*` methods (spec §4.8). */
  readonly command = { resolve: this.#bind('command.resolve'), dispatch: this.#bind('command.dispatch') };

  /** `slash.exec` (spec §4.8). */
  readonly slash = { exec: this.#bind('slash.exec') };

  /** `cli.exec` (spec §4.8); pass a `timeoutMs` above the command's own timeout. */
  readonly cli = { exec: this.#bind('cli.exec') };

  /** `reload.*` methods (spec §4.9). */
  readonly reload = { mcp: this.#bind('reload.mcp'), env: this.#bind('reload.env') };

  /** `process.*` methods (spec §4.9). */
  readonly process = {
    list: this.#bind('process.list'),
    kill: this.#bind('process.kill'),
    stop: this.#bind('process.stop'),
  };

  /** `model.options` (spec §4.9). */
  readonly model = { options: this.#bind('model.options') };

  /** `delegation.*` methods (spec §4.10). */
  readonly delegation = { status: this.#bind('delegation.status'), pause: this.#bind('delegation.pause') };

  /** `subagent.*` methods (spec §4.10). */
  readonly subagent = {
    interrupt: this.#bind('subagent.interrupt'),
    steer: this.#bind('subagent.steer'),
    list: this.#bind('subagent.list'),
  };

  /** `spawn_tree.*` methods (spec §4.10). */
  readonly spawnTree = {
    save: this.#bind('spawn_tree.save'),
    list: this.#bind('spawn_tree.list'),
    load: this.#bind('spawn_tree.load'),
  };

  // ---- internals ----

  #bind<M extends GatewayMethod>(method: M): MethodCall<M> {
    return (...arguments_: MethodArguments<M>) => this.call(method, ...arguments_);
  }

  #onEnd(callback: () => void): () => void {
    this.#endListeners.add(callback);
    return () => this.#endListeners.delete(callback);
  }

  #emitEnd(): void {
    for (const listener of [...this.#endListeners]) listener();
  }

  #setState(state: ConnectionState): void {
    if (this.#state === state) return;
    this.#state = state;
    for (const listener of [...this.#stateListeners]) listener(state);
  }

  #resetConnected(): void {
    this.#connected = new Promise<void>((resolve, reject) => {
      this.#resolveConnected = resolve;
      this.#rejectConnected = reject;
    });
    // Nobody may be waiting; a rejection is read by whoever calls next.
    this.#connected.catch(() => {});
  }

  #protocolError(message: string, cause?: unknown): void {
    this.#options.onProtocolError?.(new ClientError('protocol_error', message, { cause }));
  }

  async #establish(isReconnect: boolean): Promise<void> {
    const opened = await this.#runtime.open(this.#options.connection);
    let resolveReady!: Connection['resolveReady'];
    let resolveLost!: () => void;
    const writer = opened.transport.writable.getWriter();
    const connection: Connection = {
      opened,
      writer,
      // A failed write is a lost wire, which fails the wire's requests; the library is not told about the write.
      calls: new JSONRPCClient((request) => {
        writer.write(request).catch(() => {});
      }),
      endError: undefined,
      ready: new Promise((resolve) => {
        resolveReady = resolve;
      }),
      resolveReady: (payload) => resolveReady(payload),
      lost: new Promise((resolve) => {
        resolveLost = resolve;
      }),
      isLost: false,
      established: false,
    };
    this.#connection = connection;
    void this.#readLoop(connection).finally(() => {
      connection.isLost = true;
      resolveLost();
      this.#onConnectionLost(connection);
    });
    try {
      const ready = await this.#raceLost(connection, connection.ready, this.#options.readyTimeoutMs ?? 30_000);
      const previousEpoch = this.#epoch;
      this.#epoch = ready.replay_epoch;
      await this.#call('client.capabilities', { server_requests: true }, {}, connection);
      const report = isReconnect ? await this.#reattach(connection, previousEpoch !== ready.replay_epoch) : undefined;
      if (connection.isLost) throw new ClientError('connection_closed', 'the connection dropped while attaching');
      connection.established = true;
      if (ready.heartbeat && this.#options.heartbeat !== false) this.#startHeartbeat(connection);
      this.#setState('connected');
      this.#resolveConnected();
      if (report) for (const listener of [...this.#reconnectListeners]) listener(report);
    } catch (error) {
      if (this.#connection === connection) this.#connection = undefined;
      await opened.dispose().catch(() => {});
      const code = opened.closeCode();
      if ((code === 4401 || code === 4403) && !(ClientError.isInstance(error) && error.code === 'unauthorized'))
        throw wireEndedError(opened, error);
      throw error;
    }
  }

  #raceLost<T>(connection: Connection, promise: Promise<T>, timeoutMs: number): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new ClientError('request_timeout', `no gateway.ready within ${timeoutMs} ms`)),
        timeoutMs,
      );
      connection.lost.then(() => {
        clearTimeout(timer);
        reject(wireEndedError(connection.opened));
      });
      promise.then(
        (value) => {
          clearTimeout(timer);
          resolve(value);
        },
        (error: unknown) => {
          clearTimeout(timer);
          reject(error);
        },
      );
    });
  }

  async #readLoop(connection: Connection): Promise<void> {
    const { transport } = connection.opened;
    try {
      if (transport.frameBatches) {
        // Stdio and WebSocket wires hand over the frames that arrived together at once: one read per batch, not per frame.
        const reader = transport.frameBatches.getReader();
        for (;;) {
          const { value, done } = await reader.read();
          if (done) return;
          for (const frame of value) this.#onInbound(connection, frame);
        }
      }
      const reader = transport.readable.getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        this.#onInbound(connection, value);
      }
    } catch {
      // A transport that errors is a lost connection, reported by the caller's finally.
    }
  }

  #onInbound(connection: Connection, inbound: InboundFrame): void {
    if (inbound.kind === 'parse_error') {
      this.#protocolError(`unparsable frame: ${inbound.reason}`);
      return;
    }
    try {
      this.#onFrame(connection, inbound.message);
    } catch (error) {
      this.#protocolError('failed to handle a frame', error);
    }
  }

  #onFrame(connection: Connection, message: unknown): void {
    if (typeof message !== 'object' || message === null || Array.isArray(message)) {
      this.#protocolError('a frame that is not an object');
      return;
    }
    const frame = message as Record<string, unknown>;
    // Frame kinds (spec §2.1): an event; a string id with a method is a server request; an id alone a response.
    if (frame.method === 'event') {
      if (!isEventEnvelope(frame.params)) {
        this.#protocolError('an event with an invalid envelope', this.#runtime.checks.envelopeIssue(frame.params));
        return;
      }
      this.#onEvent(connection, frame.params as AnyGatewayEvent);
      return;
    }
    if (typeof frame.method === 'string' && typeof frame.id === 'string') {
      const params = (typeof frame.params === 'object' && frame.params !== null ? frame.params : {}) as Record<
        string,
        unknown
      >;
      this.#onServerRequest({ id: frame.id, method: frame.method, params }, false);
      return;
    }
    if ('id' in frame && (typeof frame.id === 'string' || typeof frame.id === 'number')) {
      // A response: json-rpc-2.0 settles the request of this wire with that id, and drops one it does not know.
      const error = typeof frame.error === 'object' && frame.error !== null ? frame.error : undefined;
      connection.calls.receive(
        error
          ? ({ jsonrpc: JSONRPC, id: frame.id, error } as JSONRPCErrorResponse)
          : ({ jsonrpc: JSONRPC, id: frame.id, result: frame.result ?? {} } as JSONRPCResponse),
      );
      return;
    }
    if (frame.id === null && typeof frame.error === 'object') {
      this.#protocolError(`the gateway reported an error without an id: ${JSON.stringify(frame.error)}`);
    }
  }

  #onEvent(connection: Connection, event: AnyGatewayEvent): void {
    if (event.type === 'gateway.ready') {
      const issue = this.#runtime.checks.readyPayloadIssue(event.payload);
      if (issue !== undefined) this.#protocolError('an invalid gateway.ready payload', issue);
      connection.resolveReady(event.payload as z.output<typeof GatewayReadyPayloadSchema>);
      this.#deliver(event);
      return;
    }
    if (event.type === 'session.reclaimed') this.#sessions.delete(event.payload.session_id);
    if (event.session_id === '' || event.seq === undefined) {
      this.#deliver(event);
      return;
    }
    const session = this.#track(event.session_id);
    if (session.buffering) {
      session.buffer.push(event);
      return;
    }
    this.#applySessionEvent(session, event);
  }

  #track(sessionId: string, storedSessionId?: string, lastSeq?: number): SessionTrack {
    let session = this.#sessions.get(sessionId);
    if (!session) {
      session = { sessionId, storedSessionId, lastSeq, buffering: false, buffer: [], catchingUp: undefined };
      this.#sessions.set(sessionId, session);
    } else if (storedSessionId !== undefined) session.storedSessionId = storedSessionId;
    return session;
  }

  #applySessionEvent(session: SessionTrack, event: AnyGatewayEvent): void {
    const seq = event.seq as number;
    if (session.lastSeq !== undefined && seq <= session.lastSeq) return;
    // A frame of deltas the gateway joined for a congested connection holds the text of every seq from its
    // `first_seq` on (ADR 0075): those seqs are in it, not missing.
    const firstSeq = event.first_seq;
    const first = typeof firstSeq === 'number' && firstSeq <= seq ? firstSeq : seq;
    if (session.lastSeq !== undefined && first > session.lastSeq + 1) {
      // A gap (dropped deltas, or frames lost with a wire): fill it from the replay ring first.
      session.buffer.push(event);
      void this.#catchUp(session, undefined).catch((error: unknown) =>
        this.#protocolError('could not replay missed events', error),
      );
      return;
    }
    session.lastSeq = seq;
    if (event.type === 'request.cancel') {
      const entry = this.#serverRequests.get(event.payload.id);
      if (entry) {
        this.#serverRequests.delete(event.payload.id);
        entry.controller.abort(new ClientError('aborted', `request withdrawn: ${event.payload.reason}`));
      }
    }
    this.#deliver(event);
  }

  /**
   * Replays the events after `lastSeq` from the ring (spec §9.4 steps 5–6), then the live events buffered
   * meanwhile, skipping duplicates by seq. Also re-delivers the session's open requests.
   */
  #catchUp(session: SessionTrack, connection: Connection | undefined): Promise<number> {
    if (session.catchingUp) return session.catchingUp;
    session.buffering = true;
    const running = (async () => {
      let replayedEvents = 0;
      try {
        const since = (await this.#call(
          'session.events.since',
          { session_id: session.sessionId, last_seen: session.lastSeq ?? 0 },
          {},
          connection,
        )) as GatewayMethodResult<'session.events.since'>;
        if (session.lastSeq === undefined) {
          // The host never saw an event of this session: nothing to continue, start from now.
          session.lastSeq = since.latest_seq;
        } else if (since.epoch !== this.#epoch || session.lastSeq > since.latest_seq) {
          // Another gateway process, or a watermark ahead of the server's: its seqs do not continue ours.
          const reason = since.epoch !== this.#epoch ? 'epoch_changed' : 'truncated';
          session.lastSeq = since.latest_seq;
          this.#notifyResync({ sessionId: session.sessionId, reason });
        } else {
          // A truncated ring cannot fill the whole gap: the host is told to re-read the history, and what the
          // ring still has, then the live events buffered meanwhile (a turn's message.complete among them),
          // are delivered in order rather than skipped.
          if (since.truncated) this.#notifyResync({ sessionId: session.sessionId, reason: 'truncated' });
          const replayed = [...since.events].sort((left, right) => Number(left.seq) - Number(right.seq));
          for (const event of replayed)
            if (this.#applyReplayed(session, event as unknown as AnyGatewayEvent)) replayedEvents += 1;
        }
        for (const request of since.open_requests) this.#onServerRequest(request, true);
        return replayedEvents;
      } finally {
        session.buffering = false;
        session.catchingUp = undefined;
        const buffered = session.buffer.splice(0).sort((left, right) => (left.seq ?? 0) - (right.seq ?? 0));
        for (const event of buffered) {
          if (session.lastSeq !== undefined && (event.seq ?? 0) > session.lastSeq + 1) {
            // Still a gap after the replay: the ring has nothing more, so deliver what we have in order.
            session.lastSeq = (event.seq ?? 0) - 1;
          }
          this.#applySessionEvent(session, event);
        }
      }
    })();
    session.catchingUp = running;
    return running;
  }

  #notifyResync(notice: ResyncNotice): void {
    for (const listener of [...this.#resyncListeners]) listener(notice);
  }

  #applyReplayed(session: SessionTrack, event: AnyGatewayEvent): boolean {
    if (event.seq === undefined) return false;
    if (session.lastSeq !== undefined && event.seq <= session.lastSeq) return false;
    // Replayed events are contiguous by construction (the ring is not truncated), so apply in order.
    session.lastSeq = event.seq - 1;
    this.#applySessionEvent(session, event);
    return true;
  }

  async #reattach(connection: Connection, epochChanged: boolean): Promise<ReconnectReport> {
    const report: ReconnectReport = { epochChanged, sessions: [], lost: [] };
    for (const session of [...this.#sessions.values()]) {
      session.buffering = true;
      let snapshot: GatewayMethodResult<'session.resume'> | undefined;
      try {
        if (!epochChanged) {
          try {
            snapshot = (await this.#call(
              'session.activate',
              { session_id: session.sessionId, omit_messages: true },
              {},
              connection,
            )) as GatewayMethodResult<'session.activate'>;
          } catch (error) {
            if (!RpcError.isInstance(error)) throw error;
          }
        }
        if (!snapshot && session.storedSessionId !== undefined) {
          snapshot = (await this.#call(
            'session.resume',
            { session_id: session.storedSessionId, omit_messages: true },
            {},
            connection,
          )) as GatewayMethodResult<'session.resume'>;
        }
      } catch (error) {
        if (!RpcError.isInstance(error)) {
          session.buffering = false;
          throw error;
        }
      }
      if (!snapshot) {
        session.buffering = false;
        session.buffer.length = 0;
        this.#sessions.delete(session.sessionId);
        report.lost.push(session.sessionId);
        continue;
      }
      let target = session;
      if (snapshot.session_id !== session.sessionId) {
        // A new process: a new runtime id whose seq counter started afresh; old watermarks are void.
        this.#sessions.delete(session.sessionId);
        target = this.#track(snapshot.session_id, snapshot.stored_session_id);
        target.buffering = true;
        target.buffer.push(...session.buffer.filter((event) => event.session_id === snapshot.session_id));
      } else target.storedSessionId = snapshot.stored_session_id;
      // Open requests go to the handlers with their original ids before anything else (spec §9.4 step 4).
      for (const request of snapshot.open_requests) this.#onServerRequest(request, true);
      const replayedEvents = await this.#catchUp(target, connection);
      report.sessions.push({
        previousSessionId: session.sessionId,
        sessionId: snapshot.session_id,
        storedSessionId: snapshot.stored_session_id,
        replayedEvents,
      });
    }
    return report;
  }

  #onServerRequest(request: OpenRequest, redelivered: boolean): void {
    const existing = this.#serverRequests.get(request.id);
    if (existing) {
      // Already handled: resend an answer that may have been lost with the old wire; the server drops repeats.
      if (existing.answer) this.#sendAnswer(existing.answer);
      return;
    }
    const handled = this.#serverRequestServer.hasMethod(request.method);
    if (handled) {
      const issue = this.#runtime.checks.serverRequestIssue(request.method as ServerRequestMethod, request.params);
      if (issue !== undefined) this.#protocolError(`invalid ${request.method} request params`, issue);
    }
    const entry: ServerRequestEntry = { controller: new AbortController(), answer: undefined };
    // A kind without a handler is answered -32601 each time it is delivered: a handler registered since may take it.
    if (handled) this.#serverRequests.set(request.id, entry);
    const context: ServerRequestContext = { id: request.id, signal: entry.controller.signal, redelivered };
    const frame = { jsonrpc: JSONRPC, id: request.id, method: request.method, params: request.params };
    void Promise.resolve(this.#serverRequestServer.receive(frame, context)).then((answer) => {
      if (!answer) return;
      entry.answer = answer as unknown as Record<string, unknown>;
      // A request withdrawn meanwhile (request.cancel) is not answered.
      if (!entry.controller.signal.aborted) this.#sendAnswer(entry.answer);
    });
  }

  #sendAnswer(answer: Record<string, unknown>): void {
    const connection = this.#connection;
    if (connection && !connection.isLost) {
      void connection.writer.write(answer).catch(() => {});
      return;
    }
    // Disconnected: the re-attach lists the request in open_requests again, which resends this answer.
  }

  #call(
    method: string,
    params: Record<string, unknown>,
    options: RequestOptions,
    connection: Connection | undefined,
    idPrefix = 'c-',
  ): Promise<Record<string, unknown>> {
    const timeoutMs = options.timeoutMs ?? this.#options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    const signal = options.signal;
    if (signal?.aborted)
      return Promise.reject(new ClientError('aborted', `${method} aborted`, { cause: signal.reason }));
    if (this.#closedByHost && this.#state === 'closed')
      return Promise.reject(new ClientError('not_connected', 'the client is closed'));
    const id = `${idPrefix}${idPrefix === 'c-' ? this.#nextId++ : this.#nextHeartbeat++}`;
    return new Promise<Record<string, unknown>>((resolve, reject) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      let settled = false;
      let sentOn: Connection | undefined;
      const settle = (action: () => void) => {
        if (settled) return;
        settled = true;
        if (timer) clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        action();
      };
      const giveUp = (error: ClientError) => {
        settle(() => reject(error));
        // The library still waits for this id: an error response of our own lets it go, as its own timeout() does.
        sentOn?.calls.receive(createJSONRPCErrorResponse(id, LIBRARY_ERROR_CODE, error.message));
      };
      const onAbort = () => giveUp(new ClientError('aborted', `${method} aborted`, { cause: signal?.reason }));
      if (timeoutMs > 0) {
        timer = setTimeout(
          () => giveUp(new ClientError('request_timeout', `${method} got no answer within ${timeoutMs} ms`)),
          timeoutMs,
        );
      }
      signal?.addEventListener('abort', onAbort, { once: true });
      const send = (target: Connection) => {
        if (settled) return;
        if (target.isLost) {
          settle(() => reject(new ClientError('connection_closed', `the connection ended before ${method} was sent`)));
          return;
        }
        sentOn = target;
        void Promise.resolve(target.calls.requestAdvanced({ jsonrpc: JSONRPC, id, method, params })).then(
          (response) => {
            if (response.error === undefined) {
              settle(() => resolve((response.result ?? {}) as Record<string, unknown>));
              return;
            }
            const error =
              response.error.code === LIBRARY_ERROR_CODE && target.endError
                ? target.endError
                : rpcErrorOf(response.error);
            settle(() => reject(error));
          },
        );
      };
      if (connection) send(connection);
      else
        this.#connected.then(
          () => {
            const current = this.#connection;
            if (current) send(current);
            else settle(() => reject(new ClientError('not_connected', 'not connected')));
          },
          (error: unknown) => settle(() => reject(error)),
        );
    });
  }

  #observeResult(method: string, params: Record<string, unknown>, result: Record<string, unknown>): void {
    const sessionId = typeof result.session_id === 'string' ? result.session_id : undefined;
    const storedId = typeof result.stored_session_id === 'string' ? result.stored_session_id : undefined;
    switch (method) {
      case 'session.create':
      case 'session.branch':
        // A new session: its first event will carry seq 1 (spec §9.3).
        if (sessionId) {
          const session = this.#track(sessionId, storedId);
          session.lastSeq ??= 0;
        }
        break;
      case 'session.resume':
      case 'session.activate':
        if (sessionId) this.#track(sessionId, storedId);
        break;
      case 'session.close':
        if (typeof params.session_id === 'string') this.#sessions.delete(params.session_id);
        break;
      case 'prompt.submit':
        if (typeof params.session_id === 'string') this.#track(params.session_id);
        break;
    }
  }

  #deliver(event: AnyGatewayEvent): void {
    const listeners = [...(this.#listeners.get(event.type) ?? []), ...(this.#listeners.get('*') ?? [])];
    for (const listener of listeners) {
      try {
        listener(event);
      } catch (error) {
        this.#protocolError(`a listener of ${event.type} threw`, error);
      }
    }
  }

  /** Fails the requests still waiting on a wire that will never answer them (json-rpc-2.0 settles each one). */
  #endCalls(connection: Connection, error: ClientError): void {
    connection.endError ??= error;
    connection.calls.rejectAllPendingRequests(connection.endError.message);
  }

  #onConnectionLost(connection: Connection): void {
    // Requests sent on the lost wire will never be answered there.
    this.#endCalls(connection, new ClientError('connection_closed', 'the connection to the gateway was lost'));
    if (this.#connection !== connection || !connection.established) return;
    this.#connection = undefined;
    this.#stopHeartbeat();
    if (this.#closedByHost) return;
    const code = connection.opened.closeCode();
    if (this.#options.reconnect === false || code === 4401 || code === 4403) {
      this.#closedByHost = true;
      const failure =
        code === 4401 || code === 4403
          ? wireEndedError(connection.opened)
          : new ClientError('not_connected', 'the connection to the gateway was lost');
      // Requests waiting for a connection fail with it; those sent on the lost wire have failed above.
      this.#rejectConnected(failure);
      this.#setState('closed');
      this.#emitEnd();
      return;
    }
    this.#resetConnected();
    this.#setState('reconnecting');
    void this.#reconnectLoop();
  }

  async #reconnectLoop(): Promise<void> {
    const options = this.#options.reconnect === false ? {} : (this.#options.reconnect ?? {});
    const initial = options.initialDelayMs ?? 1000;
    const maximum = options.maxDelayMs ?? 30_000;
    const maxAttempts = options.maxAttempts ?? Number.POSITIVE_INFINITY;
    let lastError: unknown;
    for (let attempt = 0; attempt < maxAttempts; attempt += 1) {
      const delay = Math.min(initial * 2 ** attempt, maximum);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, delay);
        this.#wakeReconnect = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.#wakeReconnect = undefined;
      if (this.#closedByHost) return;
      try {
        await this.#establish(true);
        return;
      } catch (error) {
        lastError = error;
        if (this.#closedByHost) return;
        // A refused token stays refused; a refused connection may be a gateway restarting, so it is retried.
        if (ClientError.isInstance(error) && (error.code === 'not_connected' || error.code === 'unauthorized')) break;
      }
    }
    this.#closedByHost = true;
    const failure = new ClientError('not_connected', 'could not reconnect to the gateway', { cause: lastError });
    this.#rejectConnected(failure);
    this.#setState('closed');
    this.#emitEnd();
  }

  #startHeartbeat(connection: Connection): void {
    const options = this.#options.heartbeat === false ? {} : (this.#options.heartbeat ?? {});
    const intervalMs = options.intervalMs ?? 15_000;
    const timeoutMs = options.timeoutMs ?? 45_000;
    let outstanding = false;
    this.#stopHeartbeat();
    this.#heartbeatTimer = setInterval(() => {
      if (outstanding || connection.isLost) return;
      outstanding = true;
      this.#call('gateway.ping', {}, { timeoutMs }, connection, 'heartbeat-').then(
        () => {
          outstanding = false;
        },
        (error: unknown) => {
          outstanding = false;
          // No answer in time: the wire is dead even if the OS has not noticed; drop it and reconnect.
          if (ClientError.isInstance(error) && error.code === 'request_timeout') connection.opened.terminate();
        },
      );
    }, intervalMs);
    // In Node the heartbeat must not keep the process alive; a browser's timer is a number without `unref`.
    (this.#heartbeatTimer as { unref?: () => void }).unref?.();
  }

  #stopHeartbeat(): void {
    if (this.#heartbeatTimer) clearInterval(this.#heartbeatTimer);
    this.#heartbeatTimer = undefined;
  }
}

/** The {@link RpcError} of a response's error object, whatever its members hold. */
function rpcErrorOf(error: { code?: unknown; message?: unknown; data?: unknown }): RpcError {
  return new RpcError(
    typeof error.code === 'number' ? error.code : ErrorCode.internalError,
    typeof error.message === 'string' ? error.message : 'error',
    error.data,
  );
}

/**
 * Whether `params` is a valid event envelope: what `EventEnvelopeSchema` accepts, checked by hand. A streamed reply is
 * thousands of event frames, and the schema's parse copies every payload; the schema still describes what failed.
 */
export function isEventEnvelope(params: unknown): boolean {
  if (!isPlainObject(params)) return false;
  const { type, session_id: sessionId, payload, seq } = params as Record<string, unknown>;
  return (
    typeof type === 'string' &&
    typeof sessionId === 'string' &&
    isPlainObject(payload) &&
    (seq === undefined || Number.isInteger(seq))
  );
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}
