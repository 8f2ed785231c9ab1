import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { step, text, toolCall } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { type AnyGatewayEvent, ClientError, GatewayClient, type ReconnectReport, RpcError } from '../src/index.js';
import { Cleanups, gatewayCommand, makeHome, startModel, until } from './support/fixtures.js';

const cleanups = new Cleanups();
afterEach(() => cleanups.run());

async function spawnClient(
  script: Parameters<typeof startModel>[0],
  options: Partial<ConstructorParameters<typeof GatewayClient>[0]> = {},
) {
  const home = makeHome(cleanups);
  const model = await startModel(script, cleanups);
  const client = await GatewayClient.connect({ connection: gatewayCommand(home, model.baseURL), ...options });
  cleanups.add(() => client.close());
  return { client, home, model };
}

describe('GatewayClient over a spawned hermes gateway (stdio)', () => {
  it('streams a turn to the async iterable and to typed listeners, every session event once with seq 1..n', async () => {
    const { client } = await spawnClient([step(text('Hello from the scripted model.'))]);
    expect(client.state).toBe('connected');
    expect(client.replayEpoch).toMatch(/^[0-9a-f]{16}$/);
    const created = await client.session.create({});
    expect(created.session_id).toMatch(/^[0-9a-f]{8}$/);
    const deltas: string[] = [];
    client.on('message.delta', (event) => deltas.push(event.payload.text));
    const all: AnyGatewayEvent[] = [];
    const collecting = (async () => {
      for await (const event of client.events({ sessionId: created.session_id })) {
        all.push(event);
        if (event.type === 'message.complete') break;
      }
    })();
    const turn = await client.startTurn({ session_id: created.session_id, text: 'hi' });
    expect(turn.result.status).toBe('streaming');
    const types: string[] = [];
    for await (const event of turn.events) types.push(event.type);
    const complete = await turn.completed;
    await collecting;
    expect(complete.status).toBe('complete');
    expect(complete.text).toBe('Hello from the scripted model.');
    expect(deltas.join('')).toBe('Hello from the scripted model.');
    expect(types[0]).toBe('message.start');
    expect(types.at(-1)).toBe('message.complete');
    const seqs = all.map((event) => event.seq);
    expect(seqs).toEqual(seqs.map((_, index) => (seqs[0] ?? 0) + index));
    // What the host saw is exactly what the replay ring recorded, in the same order.
    const ring = await client.session.eventsSince({ session_id: created.session_id, last_seen: 0 });
    const ringThroughComplete = ring.events.filter((event) => Number(event.seq) <= (seqs.at(-1) ?? 0));
    expect(ringThroughComplete.map((event) => event.seq)).toEqual(seqs);
  });

  it('rehydrates server errors as RpcError with the spec code, message and data', async () => {
    const { client } = await spawnClient([step(text('one'))]);
    const created = await client.session.create({});
    const error = await client.session.history({ session_id: 'deadbeef' }).catch((caught: unknown) => caught);
    expect(RpcError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ code: 4001, message: 'session not found' });
    const turn = await client.startTurn({ session_id: created.session_id, text: 'one' });
    await turn.completed;
    const history = await client.session.history({ session_id: created.session_id });
    const userRow = history.messages.find((message) => message.role === 'user');
    const refused = await client.prompt
      .submit({ session_id: created.session_id, text: 'x', truncate_before_row_id: userRow?.row_id ?? 0 })
      .catch((caught: unknown) => caught);
    expect(refused).toMatchObject({ code: 4029 });
    const stale = await client.prompt
      .submit({ session_id: created.session_id, text: 'x', truncate_before_row_id: 999_999, confirm_truncate: true })
      .catch((caught: unknown) => caught);
    expect(stale).toMatchObject({ code: 4018 });
    expect((stale as RpcError).data).toMatchObject({ user_turn_count: 1, ordinal: null });
  });

  it('an approval answered by the host handler lets the command run', async () => {
    const target = mkdtempSync(join(tmpdir(), 'hermes-sdk-approval-'));
    const requests: { command: string; redelivered: boolean }[] = [];
    const { client } = await spawnClient(
      [step(toolCall('terminal', { command: `rm -rf ${target}` }, 'call_rm')), step(text('removed'))],
      {
        handlers: {
          approval: (params, context) => {
            requests.push({ command: params.command, redelivered: context.redelivered });
            return { choice: 'once' };
          },
        },
      },
    );
    const created = await client.session.create({});
    const cancels: string[] = [];
    client.on('request.cancel', (event) => cancels.push(event.payload.reason));
    const turn = await client.startTurn({ session_id: created.session_id, text: 'clean up' });
    const complete = await turn.completed;
    expect(complete.status).toBe('complete');
    expect(requests).toEqual([{ command: `rm -rf ${target}`, redelivered: false }]);
    expect(cancels).toEqual(['resolved']);
    expect(existsSync(target)).toBe(false);
  });

  it('a server request of a kind the host did not register is declined at once with -32601', async () => {
    const { client } = await spawnClient([
      step(toolCall('clarify', { question: 'Pick one?', choices: ['x', 'y'] }, 'call_clarify')),
      step(text('went ahead without an answer')),
    ]);
    const created = await client.session.create({});
    const cancels: string[] = [];
    client.on('request.cancel', (event) => cancels.push(`${event.payload.method}:${event.payload.reason}`));
    const turn = await client.startTurn({ session_id: created.session_id, text: 'ask me' });
    // Without the decline the clarify would wait out its 300 s timeout; the turn ends well within the test's bound.
    const complete = await turn.completed;
    expect(complete.status).toBe('complete');
    expect(complete.text).toBe('went ahead without an answer');
    expect(cancels).toEqual(['clarify:resolved']);
  });

  it('a clarify handler answer reaches the tool, and the handler sees the question', async () => {
    const questions: string[] = [];
    const { client, model } = await spawnClient(
      [
        step(toolCall('clarify', { question: 'Pick one?', choices: ['x', 'y'] }, 'call_clarify')),
        step(text('you picked it')),
      ],
      {
        handlers: {
          clarify: (params) => {
            questions.push(params.question ?? '');
            return { answer: 'y' };
          },
        },
      },
    );
    const created = await client.session.create({});
    const turn = await client.startTurn({ session_id: created.session_id, text: 'ask me' });
    expect((await turn.completed).status).toBe('complete');
    expect(questions).toEqual(['Pick one?']);
    expect(model.calls[1]?.messages.at(-1)).toMatchObject({ role: 'tool', tool_call_id: 'call_clarify' });
    expect(JSON.stringify(model.calls[1]?.messages.at(-1))).toContain('answered: y');
  });

  it('a handler that throws answers -32603, so the command does not run and the turn goes on', async () => {
    const target = mkdtempSync(join(tmpdir(), 'hermes-sdk-throwing-'));
    const { client } = await spawnClient(
      [step(toolCall('terminal', { command: `rm -rf ${target}` }, 'call_rm')), step(text('could not run it'))],
      {
        handlers: {
          approval: () => {
            throw new Error('the approval card crashed');
          },
        },
      },
    );
    const created = await client.session.create({});
    const turn = await client.startTurn({ session_id: created.session_id, text: 'clean up' });
    const complete = await turn.completed;
    expect(complete.text).toBe('could not run it');
    expect(existsSync(target)).toBe(true);
  });

  it('an aborted signal rejects the call with ClientError("aborted"), before or after sending', async () => {
    const { client } = await spawnClient([]);
    const before = new AbortController();
    before.abort();
    const early = await client.session.list({}, { signal: before.signal }).catch((caught: unknown) => caught);
    expect(ClientError.isInstance(early) && early.code).toBe('aborted');
    const during = new AbortController();
    const pending = client.session.list({}, { signal: during.signal });
    during.abort();
    const late = await pending.catch((caught: unknown) => caught);
    expect(ClientError.isInstance(late) && late.code).toBe('aborted');
    // The connection is still usable afterwards.
    expect(await client.ping()).toEqual({ pong: true });
  });

  it('when the spawned gateway dies, the client spawns a new one and resumes its sessions by stored id', async () => {
    const home = makeHome(cleanups);
    const model = await startModel([step(text('before the crash')), step(text('after the crash'))], cleanups);
    const base = gatewayCommand(home, model.baseURL);
    const pidFile = join(home, 'gateway.pid');
    // The shell records the pid of each gateway it becomes (exec), so the test can kill the real process.
    const client = await GatewayClient.connect({
      connection: {
        command: '/bin/sh',
        args: ['-c', `echo $$ > "${pidFile}"; exec "$0" "$@"`, base.command, ...base.args],
        env: base.env,
      },
      reconnect: { initialDelayMs: 50, maxDelayMs: 200 },
    });
    cleanups.add(() => client.close());
    const reports: ReconnectReport[] = [];
    client.onReconnect((report) => reports.push(report));
    const created = await client.session.create({});
    await (await client.startTurn({ session_id: created.session_id, text: 'one' })).completed;
    const firstPid = Number(readFileSync(pidFile, 'utf8'));
    process.kill(firstPid, 'SIGKILL');
    await until(() => reports.length === 1, 30_000, 'the respawn');
    expect(Number(readFileSync(pidFile, 'utf8'))).not.toBe(firstPid);
    expect(reports[0]?.epochChanged).toBe(true);
    const resumed = reports[0]?.sessions[0];
    expect(resumed?.storedSessionId).toBe(created.stored_session_id);
    const turn = await client.startTurn({ session_id: resumed?.sessionId as string, text: 'two' });
    expect((await turn.completed).text).toBe('after the crash');
  });

  it('a gateway command that cannot start is connection_refused, naming ENOENT', async () => {
    const error = await GatewayClient.connect({
      connection: { command: join(tmpdir(), 'no-such-hermes-command'), args: ['gateway'] },
    }).catch((caught: unknown) => caught);
    expect(ClientError.isInstance(error) && error.code).toBe('connection_refused');
    expect(String((error as Error).message)).toMatch(/could not start the gateway command: .*ENOENT/);
  });

  it('close() ends event streams and later calls fail with not_connected', async () => {
    const { client } = await spawnClient([]);
    const stream = client.events();
    const reading = (async () => {
      const seen: string[] = [];
      for await (const event of stream) seen.push(event.type);
      return seen;
    })();
    await client.close();
    expect(client.state).toBe('closed');
    expect(await reading).toEqual([]);
    const error = await client.ping().catch((caught: unknown) => caught);
    expect(ClientError.isInstance(error) && error.code).toBe('not_connected');
  });
});
