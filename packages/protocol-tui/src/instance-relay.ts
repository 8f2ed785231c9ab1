import type { JsonObject, ListeningInstances, Logger, RunBus } from '@hermes/core';
import type { GatewayConnection } from './connection.js';
import {
  createWebSocketTransport,
  ErrorCode,
  eventFrame,
  parseFrameText,
  RpcError,
  type Transport,
  type WebSocketLike,
} from './wire/index.js';

/**
 * The gateway's attach across instances (issue 17.2, ADR 0020). Several apps/server instances on one
 * PostgreSQL database each run their own live sessions; a session's runtime lives in exactly one of
 * them. When a client of instance B resumes a session that is live on instance A, B does not build a
 * second runtime: it opens a tunnel to A over the run bus's relay channel and A serves the tunnel as
 * one more WebSocket connection of its own gateway. From then on B passes the client's frames for that
 * session (and its answers to A's server requests) up the tunnel, and A's frames for it (events,
 * responses, server requests) down to the client, unchanged. The client sees A's runtime id.
 */

/** What the relay needs of the run bus (core's `RunBus`). */
export type RelayBus = Pick<RunBus, 'holder' | 'shared' | 'relay' | 'onRelay' | 'leaseHolder' | 'listening'>;

/** What the relay needs of its gateway. */
export interface RelayGateway {
  /** Serves a tunnel from another instance as a connection of this gateway. */
  connect(transport: Transport): void;
  /** Whether a session with this stored id is live here (and not being reaped). */
  isLive(storedId: string): boolean;
}

/** Options of {@link InstanceRelay}. */
export interface InstanceRelayOptions {
  /** A tunnel whose other end sends nothing for this long is closed (default 30 s); each end says it is alive at a third of it. */
  silenceMs?: number;
  /**
   * How long a resume waits for the listening instances to say whether the session is live there (default 300 ms);
   * it stops as soon as one says it is, or every one says it is not.
   */
  ownerWaitMs?: number;
  /** How long a resume sent up a tunnel waits for its answer (default 10 s). */
  answerWaitMs?: number;
}

type Frame = Record<string, unknown>;

/** A resume's question `who` in flight: the answers `here` and `not-here` it has had. */
interface OwnerAsk {
  here(holder: string): void;
  notHere(holder: string): void;
}

/** B's end: one client connection's tunnel to the instance running some of its sessions. */
interface Tunnel {
  id: string;
  owner: string;
  connection: GatewayConnection;
  /** Runtime ids (on the owner) of the sessions served through the tunnel. */
  runtimeIds: Set<string>;
  /** Ids of the owner's server requests sent to the client, whose answers go back up. */
  requestIds: Set<string | number>;
  /** `request_id`s of the owner's approval requests, so an `approval.respond` naming only one goes up too. */
  approvalIds: Set<string>;
  /** Ids of the client's requests sent up and not answered yet. */
  forwarded: Set<string | number>;
  /** The relay's own requests (`relay:<n>`) waiting for their answers. */
  waiting: Map<string, (frame: Frame | null) => void>;
  /** Frames held back until the response of a resume is written, so none reaches the client before it. */
  held: Frame[] | null;
  heardAt: number;
}

/** A's end: the socket a tunnel hands to the gateway. */
class TunnelSocket implements WebSocketLike {
  readonly bufferedAmount = 0;
  heardAt = Date.now();
  private closed = false;
  private readonly messageListeners: ((data: unknown, isBinary: boolean) => void)[] = [];
  private readonly closeListeners: (() => void)[] = [];

  constructor(
    /** The instance of the client at the other end. */
    readonly peer: string,
    private readonly sendDown: (text: string) => void,
    private readonly onClosed: (byGateway: boolean) => void,
  ) {}

  send(data: string): void {
    if (!this.closed) this.sendDown(data);
  }

  close(): void {
    this.end(true);
  }

  on(event: 'message' | 'close' | 'error', listener: (...args: never[]) => void): this {
    if (event === 'message') this.messageListeners.push(listener as (data: unknown, isBinary: boolean) => void);
    if (event === 'close') this.closeListeners.push(listener as () => void);
    return this;
  }

  deliver(text: string): void {
    this.heardAt = Date.now();
    for (const listener of this.messageListeners) listener(text, false);
  }

  end(byGateway: boolean): void {
    if (this.closed) return;
    this.closed = true;
    this.onClosed(byGateway);
    for (const listener of this.closeListeners) listener();
  }
}

