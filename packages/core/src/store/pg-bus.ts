import { createHash, randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type pg from 'pg';
import type { JsonObject, JsonValue } from '../types.js';
import { retry } from '../util/retry.js';
import type {
  AppendOptions,
  ListeningInstances,
  RunBus,
  RunBusOptions,
  RunControlReply,
  RunControlRequest,
  RunEventRecord,
  RunSettlement,
} from './run-bus-types.js';

/** The pool type the bus borrows (the PostgreSQL store's). */
export type PgPool = pg.Pool;

/** `NOTIFY` channels of the bus. */
const EVENTS_CHANNEL = 'hermes_run_events';
const CONTROL_CHANNEL = 'hermes_run_control';
const REPLY_CHANNEL = 'hermes_run_reply';
const RELAY_CHANNEL = 'hermes_relay';
/** Default of `relayPartsTimeoutMs`. */
const RELAY_PARTS_TIMEOUT_MS = 60_000;
/**
 * A relay message is cut into parts of at most this many UTF-16 code units (at most 3 bytes each in UTF-8),
 * so a part with its header stays under PostgreSQL's 8,000-byte notification limit.
 */
const RELAY_PART_UNITS = 2_500;

/** PostgreSQL refuses `NOTIFY` payloads of 8,000 bytes or more. */
export const MAX_CONTROL_PAYLOAD_BYTES = 7_900;

const RECONNECT_DELAYS_MS = [100, 250, 500, 1_000, 2_000];

/**
 * The `application_name` of the bus's listening connection starts with this; the rest is {@link instanceTag} of the
 * holder, so any instance can list the others that listen right now (`pg_stat_activity`).
 */
export const LISTENER_NAME_PREFIX = 'hermes-bus ';

/**
 * A holder id as the listening connection names it: a hash, because an `application_name` is cut at 63 bytes and
 * keeps ASCII only, and a holder id (host name, pid, random part) may be longer or not ASCII.
 */
function instanceTag(holder: string): string {
  return createHash('sha256').update(holder).digest('hex').slice(0, 24);
}

/**
 * The other instances listening, from the `application_name`s of the listening connections (all starting with
 * {@link LISTENER_NAME_PREFIX}); `holder` is this instance, left out.
 */
export function listeningFrom(names: string[], holder: string): ListeningInstances {
  const tags = new Set(names.map((name) => name.slice(LISTENER_NAME_PREFIX.length)));
  tags.delete(instanceTag(holder));
  return {
    size: tags.size,
    covers: (holders) => {
      const answered = new Set<string>();
      for (const holder of holders) {
        const tag = instanceTag(holder);
        if (tags.has(tag)) answered.add(tag);
      }
      return answered.size === tags.size;
    },
  };
}

/** A failed connect or `LISTEN` of the listening connection, already logged: the one failure retried. */
class ListenFailed extends Error {}

/** A run's newest events kept by default: the runs API's backlog (spec §19.3). */
const DEFAULT_KEEP_EVENTS = 1_000;
/** Older events are deleted each time a run's seq crosses a multiple of this, not on every append. */
const TRIM_EVERY = 100;

interface ControlMessage extends RunControlRequest {
  id: string;
  to: string;
  from: string;
}

/**
 * Items sent through one statement at a time: the first goes at once, items queued while a statement is in flight go
 * together in the next one, so they are committed (and their notifications delivered) in the order queued. Each
 * item's promise settles with the statement that carried it.
 *
 * An item added with `now` does not wait: it goes at once, with every item queued so far, in a statement beside the
 * one in flight. Those items are then no longer in order with the ones in flight; only callers whose order does not
 * span items (each run's appends, which never overlap) pass it.
 */
class SerialBatches<T> {
  private queued: { item: T; resolve: () => void; reject: (error: unknown) => void }[] = [];
  private sending: Promise<void> | null = null;

  constructor(private readonly send: (items: T[]) => Promise<void>) {}

  add(item: T, now = false): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queued.push({ item, resolve, reject });
      if (now && this.sending) void this.sendQueued();
      else this.sending ??= this.drain();
    });
  }

  /** Sends every queued item in one statement and settles their promises with it. */
  private async sendQueued(): Promise<void> {
    const batch = this.queued.splice(0);
    try {
      await this.send(batch.map((entry) => entry.item));
      for (const entry of batch) entry.resolve();
    } catch (error) {
      for (const entry of batch) entry.reject(error);
    }
  }

  private async drain(): Promise<void> {
    try {
      while (this.queued.length > 0) await this.sendQueued();
    } finally {
      this.sending = null;
    }
  }
}

