import { describe, expect, it } from 'vitest';
import type { AgentEvent } from './events.js';
import { type LiveSessionEvent, LiveSessionHub, type LiveSessionRelay } from './live-session-hub.js';
import type { ApprovalRequest, JsonObject, Logger } from './types.js';

const quiet: Logger = { debug() {}, info() {}, warn() {}, error() {} } as unknown as Logger;

let lastSeq = 0;
function event(sessionId: string, type: string, extra: Record<string, unknown> = {}): AgentEvent {
  lastSeq += 1;
  return { type, sessionId, turnId: 't1', seq: lastSeq, ts: 0, ...extra } as unknown as AgentEvent;
}

function approval(sessionId: string, requestId = 'apr_1'): ApprovalRequest {
  return {
    requestId,
    sessionId,
    turnId: 't1',
    callId: 'c1',
    toolName: 'terminal',
    command: 'rm -rf x',
    cwd: '/',
    patternKeys: ['recursive_delete'],
    descriptions: ['recursive delete'],
    choices: ['once', 'session', 'deny'],
    expiresAt: 0,
  } as ApprovalRequest;
}

/** Two relays linked in memory, as two instances on one PostgreSQL bus see each other. */
function linkedRelays(): [LiveSessionRelay, LiveSessionRelay] {
  const listeners = new Map<string, Set<(from: string, message: JsonObject) => void>>();
  const make = (holder: string, other: string): LiveSessionRelay => ({
    holder,
    shared: true,
    async relay(to, message) {
      if (to !== '*' && to !== other) return;
      const copy = JSON.parse(JSON.stringify(message)) as JsonObject;
      setImmediate(() => {
        for (const listener of listeners.get(other) ?? []) listener(holder, copy);
      });
    },
    onRelay(listener) {
      const set = listeners.get(holder) ?? new Set();
      set.add(listener);
      listeners.set(holder, set);
      return () => set.delete(listener);
    },
  });
  return [make('a', 'b'), make('b', 'a')];
}

const until = async (check: () => boolean) => {
  for (let round = 0; round < 500 && !check(); round += 1) await new Promise((resolve) => setTimeout(resolve, 5));
  expect(check()).toBe(true);
};