export class InstanceRelay {
  private readonly tunnels = new Map<GatewayConnection, Map<string, Tunnel>>();
  private readonly served = new Map<string, TunnelSocket>();
  private readonly asks = new Map<string, OwnerAsk>();
  private readonly unsubscribe: () => void;
  private readonly timer: ReturnType<typeof setInterval>;
  private readonly silenceMs: number;
  private readonly ownerWaitMs: number;
  private readonly answerWaitMs: number;
  private serial = 0;

  constructor(
    private readonly bus: RelayBus,
    private readonly gateway: RelayGateway,
    private readonly logger: Logger,
    options: InstanceRelayOptions = {},
  ) {
    this.silenceMs = options.silenceMs ?? 30_000;
    this.ownerWaitMs = options.ownerWaitMs ?? 300;
    this.answerWaitMs = options.answerWaitMs ?? 10_000;
    this.unsubscribe = bus.onRelay((from, message) => this.received(from, message));
    this.timer = setInterval(() => this.keepAlive(), Math.max(50, Math.floor(this.silenceMs / 3)));
    this.timer.unref();
  }

  private send(to: string, message: JsonObject, onError?: (error: unknown) => void): void {
    this.bus.relay(to, message).catch((error: unknown) => {
      this.logger.warn('relay message not sent', { to, error: String(error) });
      onError?.(error);
    });
  }

  // ---- B: the client's instance ----------------------------------------------------------------

  /** This instance's holder id on the bus. */
  get holder(): string {
    return this.bus.holder;
  }

  /** The other instances listening on the bus now, or null when they could not be listed. */
  private listening(): Promise<ListeningInstances | null> {
    return this.bus.listening().catch(() => null);
  }

  /**
   * The instance where the session with this stored id is live (`owner`), or null when it is live nowhere else. An
   * instance that holds the session's turn lease but does not answer (frozen, overloaded) makes this throw: resuming a
   * second copy beside its running turn would split the session.
   *
   * `known` is what the caller read a moment ago: the listening instances (`SessionStore.readSession` with
   * `listeningBesides`, or `RunBus.listening`) and the session's lease holder. When no other instance listens, none is asked (none could hear the question, nor hold the session's
   * frames) and the lease read with the list decides; `asked` is then false, and what the caller read beside the list
   * is still current. Otherwise the question goes out as it always did, and the lease is read again after the answers.
   */
  async ownerOf(
    storedId: string,
    known?: { listed: ListeningInstances | null; leaseHolder: string | null },
  ): Promise<{ owner: string | null; asked: boolean }> {
    if (known?.listed && known.listed.size === 0) {
      this.refuseForeignLease(known.leaseHolder);
      return { owner: null, asked: false };
    }
    const owner = await this.askOwner(storedId, known?.listed ?? null);
    if (owner) return { owner, asked: true };
    this.refuseForeignLease(await this.bus.leaseHolder(storedId).catch(() => null));
    return { owner: null, asked: true };
  }

  private refuseForeignLease(holder: string | null): void {
    if (holder && holder !== this.bus.holder)
      throw new RpcError(
        ErrorCode.genericFailure,
        `resume failed: the session is live on instance ${holder}, which did not answer; retry resume`,
        { reason: 'session_owner_unreachable', holder },
      );
  }

  /**
   * Broadcasts `who` and resolves with the instance that answers `here`, or with null once every instance listening on
   * the bus (listed by PostgreSQL) has answered `not-here`, or after `ownerWaitMs` when one of them has not (it may be
   * slow, or not run a relay). An instance not listening cannot hear the question, nor hold the session's frames.
   * `known` is the list when the caller has just read it; otherwise it is read while the question travels.
   */
  private askOwner(storedId: string, known: ListeningInstances | null): Promise<string | null> {
    const ask = `${this.bus.holder}#${++this.serial}`;
    const notHere = new Set<string>();
    let listed: ListeningInstances | null = known;
    return new Promise<string | null>((resolve) => {
      const settle = (owner: string | null) => {
        if (!this.asks.delete(ask)) return;
        clearTimeout(timer);
        resolve(owner);
      };
      const timer = setTimeout(() => {
        if (!this.asks.has(ask)) return;
        this.logger.warn('resume: instances did not say whether the session is live there', {
          stored: storedId,
          answered: notHere.size,
          listening: listed?.size ?? null,
        });
        settle(null);
      }, this.ownerWaitMs);
      const answeredByAll = () => {
        if (listed?.covers(notHere)) settle(null);
      };
      this.asks.set(ask, {
        here: (holder) => settle(holder),
        notHere: (holder) => {
          notHere.add(holder);
          answeredByAll();
        },
      });
      // Listed while the question travels; an instance that starts listening after the list was read answers too.
      if (!known)
        void this.listening().then((instances) => {
          listed = instances;
          answeredByAll();
        });
      this.send('*', { t: 'who', ask, stored: storedId }, () => settle(null));
    });
  }