interface ReplyMessage extends RunControlReply {
  id: string;
  to: string;
}

/**
 * The PostgreSQL run bus (ADR 0018). Events are rows of `run_events`, inserted with a
 * `pg_notify` in the same statement so a wake-up is sent only once they are committed; a wake-up
 * names the run and its newest seq, and readers fetch the rows. Control requests and their replies
 * are notifications addressed to a holder id on two shared channels. Queries go through the
 * store's pool; one extra connection listens, and is re-opened when it drops.
 */
export class PgRunBus implements RunBus {
  readonly shared = true;
  private readonly watchers = new EventEmitter();
  private readonly reconnects = new EventEmitter();
  private readonly waiting = new Map<string, (reply: RunControlReply) => void>();
  private handler: ((request: RunControlRequest) => Promise<RunControlReply>) | null = null;
  private listener: pg.Client | null = null;
  private closed = false;
  private connecting: Promise<void> | null = null;
  private attempt = 0;
  private readonly appends = new SerialBatches<{ runId: string; events: RunEventRecord[] }>((batch) =>
    this.writeAppends(batch),
  );
  private readonly relays = new SerialBatches<string[]>((batch) => this.sendRelayed(batch.flat()));
  private relaySerial = 0;
  /** Relay messages still missing parts, by sender and serial, with when their first part arrived. */
  private readonly relayParts = new Map<string, { parts: string[]; received: number; since: number }>();
  private readonly relayListeners = new Set<(from: string, message: JsonObject) => void>();

  constructor(
    private readonly pool: PgPool,
    readonly holder: string,
    private readonly options: RunBusOptions = {},
  ) {
    this.watchers.setMaxListeners(0);
    this.reconnects.setMaxListeners(0);
    this.connecting = this.listen();
  }

  /** Resolves once the listening connection is up (or the bus is closed). */
  ready(): Promise<void> {
    return this.connecting ?? Promise.resolve();
  }

  private warn(message: string, details: Record<string, JsonValue>): void {
    this.options.onWarning?.(message, details);
  }

