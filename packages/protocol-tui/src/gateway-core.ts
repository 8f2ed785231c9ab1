import {
  createJSONRPCErrorResponse,
  createJSONRPCSuccessResponse,
  JSONRPC,
  type JSONRPCRequest,
  JSONRPCServer,
} from 'json-rpc-2.0';
import { DEFAULT_BACK_PRESSURE, GatewayConnection } from './connection.js';
import { type GatewayOptions, GatewayState } from './gateway-state.js';
import { InstanceRelay } from './instance-relay.js';
import { METHOD_HANDLERS, type MethodContext, type MethodHandler } from './methods/index.js';
import {
  acceptedKeys,
  ErrorCode,
  eventFrame,
  type InboundFrame,
  type MethodName,
  RpcError,
  SLOW_METHODS,
  type Transport,
} from './wire/index.js';

export type { GatewayOptions } from './gateway-state.js';

/** The slow-method cap of one process (§2.5). */
const SLOW_CONCURRENCY = 8;

/** What the JSON-RPC server carries along with one request: its caller and what runs after its response. */
interface GatewayCall {
  connection: GatewayConnection;
  /** The handler's `after` hooks (§2.5: a response precedes the events it causes). */
  afterResponse: (() => void)[];
  /** Set once the request passed its checks and names a slow method: the dispatcher does not wait for it. */
  slow?: boolean;
}

/**
 * The gateway's dispatcher: serves connections, routes each frame to its handler in the method
 * table and runs the shutdown sequence, on top of the shared {@link GatewayState}.
 */
export class GatewayCore extends GatewayState {
  retiring = false;
  private slowRunning = 0;
  private readonly slowQueue: (() => void)[] = [];
  private readonly connectionChains = new Map<GatewayConnection, Promise<void>>();
  private readonly rpc = this.createRpcServer();

  constructor(options: GatewayOptions) {
    super(options);
    if (options.relayBus?.shared) {
      const silence = this.section('tui_gateway', 'instance_silence_s');
      this.relay = new InstanceRelay(
        options.relayBus,
        {
          connect: (transport) => this.connect(transport),
          isLive: (storedId) => this.sessionByStoredId(storedId) !== undefined && !this.reapingSessionFor(storedId),
        },
        this.logger,
        {
          silenceMs:
            options.instanceSilenceMs ?? (typeof silence === 'number' && silence > 0 ? silence * 1000 : undefined),
        },
      );
    }
  }

  // ---- connections and dispatch ----------------------------------------------------------------

  /** Serves one connection: sends `gateway.ready`, then reads frames until the transport ends. */
  connect(transport: Transport): GatewayConnection {
    const connection = new GatewayConnection(
      transport,
      { ...DEFAULT_BACK_PRESSURE, coalesceMs: this.options.coalesceMs },
      (dead) => {
        void dead.transport.close(1011, 'congested');
        this.detach(dead);
      },
    );
    this.connections.add(connection);
    connection.send(
      eventFrame({
        type: 'gateway.ready',
        session_id: '',
        payload: { skin: {}, change_events: false, replay_epoch: this.replayEpoch, heartbeat: connection.isWebSocket },
      }),
    );
    void this.readLoop(connection);
    void transport.closed.then(() => this.detach(connection));
    return connection;
  }