describe('LiveSessionHub', () => {
  it('delivers a session’s events to its subscribers only, until they unsubscribe', () => {
    const hub = new LiveSessionHub('a', quiet);
    const seen: LiveSessionEvent[] = [];
    const stop = hub.subscribe('S', (delivered) => seen.push(delivered));
    hub.publish(event('S', 'message.delta', { text: 'hi' }));
    hub.publish(event('T', 'message.delta', { text: 'other session' }));
    stop();
    hub.publish(event('S', 'message.delta', { text: 'after' }));
    expect(seen.map((delivered) => delivered.event.type)).toEqual(['message.delta']);
    expect(seen[0]).toMatchObject({ origin: 'a', remote: false });
    expect(hub.watched('S')).toBe(false);
  });

  it('an approval answered through the hub wins over the surface that asked, whose wait is aborted as resolved', async () => {
    const hub = new LiveSessionHub('a', quiet);
    let surfaceSignal: AbortSignal | null = null;
    const answer = hub.ask(approval('S'), new AbortController().signal, (signal) => {
      surfaceSignal = signal;
      return new Promise<never>(() => {});
    });
    expect(hub.pendingApprovals('S').map((request) => request.requestId)).toEqual(['apr_1']);
    expect(hub.answerApproval('apr_1', 'session')).toBe(true);
    await expect(answer).resolves.toBe('session');
    expect((surfaceSignal as AbortSignal | null)?.aborted).toBe(true);
    expect(hub.pendingApprovals('S')).toEqual([]);
    expect(hub.answerApproval('apr_1', 'once')).toBe(false);
  });

  it('a choice the approval does not offer is applied as deny', async () => {
    const hub = new LiveSessionHub('a', quiet);
    const answer = hub.ask(approval('S'), new AbortController().signal, () => new Promise<never>(() => {}));
    hub.answerApproval('apr_1', 'always');
    await expect(answer).resolves.toBe('deny');
  });

  it('the surface’s own answer settles the approval and the hub forgets it', async () => {
    const hub = new LiveSessionHub('a', quiet);
    const answer = hub.ask(approval('S'), new AbortController().signal, async () => 'deny' as const);
    await expect(answer).resolves.toBe('deny');
    expect(hub.pendingApprovals('S')).toEqual([]);
  });

  it('across instances: watchers get the events of a turn elsewhere and answer its approval there', async () => {
    const [relayA, relayB] = linkedRelays();
    const hubA = new LiveSessionHub('a', quiet);
    const hubB = new LiveSessionHub('b', quiet);
    const stopA = hubA.relayThrough(relayA, { announceMs: 60_000 });
    const stopB = hubB.relayThrough(relayB, { announceMs: 60_000 });
    const seen: LiveSessionEvent[] = [];
    hubA.subscribe('S', (delivered) => seen.push(delivered));
    await until(() => hubB.watched('S'));
    const request = approval('S', 'apr_remote');
    const answer = hubB.ask(request, new AbortController().signal, () => new Promise<never>(() => {}));
    hubB.publish(event('S', 'message.delta', { text: 'from B' }));
    hubB.publish(event('S', 'approval.request', { request }));
    await until(() => seen.length === 2);
    expect(seen.map((delivered) => [delivered.event.type, delivered.origin, delivered.remote])).toEqual([
      ['message.delta', 'b', true],
      ['approval.request', 'b', true],
    ]);
    expect(hubA.answerApproval('apr_remote', 'once')).toBe(true);
    await expect(answer).resolves.toBe('once');
    stopA();
    stopB();
  });

  it('a watch that arrives after a turn began gets that turn from its start, and nothing twice', async () => {
    const [relayA, relayB] = linkedRelays();
    const hubA = new LiveSessionHub('a', quiet);
    const hubB = new LiveSessionHub('b', quiet);
    const stopA = hubA.relayThrough(relayA, { announceMs: 60_000 });
    const stopB = hubB.relayThrough(relayB, { announceMs: 60_000 });
    await new Promise((resolve) => setTimeout(resolve, 20));
    // B's turn begins before anyone watches it.
    hubB.publish({ ...event('S', 'turn.start', { input: { text: 'early', attachments: 0 } }), seq: 1 });
    hubB.publish({ ...event('S', 'message.delta', { text: 'one ' }), seq: 2 });
    const seen: LiveSessionEvent[] = [];
    hubA.subscribe('S', (delivered) => seen.push(delivered));
    await until(() => hubB.watched('S') && seen.length === 2);
    hubB.publish({ ...event('S', 'message.delta', { text: 'two' }), seq: 3 });
    hubB.publish({ ...event('S', 'turn.end', { result: {} }), seq: 4 });
    await until(() => seen.length === 4);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(seen.map((delivered) => delivered.event.type)).toEqual([
      'turn.start',
      'message.delta',
      'message.delta',
      'turn.end',
    ]);
    stopA();
    stopB();
  });

  it('a watch announced before a turn began but arriving after it ended still gets that turn; a later watch does not', async () => {
    const [relayA, relayB] = linkedRelays();
    const hubA = new LiveSessionHub('a', quiet);
    const hubB = new LiveSessionHub('b', quiet);
    const stopB = hubB.relayThrough(relayB, { announceMs: 60_000 });
    // A subscribes first; its watch is held back (the notification is late), and B runs a whole short turn meanwhile.
    const held: JsonObject[] = [];
    const lateRelay: LiveSessionRelay = {
      ...relayA,
      async relay(to, message) {
        if (message.t === 'hub.watch') held.push(message);
        else await relayA.relay(to, message);
      },
    };
    const stopA = hubA.relayThrough(lateRelay, { announceMs: 60_000 });
    const seen: LiveSessionEvent[] = [];
    hubA.subscribe('S', (delivered) => seen.push(delivered));
    await new Promise((resolve) => setTimeout(resolve, 5));
    hubB.publish({ ...event('S', 'turn.start', { input: { text: 'short', attachments: 0 } }), seq: 1 });
    hubB.publish({ ...event('S', 'message.delta', { text: 'done' }), seq: 2 });
    hubB.publish({ ...event('S', 'turn.end', { result: {} }), seq: 3 });
    expect(seen).toHaveLength(0);
    for (const message of held.splice(0)) await relayA.relay('*', message);
    await until(() => seen.length === 3);
    expect(seen.map((delivered) => delivered.event.type)).toEqual(['turn.start', 'message.delta', 'turn.end']);

    // A watch that began after the turn ended is not sent it: the client found that turn in the stored history.
    const later: LiveSessionEvent[] = [];
    hubA.subscribe('T', (delivered) => later.push(delivered));
    hubB.publish({ ...event('T', 'turn.start', { input: { text: 'before', attachments: 0 } }), seq: 4 });
    hubB.publish({ ...event('T', 'turn.end', { result: {} }), seq: 5 });
    held.length = 0;
    const since = Date.now() + 1;
    await new Promise((resolve) => setTimeout(resolve, 5));
    await relayA.relay('*', { t: 'hub.watch', sessions: ['T'], since });
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(later).toHaveLength(0);
    stopA();
    stopB();
  });

  it('an instance says hello once it hears the others, and again after a reconnect: what they watch reaches it', async () => {
    const [relayA, relayB] = linkedRelays();
    const hubA = new LiveSessionHub('a', quiet);
    const hubB = new LiveSessionHub('b', quiet);
    const stopA = hubA.relayThrough(relayA, { announceMs: 60_000 });
    // B does not hear anything until its connection listens: A's watch, sent meanwhile, is lost.
    let hearing = false;
    let listening: () => void = () => {};
    const reconnects = new Set<() => void>();
    const deafRelay: LiveSessionRelay = {
      ...relayB,
      onRelay: (listener) => relayB.onRelay((from, message) => hearing && listener(from, message)),
      ready: () => new Promise<void>((resolve) => (listening = resolve)),
      onReconnect: (listener) => {
        reconnects.add(listener);
        return () => reconnects.delete(listener);
      },
    };
    const stopB = hubB.relayThrough(deafRelay, { announceMs: 60_000 });
    const seen: LiveSessionEvent[] = [];
    hubA.subscribe('S', (delivered) => seen.push(delivered));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(hubB.watched('S')).toBe(false);
    hearing = true;
    listening();
    await until(() => hubB.watched('S'));
    hubB.publish({ ...event('S', 'turn.start', { input: { text: 'heard', attachments: 0 } }), seq: 1 });
    hubB.publish({ ...event('S', 'turn.end', { result: {} }), seq: 2 });
    await until(() => seen.length === 2);

    // A connection lost and regained: B hears A's watches again from the hello it says then.
    hearing = false;
    hubA.subscribe('T', () => {});
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(hubB.watched('T')).toBe(false);
    hearing = true;
    for (const listener of reconnects) listener();
    await until(() => hubB.watched('T'));
    stopA();
    stopB();
  });

  it('a remote turn whose instance lost the turn lease is ended for the watchers, as a failed turn', async () => {
    const [relayA, relayB] = linkedRelays();
    let bHoldsTheLease = true;
    const watcherRelay: LiveSessionRelay = { ...relayA, leaseHeld: async () => bHoldsTheLease };
    const hubA = new LiveSessionHub('a', quiet);
    const hubB = new LiveSessionHub('b', quiet);
    const stopA = hubA.relayThrough(watcherRelay, { announceMs: 20 });
    const stopB = hubB.relayThrough(relayB, { announceMs: 60_000 });
    const seen: LiveSessionEvent[] = [];
    hubA.subscribe('S', (delivered) => seen.push(delivered));
    await until(() => hubB.watched('S'));
    hubB.publish(event('S', 'turn.start', { input: { text: 'on B', attachments: 0 } }));
    await until(() => seen.length === 1);
    // B is killed: its lease lapses and no turn.end ever comes.
    bHoldsTheLease = false;
    await until(() => seen.length === 2);
    const end = seen[1]?.event as AgentEvent & { result?: { outcome: string; exitReason: string } };
    expect(end.type).toBe('turn.end');
    expect(end.result).toMatchObject({
      outcome: 'failed',
      exitReason: 'interrupted_by_system(session_turn_lease_lost)',
    });
    stopA();
    stopB();
  });

  it('knows a turn of this process by its id while it runs and after it ended, with its approvals and its end', async () => {
    const hub = new LiveSessionHub('a', quiet);
    expect(await hub.turn('t1')).toBeNull();
    hub.publish(event('S', 'turn.start', { input: { text: 'hello', attachments: 0 }, model: null }));
    expect(hub.turnOn('S')).toBe('t1');
    const request = approval('S');
    void hub.ask(request, new AbortController().signal, () => new Promise<never>(() => {}));
    const running = await hub.turn('t1');
    expect(running).toMatchObject({ turnId: 't1', sessionId: 'S', origin: 'a', input: 'hello', result: null });
    expect(running?.approvals.map((entry) => entry.request.requestId)).toEqual(['apr_1']);
    hub.answerApproval('apr_1', 'once');
    expect((await hub.turn('t1'))?.approvals).toEqual([]);
    hub.publish(event('S', 'turn.end', { result: { outcome: 'completed', finalText: 'bye' } }));
    expect(hub.turnOn('S')).toBeUndefined();
    expect((await hub.turn('t1'))?.result).toMatchObject({ outcome: 'completed', finalText: 'bye' });
  });

  it('a stop or a steer of a turn reaches the host’s controls only while that turn runs', async () => {
    const hub = new LiveSessionHub('a', quiet);
    const acted: string[] = [];
    hub.controlTurnsWith({
      interrupt: (sessionId, turnId, options) => {
        acted.push(`interrupt ${sessionId} ${turnId} ${options.issuer}`);
        return true;
      },
      steer: (sessionId, turnId, text) => {
        acted.push(`steer ${sessionId} ${turnId} ${text}`);
        return { status: 'queued' };
      },
    });
    expect(await hub.actOnTurn('t1', { kind: 'interrupt', options: { issuer: 'user' } })).toEqual({
      status: 'not_running',
    });
    hub.publish(event('S', 'turn.start', { input: { text: 'hello', attachments: 0 }, model: null }));
    expect(await hub.actOnTurn('t1', { kind: 'steer', text: 'left' })).toEqual({
      status: 'done',
      steer: { status: 'queued' },
    });
    expect(await hub.actOnTurn('t1', { kind: 'interrupt', options: { issuer: 'user', hard: true } })).toEqual({
      status: 'done',
    });
    expect((await hub.turn('t1'))?.stopping).toBe(true);
    hub.publish(event('S', 'turn.end', { result: { outcome: 'cancelled' } }));
    expect(await hub.actOnTurn('t1', { kind: 'interrupt', options: {} })).toEqual({ status: 'not_running' });
    expect(acted).toEqual(['steer S t1 left', 'interrupt S t1 user']);
  });

  it('across instances: a turn of another instance is described, stopped and steered by its owner, watched or not', async () => {
    const [relayA, relayB] = linkedRelays();
    const hubA = new LiveSessionHub('a', quiet);
    const hubB = new LiveSessionHub('b', quiet);
    const stopA = hubA.relayThrough(relayA, { announceMs: 60_000, turnRequestTimeoutMs: 500 });
    const stopB = hubB.relayThrough(relayB, { announceMs: 60_000 });
    const acted: string[] = [];
    hubB.controlTurnsWith({
      interrupt: (_sessionId, turnId) => acted.push(`interrupt ${turnId}`) > 0,
      steer: (_sessionId, turnId, text) => {
        acted.push(`steer ${turnId} ${text}`);
        return { status: 'queued' };
      },
    });
    hubB.publish(event('S', 'turn.start', { input: { text: 'on B', attachments: 0 }, model: null }));
    const request = approval('S', 'apr_b');
    const answer = hubB.ask(request, new AbortController().signal, () => new Promise<never>(() => {}));
    // A does not watch S: it asks every instance, and B, which runs the turn, answers.
    const described = await hubA.turn('t1');
    expect(described).toMatchObject({ turnId: 't1', sessionId: 'S', origin: 'b', input: 'on B' });
    expect(described?.approvals.map((entry) => entry.request.requestId)).toEqual(['apr_b']);
    expect(hubA.answerApproval('apr_b', 'once', described?.origin)).toBe(true);
    await expect(answer).resolves.toBe('once');
    expect(await hubA.actOnTurn('t1', { kind: 'steer', text: 'go left' })).toEqual({
      status: 'done',
      steer: { status: 'queued' },
    });
    expect(await hubA.actOnTurn('t1', { kind: 'interrupt', options: { hard: true } })).toEqual({ status: 'done' });
    expect(acted).toEqual(['steer t1 go left', 'interrupt t1']);
    // An id no instance runs: nobody answers, and it is not running.
    expect(await hubA.turn('t_unknown')).toBeNull();
    expect(await hubA.actOnTurn('t_unknown', { kind: 'interrupt', options: {} })).toEqual({ status: 'not_running' });
    stopA();
    stopB();
  });

  it('an action on a watched remote turn whose instance does not answer is reported unreachable', async () => {
    const [relayA, relayB] = linkedRelays();
    const hubA = new LiveSessionHub('a', quiet);
    const hubB = new LiveSessionHub('b', quiet);
    const stopA = hubA.relayThrough(relayA, { announceMs: 60_000, turnRequestTimeoutMs: 200 });
    const stopB = hubB.relayThrough(relayB, { announceMs: 60_000 });
    const seen: LiveSessionEvent[] = [];
    hubA.subscribe('S', (delivered) => seen.push(delivered));
    await until(() => hubB.watched('S'));
    hubB.publish(event('S', 'turn.start', { input: { text: 'on B', attachments: 0 }, model: null }));
    await until(() => seen.length === 1);
    // B stops listening (frozen or cut off): A knows the turn is B's, and says B did not answer.
    stopB();
    expect(await hubA.actOnTurn('t1', { kind: 'interrupt', options: { hard: true } })).toEqual({
      status: 'unreachable',
    });
    stopA();
  });

  it('a question to every instance about a turn none runs ends once all listening instances said so', async () => {
    const [relayA, relayB] = linkedRelays();
    const listening = async () => ({ covers: (holders: Iterable<string>) => new Set(holders).has('b') });
    const hubA = new LiveSessionHub('a', quiet);
    const hubB = new LiveSessionHub('b', quiet);
    // A wait of a minute would outlast the test: the answer comes from B's "not here", not from the timeout.
    const stopA = hubA.relayThrough({ ...relayA, listening }, { announceMs: 60_000, turnRequestTimeoutMs: 60_000 });
    const stopB = hubB.relayThrough(relayB, { announceMs: 60_000 });
    expect(await hubA.turn('t_nowhere')).toBeNull();
    expect(await hubA.actOnTurn('t_nowhere', { kind: 'interrupt', options: {} })).toEqual({ status: 'not_running' });
    stopA();
    stopB();
  }, 10_000);

  it('ended turns are described for a while within a bound on the text they hold: the oldest go first', async () => {
    const hub = new LiveSessionHub('a', quiet);
    const long = 'x'.repeat(1_500_000);
    for (const turnId of ['t1', 't2', 't3', 't4']) {
      hub.publish({ ...event('S', 'turn.start', { input: { text: turnId, attachments: 0 }, model: null }), turnId });
      hub.publish({ ...event('S', 'turn.end', { result: { outcome: 'completed', finalText: long } }), turnId });
    }
    expect(await hub.turn('t1')).toBeNull();
    expect((await hub.turn('t4'))?.result).toMatchObject({ outcome: 'completed' });
    expect((await hub.turn('t3'))?.input).toBe('t3');
  });
});