  /**
   * Resumes a session live on `owner` for `connection` through a tunnel: sends the client's capabilities and the
   * resume up, and answers with the owner's result (or throws its error). `after` writes frames that arrived
   * meanwhile once the response is out.
   */
  async resumeRemote(
    connection: GatewayConnection,
    owner: string,
    params: Record<string, unknown>,
    after: (fn: () => void) => void,
  ): Promise<Record<string, unknown>> {
    const tunnel = this.tunnelTo(connection, owner);
    tunnel.held ??= [];
    after(() => this.release(tunnel));
    this.up(tunnel, {
      jsonrpc: '2.0',
      id: this.internalId(),
      method: 'client.capabilities',
      params: { server_requests: connection.serverRequests },
    });
    const reply = await this.ask(tunnel, 'session.resume', params);
    if (!reply) {
      if (tunnel.runtimeIds.size === 0) this.closeTunnel(tunnel, true);
      throw new RpcError(
        ErrorCode.genericFailure,
        `resume failed: the instance running this session (${owner}) did not answer; retry resume`,
      );
    }
    const error = reply.error as { code?: unknown; message?: unknown; data?: unknown } | undefined;
    if (error)
      throw new RpcError(
        typeof error.code === 'number' ? error.code : ErrorCode.genericFailure,
        String(error.message ?? 'resume failed'),
        error.data as Record<string, unknown> | undefined,
      );
    const result = (reply.result ?? {}) as Record<string, unknown>;
    if (typeof result.session_id === 'string') tunnel.runtimeIds.add(result.session_id);
    // The snapshot lists the session's open server requests; the client may answer them by id.
    if (Array.isArray(result.open_requests))
      for (const request of result.open_requests as Frame[]) {
        if (typeof request.id === 'string') tunnel.requestIds.add(request.id);
        this.noteApproval(tunnel, request);
      }
    return result;
  }

  /**
   * Passes a client frame up a tunnel when it belongs there: an answer to one of the owner's server requests, or a
   * request naming a session served through the tunnel. Returns whether it did. `client.capabilities` is also
   * copied to every tunnel of the connection, and answered here as well.
   */
  route(connection: GatewayConnection, record: Frame): boolean {
    const tunnels = this.tunnels.get(connection);
    if (!tunnels) return false;
    const isRequest = typeof record.method === 'string';
    if (isRequest && record.method === 'client.capabilities') {
      for (const tunnel of tunnels.values()) this.up(tunnel, { ...record, id: this.internalId() });
      return false;
    }
    const id = record.id as string | number | undefined;
    const params = record.params as Frame | undefined;
    const sessionId = typeof params?.session_id === 'string' ? params.session_id : null;
    const requestId = typeof params?.request_id === 'string' ? params.request_id : null;
    for (const tunnel of tunnels.values()) {
      const forTunnel =
        (sessionId !== null && tunnel.runtimeIds.has(sessionId)) ||
        (record.method === 'approval.respond' &&
          sessionId === null &&
          requestId !== null &&
          tunnel.approvalIds.has(requestId));
      if (!isRequest && id !== undefined && tunnel.requestIds.delete(id)) {
        this.up(tunnel, record);
        return true;
      }
      if (isRequest && forTunnel) {
        if (id !== undefined && id !== null) tunnel.forwarded.add(id);
        this.up(tunnel, record);
        return true;
      }
    }
    return false;
  }

  /** A client connection closed: its tunnels close at both ends (the owner detaches, as for any connection). */
  connectionClosed(connection: GatewayConnection): void {
    for (const tunnel of [...(this.tunnels.get(connection)?.values() ?? [])]) this.closeTunnel(tunnel, true);
  }