  private async listen(): Promise<void> {
    // Retried until the connection listens or the bus is closed; only a failed connect is retried.
    await retry(
      async () => {
        if (this.closed) return;
        const { default: pgModule } = await import('pg');
        const client = new pgModule.Client(this.pool.options);
        client.on('error', (error) => this.dropped(client, error));
        client.on('end', () => this.dropped(client, null));
        client.on('notification', (message) => this.notified(message.channel, message.payload ?? ''));
        try {
          await client.connect();
          // Set after connecting, so a connection string's own `application_name` cannot override it; a statement of
          // its own, so the connection's last statement stays its LISTEN (what operators and tests look for).
          await client.query(`SET application_name = '${LISTENER_NAME_PREFIX}${instanceTag(this.holder)}'`);
          await client.query(
            `LISTEN ${EVENTS_CHANNEL}; LISTEN ${CONTROL_CHANNEL}; LISTEN ${REPLY_CHANNEL}; LISTEN ${RELAY_CHANNEL}`,
          );
        } catch (error) {
          client.removeAllListeners('end');
          await client.end().catch(() => {});
          this.warn('run bus could not listen', { reason: String(error) });
          throw new ListenFailed();
        }
        if (this.closed) {
          await client.end().catch(() => {});
          return;
        }
        this.listener = client;
        const reconnected = this.attempt > 0;
        this.attempt = 0;
        this.connecting = null;
        if (reconnected) this.reconnects.emit('reconnect');
      },
      {
        next: (error) => {
          if (!(error instanceof ListenFailed)) return { fail: error };
          const delay = RECONNECT_DELAYS_MS[Math.min(this.attempt, RECONNECT_DELAYS_MS.length - 1)] ?? 2_000;
          this.attempt += 1;
          return { retryInMs: delay };
        },
        // A real timer that does not keep the process alive: the bus has no clock of its own.
        sleep: (ms) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref()),
      },
    );
  }

  private dropped(client: pg.Client, error: Error | null): void {
    if (this.listener !== client) return;
    this.listener = null;
    client.removeAllListeners('end');
    void client.end().catch(() => {});
    if (this.closed) return;
    this.warn('run bus connection lost', { reason: error ? error.message : 'ended' });
    this.attempt = Math.max(1, this.attempt);
    this.connecting ??= this.listen();
  }

  private notified(channel: string, payload: string): void {
    if (channel === EVENTS_CHANNEL) {
      // `<run>:<seq>`, then a newline and the appended events as JSON when they fit in the notification.
      const line = payload.indexOf('\n');
      const head = line < 0 ? payload : payload.slice(0, line);
      const split = head.lastIndexOf(':');
      if (split <= 0) return;
      const runId = head.slice(0, split);
      if (this.watchers.listenerCount(runId) === 0) return;
      let events: RunEventRecord[] | undefined;
      if (line >= 0) {
        try {
          const rows = JSON.parse(payload.slice(line + 1)) as RunEventRecord[];
          events = rows.map(({ seq, payload: body }) => ({ seq, payload: body }));
        } catch {
          events = undefined;
        }
      }
      this.watchers.emit(runId, Number(head.slice(split + 1)), events);
      return;
    }
    if (channel === RELAY_CHANNEL) {
      this.relayed(payload);
      return;
    }
    let message: unknown;
    try {
      message = JSON.parse(payload);
    } catch {
      return;
    }
    if (channel === REPLY_CHANNEL) {
      const reply = message as ReplyMessage;
      if (reply.to !== this.holder) return;
      this.waiting.get(reply.id)?.(reply);
      return;
    }
    if (channel === CONTROL_CHANNEL) {
      const request = message as ControlMessage;
      if (request.to !== this.holder || !this.handler) return;
      void this.answer(request);
    }
  }

  private async answer(request: ControlMessage): Promise<void> {
    let reply: RunControlReply;
    try {
      reply = await (this.handler as NonNullable<typeof this.handler>)({
        kind: request.kind,
        runId: request.runId,
        body: request.body,
      });
    } catch (error) {
      reply = { status: 500, body: { error: { message: String(error), code: 'internal_error' } } };
    }
    let text = JSON.stringify({ ...reply, id: request.id, to: request.from } satisfies ReplyMessage);
    if (Buffer.byteLength(text) > MAX_CONTROL_PAYLOAD_BYTES)
      text = JSON.stringify({
        id: request.id,
        to: request.from,
        status: 500,
        body: { error: { message: 'The reply was too large to forward.', code: 'internal_error' } },
      } satisfies ReplyMessage);
    await this.pool
      .query('SELECT pg_notify($1, $2)', [REPLY_CHANNEL, text])
      .catch((error) => this.warn('run bus reply failed', { reason: String(error) }));
  }

  /**
   * Appends go out in one statement per round trip for all runs: the first is sent at once, and appends made while
   * it is in flight wait and go together in the next. Each resolves once its rows are committed.
   *
   * A run's last events go at once, with whatever appends are waiting, beside the statement in flight: the terminal
   * event is what another instance's reader waits for to close its stream, and behind a statement in flight it waited
   * that statement's round trip and its owner's next turn of the CPU as well (ADR 0096). Appends of different runs need
   * no order between them; each run's own never overlap.
   */
  append(runId: string, events: RunEventRecord[], options: AppendOptions = {}): Promise<void> {
    if (events.length === 0) return Promise.resolve();
    return this.appends.add({ runId, events }, options.last === true);
  }

  private async writeAppends(batch: { runId: string; events: RunEventRecord[] }[]): Promise<void> {
    const byRun = new Map<string, RunEventRecord[]>();
    for (const { runId, events } of batch) {
      const list = byRun.get(runId);
      if (list) list.push(...events);
      else byRun.set(runId, [...events]);
    }
    const parts: string[] = [];
    const notices: string[] = [];
    const trims: { run_id: string; upto: number }[] = [];
    const keep = this.options.keepEvents ?? DEFAULT_KEEP_EVENTS;
    // A settled run takes no event past its terminal one (its row's `wire_seq`): a stale owner that wakes after another
    // instance settled its run cannot append behind that run's end (issue 33.3, ADR 0049).
    for (const [runId, events] of byRun) {
      const json = JSON.stringify(
        events.map((event) => ({
          run_id: runId,
          seq: event.seq,
          event: String(event.payload.event),
          payload: event.payload,
        })),
      );
      parts.push(json.slice(1, -1));
      // The wake-up carries the run's events when they fit, which spares every reader a round trip; it is sent by
      // the inserting statement, so only once the rows are committed.
      const head = `${runId}:${events.at(-1)?.seq ?? 0}`;
      const carried = `${head}\n${json}`;
      notices.push(Buffer.byteLength(carried) <= MAX_CONTROL_PAYLOAD_BYTES ? carried : head);
      // Keep each run's newest events only, as the in-memory backlog does; readers start at the oldest kept one.
      const first = events[0]?.seq ?? 0;
      const last = events.at(-1)?.seq ?? 0;
      if (last >= keep && Math.floor(last / TRIM_EVERY) > Math.floor((first - 1) / TRIM_EVERY))
        trims.push({ run_id: runId, upto: last - keep });
    }
    await this.pool.query(
      `WITH inserted AS (
         INSERT INTO run_events (run_id, seq, event, payload, created_at)
         SELECT item->>'run_id', (item->>'seq')::int, item->>'event', item->'payload', $2
         FROM jsonb_array_elements($1::jsonb) AS item JOIN runs ON runs.id = item->>'run_id'
         WHERE runs.status IN ('queued', 'running', 'stopping')
           OR (item->>'seq')::int <= coalesce((runs.result->>'wire_seq')::int, -1)
         ON CONFLICT DO NOTHING)
       SELECT pg_notify($3, notice) FROM jsonb_array_elements_text($4::jsonb) AS notice`,
      [`[${parts.join(',')}]`, Date.now(), EVENTS_CHANNEL, JSON.stringify(notices)],
    );
    if (trims.length > 0)
      await this.pool.query(
        `DELETE FROM run_events AS stored USING jsonb_to_recordset($1::jsonb) AS kept(run_id text, upto int)
         WHERE stored.run_id = kept.run_id AND stored.seq <= kept.upto`,
        [JSON.stringify(trims)],
      );
  }

  async prune(endedBefore: number): Promise<number> {
    const result = await this.pool.query(
      `DELETE FROM run_events WHERE run_id IN (
         SELECT id FROM runs WHERE status IN ('completed', 'cancelled', 'failed') AND ended_at < $1)`,
      [endedBefore],
    );
    return result.rowCount ?? 0;
  }

  async read(runId: string, afterSeq: number, limit = 500): Promise<RunEventRecord[]> {
    const result = await this.pool.query<{ seq: number; payload: JsonObject }>(
      'SELECT seq, payload FROM run_events WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3',
      [runId, afterSeq, limit],
    );
    return result.rows;
  }

  async readNamed(runId: string, names: string[]): Promise<RunEventRecord[]> {
    const result = await this.pool.query<{ seq: number; payload: JsonObject }>(
      'SELECT seq, payload FROM run_events WHERE run_id = $1 AND event = ANY($2::text[]) ORDER BY seq',
      [runId, names],
    );
    return result.rows;
  }

  async latest(runId: string): Promise<RunEventRecord | null> {
    const result = await this.pool.query<{ seq: number; payload: JsonObject }>(
      'SELECT seq, payload FROM run_events WHERE run_id = $1 ORDER BY seq DESC LIMIT 1',
      [runId],
    );
    return result.rows[0] ?? null;
  }

  watch(runId: string, listener: (seq: number, events?: RunEventRecord[]) => void): () => void {
    this.watchers.on(runId, listener);
    return () => this.watchers.off(runId, listener);
  }

  onReconnect(listener: () => void): () => void {
    this.reconnects.on('reconnect', listener);
    return () => this.reconnects.off('reconnect', listener);
  }

  serve(handler: (request: RunControlRequest) => Promise<RunControlReply>): void {
    this.handler = handler;
  }

  async request(holder: string, request: RunControlRequest, timeoutMs: number): Promise<RunControlReply | null> {
    await this.ready();
    const id = randomBytes(12).toString('hex');
    const text = JSON.stringify({ ...request, id, to: holder, from: this.holder } satisfies ControlMessage);
    if (Buffer.byteLength(text) > MAX_CONTROL_PAYLOAD_BYTES)
      throw new RangeError(`A control request is limited to ${MAX_CONTROL_PAYLOAD_BYTES} bytes`);
    return new Promise<RunControlReply | null>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        resolve(null);
      }, timeoutMs);
      this.waiting.set(id, (reply) => {
        clearTimeout(timer);
        this.waiting.delete(id);
        resolve({ status: reply.status, body: reply.body, ...(reply.headers ? { headers: reply.headers } : {}) });
      });
      this.pool.query('SELECT pg_notify($1, $2)', [CONTROL_CHANNEL, text]).catch((error: unknown) => {
        clearTimeout(timer);
        this.waiting.delete(id);
        reject(error);
      });
    });
  }

  async leaseHolder(sessionId: string): Promise<string | null> {
    const result = await this.pool.query<{ holder: string }>(
      'SELECT holder FROM turn_leases WHERE session_id = $1 AND expires_at > $2',
      [sessionId, Date.now()],
    );
    return result.rows[0]?.holder ?? null;
  }

  async leaseHeld(sessionId: string, holder: string): Promise<boolean> {
    return (await this.leaseHolder(sessionId)) === holder;
  }

  async listening(): Promise<ListeningInstances | null> {
    let result: { rows: { name: string }[] };
    try {
      result = await this.pool.query<{ name: string }>(
        `SELECT DISTINCT application_name AS name FROM pg_stat_activity
         WHERE datname = current_database() AND starts_with(application_name, $1)`,
        [LISTENER_NAME_PREFIX],
      );
    } catch (error) {
      this.warn('listening instances not listed', { reason: String(error) });
      return null;
    }
    return listeningFrom(
      result.rows.map((row) => row.name),
      this.holder,
    );
  }

  async settleIfUnfinished(runId: string, settlement: RunSettlement): Promise<boolean> {
    const result = await this.pool.query(
      `UPDATE runs SET status = $2, result = $3::jsonb, exit_reason = $4, error = $5::jsonb, ended_at = $6, updated_at = $6
       WHERE id = $1 AND status IN ('queued', 'running', 'stopping')`,
      [
        runId,
        settlement.status,
        settlement.result === null ? null : JSON.stringify(settlement.result),
        settlement.exitReason,
        settlement.error === null ? null : JSON.stringify(settlement.error),
        settlement.endedAt,
      ],
    );
    return (result.rowCount ?? 0) > 0;
  }

  relay(to: string, message: JsonObject): Promise<void> {
    const text = JSON.stringify(message);
    this.relaySerial += 1;
    const parts: string[] = [];
    for (let start = 0; start < text.length || parts.length === 0; ) {
      let end = Math.min(text.length, start + RELAY_PART_UNITS);
      // Never split a surrogate pair: each part is sent as UTF-8 on its own.
      const last = text.charCodeAt(end - 1);
      if (end < text.length && last >= 0xd800 && last <= 0xdbff) end -= 1;
      parts.push(text.slice(start, end));
      start = end;
    }
    // `<to> <from> <serial> <part> <parts>` and a newline, then the part.
    const notices = parts.map(
      (part, index) =>
        `${encodeURIComponent(to)} ${encodeURIComponent(this.holder)} ${this.relaySerial} ${index} ${parts.length}\n${part}`,
    );
    return this.relays.add(notices);
  }

  /** One statement for queued relay notices, in order ({@link SerialBatches} keeps statements in order too). */
  private async sendRelayed(notices: string[]): Promise<void> {
    await this.pool.query(
      'SELECT pg_notify($1, notice) FROM jsonb_array_elements_text($2::jsonb) WITH ORDINALITY AS item(notice, n) ORDER BY n',
      [RELAY_CHANNEL, JSON.stringify(notices)],
    );
  }

  private relayed(payload: string): void {
    const line = payload.indexOf('\n');
    if (line < 0) return;
    const [rawTo, rawFrom, serial, index, count] = payload.slice(0, line).split(' ');
    if (!rawTo || !rawFrom) return;
    const to = decodeURIComponent(rawTo);
    const from = decodeURIComponent(rawFrom);
    if (from === this.holder || (to !== this.holder && to !== '*')) return;
    const part = payload.slice(line + 1);
    const key = `${from} ${serial}`;
    let text = part;
    if (count !== '1') {
      let pending = this.relayParts.get(key);
      if (pending === undefined) {
        this.dropStaleRelayParts();
        pending = { parts: [], received: 0, since: Date.now() };
        this.relayParts.set(key, pending);
      }
      if (pending.parts[Number(index)] === undefined) pending.received += 1;
      pending.parts[Number(index)] = part;
      if (pending.received < Number(count)) return;
      this.relayParts.delete(key);
      text = pending.parts.join('');
    }
    let message: JsonObject;
    try {
      message = JSON.parse(text) as JsonObject;
    } catch {
      this.warn('relay message unreadable', { from });
      return;
    }
    for (const listener of [...this.relayListeners]) listener(from, message);
  }

  /** Drops the relay messages whose parts stopped arriving (checked as a new message cut into parts starts). */
  private dropStaleRelayParts(): void {
    const oldest = Date.now() - (this.options.relayPartsTimeoutMs ?? RELAY_PARTS_TIMEOUT_MS);
    for (const [key, pending] of this.relayParts) {
      if (pending.since >= oldest) continue;
      this.relayParts.delete(key);
      this.warn('relay message incomplete, dropped', {
        from: key.slice(0, key.lastIndexOf(' ')),
        received: pending.received,
      });
    }
  }

  onRelay(listener: (from: string, message: JsonObject) => void): () => void {
    this.relayListeners.add(listener);
    return () => this.relayListeners.delete(listener);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.relayListeners.clear();
    this.relayParts.clear();
    this.watchers.removeAllListeners();
    this.reconnects.removeAllListeners();
    const client = this.listener;
    this.listener = null;
    if (client) {
      client.removeAllListeners('end');
      await client.end().catch(() => {});
    }
  }
}