  private async readLoop(connection: GatewayConnection): Promise<void> {
    const reader = transport(connection).readable.getReader();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        try {
          this.receive(connection, value);
        } catch (error) {
          this.logger.error('dispatcher failure', { error: String(error) });
        }
      }
    } catch (error) {
      this.logger.debug('connection read ended', { error: String(error) });
    } finally {
      this.detach(connection);
    }
  }

  /** Steps 1–4 and the immediate paths of §2.3 / §2.5; everything else joins the connection's chain. */
  receive(connection: GatewayConnection, frame: InboundFrame): void {
    if (frame.kind === 'parse_error') {
      this.enqueue(connection, async () => {
        connection.send({ jsonrpc: '2.0', error: { code: ErrorCode.parseError, message: 'parse error' }, id: null });
      });
      return;
    }
    const message = frame.message;
    if (typeof message !== 'object' || message === null || Array.isArray(message)) {
      this.enqueue(connection, async () =>
        this.reply(connection, null, new RpcError(ErrorCode.invalidRequest, 'invalid request: expected an object')),
      );
      return;
    }
    const record = message as Record<string, unknown>;
    // Frames for a session live on another instance go up its tunnel (ADR 0020).
    if (this.relay?.route(connection, record)) return;
    if (!('method' in record) && 'id' in record && ('result' in record || 'error' in record)) {
      this.serverRequests.answer(record.id, connection, record);
      return;
    }
    if (record.method === 'gateway.ping' && typeof record.id !== 'object') {
      if ('id' in record && record.id !== null)
        connection.send(createJSONRPCSuccessResponse(record.id as string | number, { pong: true }));
      return;
    }
    this.enqueue(connection, () => this.dispatch(connection, record));
  }

  private enqueue(connection: GatewayConnection, work: () => Promise<void>): void {
    const previous = this.connectionChains.get(connection) ?? Promise.resolve();
    const next = previous.then(work).catch((error: unknown) => {
      this.logger.error('dispatcher failure', { error: String(error) });
    });
    this.connectionChains.set(connection, next);
  }

  /**
   * Steps 4–6 of §2.3 (the frame's shape, answered with our own messages), then the JSON-RPC server: it finds the
   * method, runs the checks of its middleware (`createRpcServer`) and the handler, and builds the response.
   * An inline method is awaited (the next frame of the connection waits for its response); a slow one is not.
   */
  private async dispatch(connection: GatewayConnection, record: Record<string, unknown>): Promise<void> {
    const hasId = 'id' in record && record.id !== null && record.id !== undefined;
    if (hasId && typeof record.id !== 'string' && typeof record.id !== 'number') {
      this.reply(
        connection,
        null,
        new RpcError(ErrorCode.invalidRequest, 'invalid request: id must be a string or number'),
      );
      return;
    }
    const id = hasId ? (record.id as string | number) : null;
    if (typeof record.method !== 'string') {
      if (id !== null)
        this.reply(connection, id, new RpcError(ErrorCode.invalidRequest, 'invalid request: method must be a string'));
      return;
    }
    const rawParams = record.params;
    if (rawParams !== undefined && rawParams !== null && (typeof rawParams !== 'object' || Array.isArray(rawParams))) {
      if (id !== null)
        this.reply(connection, id, new RpcError(ErrorCode.invalidParams, 'invalid params: expected an object'));
      return;
    }
    // The member is not checked on inbound frames (§2.1), and a null id is a notification: the request the library
    // sees is rebuilt from the checked fields.
    const request: JSONRPCRequest = {
      jsonrpc: JSONRPC,
      method: record.method,
      params: (rawParams ?? {}) as Record<string, unknown>,
      ...(id === null ? {} : { id }),
    };
    const call: GatewayCall = { connection, afterResponse: [] };
    const answered = Promise.resolve(this.rpc.receive(request, call))
      .then((response) => {
        if (response) connection.send(response);
        for (const hook of call.afterResponse) {
          try {
            hook();
          } catch (error) {
            this.logger.error('after-response hook failed', { error: String(error) });
          }
        }
      })
      .catch((error: unknown) => this.logger.error('dispatcher failure', { error: String(error) }));
    if (call.slow) return;
    await answered;
  }

  private reply(connection: GatewayConnection, id: string | number | null, error: RpcError): void {
    connection.send({ jsonrpc: JSONRPC, id, error: error.toJSON() });
  }

  /**
   * The JSON-RPC server of every connection (§2.3 steps 7–11): one method per entry of the method table, the caller
   * passed along with each request. Its middleware refuses, in the spec's order, what no handler may see; the slow
   * methods (§2.5) wait for one of the process's slots inside their method, so the dispatcher never awaits them.
   */
  private createRpcServer(): JSONRPCServer<GatewayCall> {
    const server = new JSONRPCServer<GatewayCall>({
      // Thrown errors are answers (a handler's RpcError, a dispatcher failure): the log gets only the unexpected ones.
      errorListener: (message, error) => {
        if (!RpcError.isInstance(error)) this.logger.error(message, { error: String(error) });
      },
    });
    server.mapErrorToJSONRPCErrorResponse = (id, error) => {
      // A handler's failure is an RpcError by now (see below); anything else failed in the dispatcher itself.
      const rpcError = RpcError.isInstance(error) ? error : new RpcError(ErrorCode.internalError, 'internal error');
      return { jsonrpc: JSONRPC, id, error: rpcError.toJSON() };
    };
    server.handleMethodNotFound = async (request) =>
      request.id === undefined
        ? null
        : createJSONRPCErrorResponse(request.id, ErrorCode.methodNotFound, `unknown method: ${request.method}`);
    server.applyMiddleware((next, request, call) => {
      if (!server.hasMethod(request.method)) return next(request, call);
      const method = request.method as MethodName;
      const params = request.params as Record<string, unknown>;
      if (this.retiring && method !== 'ping') {
        throw new RpcError(ErrorCode.retiring, 'backend is retiring; reconnect to continue');
      }
      const allowed = acceptedKeys(method);
      const unknown = Object.keys(params)
        .filter((key) => !allowed.has(key))
        .sort();
      if (unknown.length > 0) {
        throw new RpcError(ErrorCode.unknownParamsKey, `invalid params for ${method}: ${unknown[0]}: unknown key`, {
          unknown_keys: unknown,
        });
      }
      const oversized = overlongText(params, this.maxTextChars());
      if (oversized !== null) {
        throw new RpcError(
          ErrorCode.invalidValue,
          `invalid value for ${oversized.path}: ${oversized.characters} characters exceed tui_gateway.max_text_chars (${oversized.limit})`,
          { param: oversized.path, max_chars: oversized.limit },
        );
      }
      if (SLOW_METHODS.has(method)) call.slow = true;
      return next(request, call);
    });
    for (const [name, handler] of Object.entries(METHOD_HANDLERS) as [MethodName, MethodHandler][]) {
      const run = async (params: Record<string, unknown>, call: GatewayCall) => {
        const context: MethodContext = {
          gateway: this,
          connection: call.connection,
          params,
          after: (fn) => call.afterResponse.push(fn),
        };
        try {
          const profile = params.profile;
          if (typeof profile === 'string' && profile !== '' && profile !== this.options.profileName) {
            throw new RpcError(ErrorCode.profileNotFound, `profile not found: ${profile}`);
          }
          return await handler(context);
        } catch (error) {
          if (RpcError.isInstance(error)) throw error;
          throw new RpcError(
            ErrorCode.handlerError,
            `handler error: ${error instanceof Error ? error.message : String(error)}`,
          );
        }
      };
      server.addMethod(
        name,
        SLOW_METHODS.has(name) ? (params, call) => this.whenSlotFree(() => run(params, call)) : run,
      );
    }
    return server;
  }

  /** Runs a slow handler when one of the process's slots is free (§2.5: at most 8, first in first out). */
  private whenSlotFree<T>(run: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const start = () => {
        this.slowRunning += 1;
        run()
          .then(resolve, reject)
          .finally(() => {
            this.slowRunning -= 1;
            this.slowQueue.shift()?.();
          });
      };
      if (this.slowRunning < SLOW_CONCURRENCY) start();
      else this.slowQueue.push(start);
    });
  }

  // ---- shutdown --------------------------------------------------------------------------------

  /** The shutdown sequence, steps 1–5 (§1.6). The caller exits the process. */
  async shutdown(): Promise<void> {
    if (this.retiring) return;
    this.retiring = true;
    this.relay?.close();
    this.serverRequests.withdrawAll(null, 'shutdown');
    this.stopTurnWatch();
    const sessions = [...this.sessions.values()];
    for (const session of sessions) session.interruptTurn(true);
    await Promise.all(sessions.map((session) => this.finalize(session, 'tui_shutdown')));
    for (const connection of [...this.connections]) {
      if (connection.transport.kind === 'websocket') await connection.transport.close(1001, 'shutdown');
    }
  }
}