  private tunnelTo(connection: GatewayConnection, owner: string): Tunnel {
    let byOwner = this.tunnels.get(connection);
    if (!byOwner) {
      byOwner = new Map();
      this.tunnels.set(connection, byOwner);
    }
    let tunnel = byOwner.get(owner);
    if (!tunnel) {
      tunnel = {
        id: `${this.bus.holder}/${connection.id}/${++this.serial}`,
        owner,
        connection,
        runtimeIds: new Set(),
        requestIds: new Set(),
        approvalIds: new Set(),
        forwarded: new Set(),
        waiting: new Map(),
        held: null,
        heardAt: Date.now(),
      };
      byOwner.set(owner, tunnel);
    }
    return tunnel;
  }

  private internalId(): string {
    return `relay:${++this.serial}`;
  }

  private ask(tunnel: Tunnel, method: string, params: Record<string, unknown>): Promise<Frame | null> {
    const id = this.internalId();
    return answerOf(tunnel.waiting, id, this.answerWaitMs, () =>
      this.up(tunnel, { jsonrpc: '2.0', id, method, params }),
    );
  }

  private up(tunnel: Tunnel, frame: Frame): void {
    this.send(tunnel.owner, { t: 'frame', dir: 'up', tunnel: tunnel.id, text: JSON.stringify(frame) }, () =>
      this.lost(tunnel, 'the instance running this session could not be reached'),
    );
  }

  private release(tunnel: Tunnel): void {
    const held = tunnel.held ?? [];
    tunnel.held = null;
    for (const frame of held) this.down(tunnel, frame);
  }

  /** A frame from the owner for the client. */
  private fromOwner(tunnel: Tunnel, text: string): void {
    tunnel.heardAt = Date.now();
    let frame: Frame;
    try {
      frame = JSON.parse(text) as Frame;
    } catch {
      return;
    }
    const id = frame.id as string | number | undefined;
    if (typeof frame.method !== 'string' && typeof id === 'string' && id.startsWith('relay:')) {
      tunnel.waiting.get(id)?.(frame);
      return;
    }
    if (frame.method === 'event' && (frame.params as Frame | undefined)?.type === 'gateway.ready') return;
    if (tunnel.held) tunnel.held.push(frame);
    else this.down(tunnel, frame);
  }

  private down(tunnel: Tunnel, frame: Frame): void {
    const id = frame.id as string | number | undefined;
    if (typeof frame.method === 'string' && frame.method !== 'event' && id !== undefined) {
      tunnel.requestIds.add(id);
      this.noteApproval(tunnel, frame);
    }
    if (typeof frame.method !== 'string' && id !== undefined) {
      tunnel.forwarded.delete(id);
      const result = frame.result as Frame | undefined;
      // A session the owner created for this client (a branch, say) is served through the same tunnel.
      if (typeof result?.session_id === 'string') tunnel.runtimeIds.add(result.session_id);
    }
    tunnel.connection.send(frame);
  }

  private noteApproval(tunnel: Tunnel, request: Frame): void {
    const requestId = (request.params as Frame | undefined)?.request_id;
    if (request.method === 'approval' && typeof requestId === 'string') tunnel.approvalIds.add(requestId);
  }

  /** The owner closed the tunnel or went silent: the client's open requests fail and its sessions are reclaimed. */
  private lost(tunnel: Tunnel, reason: string): void {
    if (!this.forget(tunnel)) return;
    for (const waiting of [...tunnel.waiting.values()]) waiting(null);
    const message = `${reason}; resume the session again`;
    for (const id of tunnel.forwarded)
      tunnel.connection.send({ jsonrpc: '2.0', id, error: { code: ErrorCode.genericFailure, message } });
    for (const runtimeId of tunnel.runtimeIds)
      tunnel.connection.send(
        eventFrame({
          type: 'session.reclaimed',
          session_id: '',
          payload: { session_id: runtimeId, reason: 'instance_unreachable', message },
        }),
      );
    this.logger.warn('gateway tunnel lost', { owner: tunnel.owner, reason });
  }

  private closeTunnel(tunnel: Tunnel, tellOwner: boolean): void {
    if (!this.forget(tunnel)) return;
    for (const waiting of [...tunnel.waiting.values()]) waiting(null);
    if (tellOwner) this.send(tunnel.owner, { t: 'close', dir: 'up', tunnel: tunnel.id });
  }

  private forget(tunnel: Tunnel): boolean {
    const byOwner = this.tunnels.get(tunnel.connection);
    if (byOwner?.get(tunnel.owner) !== tunnel) return false;
    byOwner.delete(tunnel.owner);
    if (byOwner.size === 0) this.tunnels.delete(tunnel.connection);
    return true;
  }

  // ---- A: the owner's instance ------------------------------------------------------------------

  /** A frame from a client of another instance: the first one of a tunnel opens it as a connection here. */
  private fromClientInstance(from: string, tunnelId: string, text: string): void {
    let socket = this.served.get(tunnelId);
    if (socket && socket.peer !== from) return;
    if (!socket) {
      const opened = new TunnelSocket(
        from,
        (data) => this.send(from, { t: 'frame', dir: 'down', tunnel: tunnelId, text: data }, () => opened.end(false)),
        (byGateway) => {
          this.served.delete(tunnelId);
          if (byGateway) this.send(from, { t: 'close', dir: 'down', tunnel: tunnelId });
        },
      );
      socket = opened;
      this.served.set(tunnelId, socket);
      this.gateway.connect(createWebSocketTransport(socket));
    }
    if (parseFrameText(text)) socket.deliver(text);
  }

  // ---- both ------------------------------------------------------------------------------------

  private received(from: string, message: JsonObject): void {
    const kind = message.t;
    if (kind === 'who') {
      if (typeof message.stored !== 'string') return;
      // Both answers are sent: a `not-here` lets the asker stop waiting once every listening instance has said so.
      const live = this.gateway.isLive(message.stored);
      this.send(from, { t: live ? 'here' : 'not-here', ask: message.ask ?? null });
      return;
    }
    if (kind === 'here' || kind === 'not-here') {
      const ask = typeof message.ask === 'string' ? this.asks.get(message.ask) : undefined;
      if (kind === 'here') ask?.here(from);
      else ask?.notHere(from);
      return;
    }
    const tunnelId = typeof message.tunnel === 'string' ? message.tunnel : null;
    if (!tunnelId) return;
    if (message.dir === 'up') {
      if (kind === 'frame' && typeof message.text === 'string') this.fromClientInstance(from, tunnelId, message.text);
      else if (kind === 'alive') {
        const socket = this.served.get(tunnelId);
        if (socket) socket.heardAt = Date.now();
      } else if (kind === 'close') this.served.get(tunnelId)?.end(false);
      return;
    }
    const tunnel = this.tunnelById(from, tunnelId);
    if (!tunnel) return;
    if (kind === 'frame' && typeof message.text === 'string') this.fromOwner(tunnel, message.text);
    else if (kind === 'alive') tunnel.heardAt = Date.now();
    else if (kind === 'close') this.lost(tunnel, 'the instance running this session closed it');
  }

  private tunnelById(owner: string, id: string): Tunnel | undefined {
    for (const byOwner of this.tunnels.values()) {
      const tunnel = byOwner.get(owner);
      if (tunnel?.id === id) return tunnel;
    }
    return undefined;
  }

  /** Each end says it is alive; a tunnel whose other end went silent is closed. */
  private keepAlive(): void {
    const now = Date.now();
    for (const byOwner of [...this.tunnels.values()])
      for (const tunnel of [...byOwner.values()]) {
        if (now - tunnel.heardAt > this.silenceMs)
          this.lost(tunnel, 'the instance running this session stopped answering');
        else this.send(tunnel.owner, { t: 'alive', dir: 'up', tunnel: tunnel.id });
      }
    for (const [tunnelId, socket] of [...this.served]) {
      if (now - socket.heardAt > this.silenceMs) socket.end(false);
      else this.send(socket.peer, { t: 'alive', dir: 'down', tunnel: tunnelId });
    }
  }

  /** Closes every tunnel (shutdown). */
  close(): void {
    clearInterval(this.timer);
    for (const byOwner of [...this.tunnels.values()])
      for (const tunnel of [...byOwner.values()]) this.closeTunnel(tunnel, true);
    for (const socket of [...this.served.values()]) socket.end(true);
    this.unsubscribe();
  }
}

/**
 * Registers `key` in `waiting`, then calls `start` (which sends the question); resolves with what is passed to the
 * registered function (an answer, or null when the question is lost), or with null after `timeoutMs`.
 */
function answerOf<T>(
  waiting: Map<string, (value: T | null) => void>,
  key: string,
  timeoutMs: number,
  start: (settle: (value: T | null) => void) => void,
): Promise<T | null> {
  return new Promise<T | null>((resolve) => {
    const settle = (value: T | null) => {
      clearTimeout(timer);
      waiting.delete(key);
      resolve(value);
    };
    const timer = setTimeout(() => settle(null), timeoutMs);
    waiting.set(key, settle);
    start(settle);
  });
}