function transport(connection: GatewayConnection): Transport {
  return connection.transport;
}

/**
 * The first string in a frame's params (at any depth) longer than `limit` code points, or null. A prompt, a paste, a
 * steer or a seeded message is held in memory, stored and sent to the model: one frame must not bring megabytes.
 */
export function overlongText(
  params: Record<string, unknown>,
  limit: number,
): { path: string; characters: number; limit: number } | null {
  const pending: [string, unknown][] = Object.entries(params);
  while (pending.length > 0) {
    const [path, value] = pending.pop() as [string, unknown];
    if (typeof value === 'string') {
      // A string of at most `limit` UTF-16 units has at most `limit` code points; only longer ones are counted.
      if (value.length > limit) {
        const characters = codePoints(value);
        if (characters > limit) return { path, characters, limit };
      }
    } else if (Array.isArray(value)) {
      for (const [index, item] of value.entries()) pending.push([`${path}[${index}]`, item]);
    } else if (typeof value === 'object' && value !== null) {
      for (const [key, item] of Object.entries(value)) pending.push([`${path}.${key}`, item]);
    }
  }
  return null;
}

function codePoints(text: string): number {
  let count = text.length;
  for (let index = 0; index < text.length; index += 1) {
    const unit = text.charCodeAt(index);
    // A high surrogate followed by a low one is one code point in two units.
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = text.charCodeAt(index + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        count -= 1;
        index += 1;
      }
    }
  }
  return count;
}
