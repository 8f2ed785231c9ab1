import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startScriptedOpenAIServer, step, text, toolCall } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { HERMES_TUI_METHODS } from './fixtures/hermes-tui-methods.js';
import {
  createFixture,
  createWebSocketFixture,
  type Frame,
  type GatewayFixture,
  spawnGateway,
  type TestClient,
} from './support/client.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function fixture(options: Parameters<typeof createFixture>[0] = {}): Promise<GatewayFixture> {
  const created = await createFixture(options);
  cleanups.push(() => created.dispose());
  return created;
}

function workspace(): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'hermes-tui-ws-')));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A 1×1 PNG. */
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
);

describe('the Hermes TUI method set (issue 16.1)', () => {
  it('no method the TUI sends answers -32601', async () => {
    const client = await (await fixture()).connect('stdio');
    const missing: string[] = [];
    for (const method of HERMES_TUI_METHODS) {
      const answer = await client.call(method, {});
      if (answer.error?.code === -32601) missing.push(method);
    }
    expect(missing).toEqual([]);
  });

  // skills.manage and skills.reload in depth: test/skills.test.ts.

  it('a replay of the TUI start-up traffic gets no error frame, and config.get full carries display.*', async () => {
    const gateway = await fixture({
      configYaml: 'session:\n  auto_title: false\ndisplay:\n  tui_compact: true\n  busy_input_mode: queue\n',
    });
    const client = await gateway.connect('stdio');
    // In the order the TUI sends them after gateway.ready (createGatewayEventHandler, newSession,
    // useConfigSync, the useMainApp pollers, usePet and the wake auto-arm).
    await client.result('commands.catalog', {});
    const setup = await client.result('setup.status', {});
    expect(setup.provider_configured).toBe(true);
    const created = await client.result('session.create', { cols: 120 });
    expect(created.session_key).toBe(created.stored_session_id);
    const sid = created.session_id;
    const mtime = await client.result('config.get', { key: 'mtime' });
    expect(typeof mtime.mtime).toBe('number');
    const full = await client.result('config.get', { key: 'full' });
    expect(full.config.display).toMatchObject({ tui_compact: true, busy_input_mode: 'queue' });
    await client.result('session.control.read', { session_id: sid });
    await client.result('subagent.list', { session_id: sid });
    await client.result('process.list', { session_id: sid });
    await client.result('session.active_list', { current_session_id: sid });
    expect((await client.result('pet.info.meta')).enabled).toBe(false);
    const wake = await client.result('wake.start', { surface: 'tui' });
    expect(wake).toMatchObject({ started: false, reason: 'unavailable' });
    await client.result('terminal.resize', { cols: 100, session_id: sid });
    const errors = client.frames.filter((frame) => frame.error !== undefined);
    expect(errors).toEqual([]);
  });

  it('features the host lacks answer 4090, never a success', async () => {
    const client = await (await fixture()).connect();
    for (const method of ['billing.state', 'subscription.state', 'browser.manage']) {
      const answer = await client.call(method, method === 'browser.manage' ? { action: 'status' } : {});
      expect(answer.error).toMatchObject({
        code: 4090,
        message: expect.stringContaining('not available on this host'),
      });
    }
    const created = await client.result('session.create', {});
    const redo = await client.call('session.redo', { session_id: created.session_id });
    expect(redo.error.code).toBe(4090);
    expect((await client.result('voice.toggle', { action: 'on' })).enabled).toBe(false);
    expect((await client.result('wake.status', {})).available).toBe(false);
    expect((await client.call('config.set', { key: 'skin', value: 'ares' })).error.code).toBe(4090);
  });
});

/** The TUI's start-up requests after gateway.ready, then a `!pwd` escape and one prompt. */
async function replayStartup(client: TestClient): Promise<{ sid: string; shell: Frame }> {
  await client.result('commands.catalog', {});
  await client.result('setup.status', {});
  const created = await client.result('session.create', { cols: 100 });
  const sid = created.session_id as string;
  await client.result('config.get', { key: 'mtime' });
  await client.result('config.get', { key: 'full' });
  await client.result('session.control.read', { session_id: sid });
  await client.result('subagent.list', { session_id: sid });
  await client.result('process.list', { session_id: sid });
  await client.result('session.active_list', { current_session_id: sid });
  await client.result('pet.info.meta');
  await client.result('wake.start', { surface: 'tui' });
  const shell = await client.call('shell.exec', { command: 'pwd' });
  const drop = await client.result('input.detect_drop', { session_id: sid, text: 'hello there' });
  expect(drop.matched).toBe(false);
  await client.result('prompt.submit', { session_id: sid, text: 'hello there' });
  await client.event('message.complete', sid, () => true, 20_000);
  return { sid, shell };
}

describe('start-up replay over real wires', () => {
  it('`hermes gateway` over stdio: no error frame, every stdout line a frame, !pwd runs', async () => {
    const server = await startScriptedOpenAIServer({ script: [step(text('hi'))], apiKey: 'test-key' });
    cleanups.push(() => server.close());
    const gateway = spawnGateway(server.baseURL);
    cleanups.push(() => gateway.dispose());
    await gateway.client.waitFor((frame) => frame.params?.type === 'gateway.ready', 20_000);
    const { shell } = await replayStartup(gateway.client);
    expect(shell.result).toMatchObject({ code: 0 });
    expect(gateway.client.frames.filter((frame) => frame.error !== undefined)).toEqual([]);
    expect(gateway.client.frames.filter((frame) => 'unparsable' in frame)).toEqual([]);
  });

  it('a real WebSocket client: the same traffic, with the shell escape refused by default (4091)', async () => {
    const web = await createWebSocketFixture({ script: [step(text('hi'))] });
    cleanups.push(() => web.dispose());
    const client = await web.open();
    const { shell } = await replayStartup(client);
    expect(shell.error.code).toBe(4091);
    const errors = client.frames.filter((frame) => frame.error !== undefined);
    expect(errors).toHaveLength(1);
  });
});

describe('display settings', () => {
  it('the TUI display keys round-trip through config.yaml and show in config.get full', async () => {
    const gateway = await fixture();
    const client = await gateway.connect();
    expect(await client.result('config.set', { key: 'theme', value: 'dark' })).toEqual({ key: 'theme', value: 'dark' });
    expect(await client.result('config.set', { key: 'compact', value: 'on' })).toEqual({ key: 'compact', value: 'on' });
    await client.result('config.set', { key: 'details_mode.tools', value: 'expanded' });
    await client.result('config.set', { key: 'indicator', value: 'emoji' });
    expect((await client.result('config.get', { key: 'theme' })).value).toBe('dark');
    expect((await client.result('config.get', { key: 'indicator' })).value).toBe('emoji');
    const full = await client.result('config.get', { key: 'full' });
    expect(full.config.display).toMatchObject({
      tui_theme: 'dark',
      tui_compact: true,
      tui_status_indicator: 'emoji',
      sections: { tools: 'expanded' },
    });
    expect(readFileSync(join(gateway.host.homeDir, 'config.yaml'), 'utf8')).toContain('tui_theme: dark');
    expect((await client.call('config.set', { key: 'theme', value: 'purple' })).error.code).toBe(4002);
  });
});

describe('shell.exec', () => {
  it('runs in the session working directory and reports exit code and both streams', async () => {
    const cwd = workspace();
    const client = await (await fixture()).connect('stdio');
    const created = await client.result('session.create', { cwd });
    const result = await client.result('shell.exec', { command: 'pwd; echo oops >&2; exit 3' });
    expect(result.stdout.trim()).toBe(cwd);
    expect(result.stderr.trim()).toBe('oops');
    expect(result.code).toBe(3);
    const named = await client.result('shell.exec', { command: 'pwd', session_id: created.session_id });
    expect(named.stdout.trim()).toBe(cwd);
  });

  it('is off on WebSocket connections unless tui_gateway.allow_shell_exec is true', async () => {
    const off = await (await fixture()).connect('websocket');
    const refused = await off.call('shell.exec', { command: 'echo hi' });
    expect(refused.error.code).toBe(4091);
    expect(refused.error.message).toContain('tui_gateway.allow_shell_exec');
    const on = await (
      await fixture({ configYaml: 'session:\n  auto_title: false\ntui_gateway:\n  allow_shell_exec: true\n' })
    ).connect('websocket');
    expect((await on.result('shell.exec', { command: 'echo hi' })).stdout).toBe('hi\n');
  });
});

describe('rollback', () => {
  it('lists the checkpoint taken before write_file and patch, shows the diff and restores the file', async () => {
    const cwd = workspace();
    const file = join(cwd, 'notes.txt');
    writeFileSync(file, 'original\n');
    const client = await (
      await fixture({
        script: [
          step(toolCall('write_file', { path: 'notes.txt', content: 'rewritten\n' }, 'call_w')),
          step(toolCall('patch', { path: 'notes.txt', old_string: 'rewritten', new_string: 'patched' }, 'call_p')),
          step(toolCall('write_file', { path: 'fresh.txt', content: 'new\n' }, 'call_n')),
          step(text('done')),
        ],
      })
    ).connect();
    const sid = (await client.result('session.create', { cwd })).session_id;
    await client.result('prompt.submit', { session_id: sid, text: 'edit the notes' });
    await client.event('message.complete', sid);
    expect(readFileSync(file, 'utf8')).toBe('patched\n');
    const listed = await client.result('rollback.list', { session_id: sid });
    expect(listed.enabled).toBe(true);
    expect(listed.checkpoints.map((checkpoint: { message: string }) => checkpoint.message)).toEqual([
      'before creating fresh.txt',
      'before writing notes.txt',
      'before writing notes.txt',
    ]);
    const first = listed.checkpoints[2].hash as string;
    const diff = await client.result('rollback.diff', { session_id: sid, hash: first });
    expect(diff.diff).toContain('-original');
    expect(diff.diff).toContain('+patched');
    expect(diff.stat).toContain('fresh.txt (new)');
    const restored = await client.result('rollback.restore', { session_id: sid, hash: first.slice(0, 10) });
    expect(restored).toMatchObject({ success: true, restored_to: first });
    expect(readFileSync(file, 'utf8')).toBe('original\n');
    expect(existsSync(join(cwd, 'fresh.txt'))).toBe(false);
    expect((await client.result('rollback.list', { session_id: sid })).checkpoints).toEqual([]);
    expect((await client.call('rollback.diff', { session_id: sid, hash: first })).error.code).toBe(4014);
  });

  it('restores one file alone', async () => {
    const cwd = workspace();
    writeFileSync(join(cwd, 'a.txt'), 'a0');
    writeFileSync(join(cwd, 'b.txt'), 'b0');
    const client = await (
      await fixture({
        script: [
          step(toolCall('write_file', { path: 'a.txt', content: 'a1' }, 'call_a')),
          step(toolCall('write_file', { path: 'b.txt', content: 'b1' }, 'call_b')),
          step(text('done')),
        ],
      })
    ).connect();
    const sid = (await client.result('session.create', { cwd })).session_id;
    await client.result('prompt.submit', { session_id: sid, text: 'go' });
    await client.event('message.complete', sid);
    const listed = await client.result('rollback.list', { session_id: sid });
    const oldest = listed.checkpoints[1].hash;
    const restored = await client.result('rollback.restore', { session_id: sid, hash: oldest, file_path: 'b.txt' });
    expect(restored.files).toEqual(['b.txt']);
    expect(readFileSync(join(cwd, 'b.txt'), 'utf8')).toBe('b0');
    expect(readFileSync(join(cwd, 'a.txt'), 'utf8')).toBe('a1');
  });
});

describe('stored sessions', () => {
  it('session.delete removes a stored session; most_recent and list agree; a second delete is 4007', async () => {
    const gateway = await fixture({ script: [step(text('one')), step(text('two'))] });
    const client = await gateway.connect();
    const first = await client.result('session.create', {});
    await client.result('prompt.submit', { session_id: first.session_id, text: 'first' });
    await client.event('message.complete', first.session_id);
    const second = await client.result('session.create', {});
    await client.result('prompt.submit', { session_id: second.session_id, text: 'second' });
    await client.event('message.complete', second.session_id);
    expect((await client.result('session.most_recent', {})).session_id).toBe(second.stored_session_id);
    await client.result('session.close', { session_id: first.session_id });
    expect(await client.result('session.delete', { session_id: first.stored_session_id })).toEqual({
      deleted: first.stored_session_id,
    });
    const ids = (await client.result('session.list', {})).sessions.map((entry: { id: string }) => entry.id);
    expect(ids).not.toContain(first.stored_session_id);
    expect(await gateway.host.store.getSession(first.stored_session_id)).toBeNull();
    expect((await client.call('session.delete', { session_id: first.stored_session_id })).error.code).toBe(4007);
  });

  it('a live session is refused with 4023, for its own client and any other; once closed it deletes', async () => {
    const gateway = await fixture({ script: [step(text('hello'))] });
    const owner = await gateway.connect();
    const other = await gateway.connect();
    const created = await owner.result('session.create', {});
    await owner.result('prompt.submit', { session_id: created.session_id, text: 'hi' });
    await owner.event('message.complete', created.session_id);
    for (const [client, target] of [
      [other, created.stored_session_id],
      [owner, created.stored_session_id],
      [owner, created.session_id],
    ] as const) {
      const refused = await client.call('session.delete', { session_id: target });
      expect(refused.error.code).toBe(4023);
    }
    expect(await gateway.host.store.getSession(created.stored_session_id)).not.toBeNull();
    expect((await owner.result('session.history', { session_id: created.session_id })).count).toBe(2);
    await owner.result('session.close', { session_id: created.session_id });
    expect(await other.result('session.delete', { session_id: created.stored_session_id })).toEqual({
      deleted: created.stored_session_id,
    });
  });

  it('a stored session with a turn in flight on another surface (not open in the gateway) is refused with 4023', async () => {
    const gateway = await fixture({ script: [step(text('hello'))] });
    const client = await gateway.connect();
    const created = await client.result('session.create', {});
    await client.result('prompt.submit', { session_id: created.session_id, text: 'hi' });
    await client.event('message.complete', created.session_id);
    await client.result('session.close', { session_id: created.session_id });
    // The HTTP API claims the session in the host's registry for the whole of a turn it runs (ADR 0037).
    const claim = gateway.host.turns.claim(created.stored_session_id, { surface: 'runs', id: 'run_1' });
    expect(claim).not.toBeNull();
    const refused = await client.call('session.delete', { session_id: created.stored_session_id });
    expect(refused.error.code).toBe(4023);
    expect(await gateway.host.store.getSession(created.stored_session_id)).not.toBeNull();
    claim?.release();
    expect(await client.result('session.delete', { session_id: created.stored_session_id })).toEqual({
      deleted: created.stored_session_id,
    });
  });

  it('session.save writes the transcript as JSON in the session directory', async () => {
    const cwd = workspace();
    const client = await (await fixture({ script: [step(text('saved reply'))] })).connect();
    const created = await client.result('session.create', { cwd });
    await client.result('prompt.submit', { session_id: created.session_id, text: 'keep this' });
    await client.event('message.complete', created.session_id);
    const saved = await client.result('session.save', { session_id: created.session_id });
    expect(saved.file).toBe(join(cwd, `hermes_conversation_${created.stored_session_id}.json`));
    const document = JSON.parse(readFileSync(saved.file, 'utf8'));
    expect(document.messages.map((message: { text?: string }) => message.text)).toEqual(['keep this', 'saved reply']);
  });
});

describe('composer helpers', () => {
  it('complete.slash offers command names after the slash', async () => {
    const client = await (await fixture()).connect();
    const result = await client.result('complete.slash', { text: '/mo' });
    expect(result.replace_from).toBe(1);
    expect(result.items.map((item: { text: string }) => item.text)).toContain('model');
    expect(result.items.every((item: { text: string }) => item.text.startsWith('mo'))).toBe(true);
  });

  it('complete.path lists entries of the session directory, folders with a slash', async () => {
    const cwd = workspace();
    mkdirSync(join(cwd, 'src'));
    writeFileSync(join(cwd, 'setup.py'), '');
    writeFileSync(join(cwd, '.secret'), '');
    const client = await (await fixture()).connect();
    await client.result('session.create', { cwd });
    const result = await client.result('complete.path', { word: './s' });
    expect(result.items.map((item: { text: string }) => item.text)).toEqual(['./setup.py', './src/']);
    const folders = await client.result('complete.path', { word: '@folder:s' });
    expect(folders.items.map((item: { text: string }) => item.text)).toEqual(['@folder:src/']);
  });

  it('input.detect_drop attaches a dropped image, names a dropped file, and leaves text alone', async () => {
    const cwd = workspace();
    writeFileSync(join(cwd, 'shot.png'), PNG);
    writeFileSync(join(cwd, 'notes.md'), '# notes');
    const client = await (await fixture()).connect();
    const sid = (await client.result('session.create', { cwd })).session_id;
    const image = await client.result('input.detect_drop', { session_id: sid, text: `${join(cwd, 'shot.png')}` });
    expect(image).toMatchObject({ matched: true, is_image: true, name: 'shot.png', width: 1, height: 1 });
    const file = await client.result('input.detect_drop', { session_id: sid, text: `'${join(cwd, 'notes.md')}'` });
    expect(file).toMatchObject({ matched: true, is_image: false, text: `[file: ${join(cwd, 'notes.md')}]` });
    expect(await client.result('input.detect_drop', { session_id: sid, text: 'just words' })).toEqual({
      matched: false,
    });
  });

  it('paste.collapse keeps the paste in a file under HERMES_HOME', async () => {
    const gateway = await fixture();
    const client = await gateway.connect();
    const body = Array.from({ length: 40 }, (_, index) => `line ${index}`).join('\n');
    const result = await client.result('paste.collapse', { text: body });
    expect(result.path.startsWith(join(gateway.host.homeDir, 'pastes'))).toBe(true);
    expect(readFileSync(result.path, 'utf8')).toBe(body);
    expect(result.lines).toBe(40);
  });
});

describe('prompt.btw', () => {
  it('answers a side question from a snapshot of the conversation and leaves the session alone', async () => {
    const gateway = await fixture({ script: [step(text('the capital is Paris')), step(text('side: Paris'))] });
    const client = await gateway.connect();
    const created = await client.result('session.create', {});
    const sid = created.session_id;
    await client.result('prompt.submit', { session_id: sid, text: 'capital of France?' });
    await client.event('message.complete', sid);
    const started = await client.result('prompt.btw', { session_id: sid, text: 'which country was that?' });
    expect(started.task_id).toMatch(/^btw_[0-9a-f]{6}$/);
    const done = await client.event('btw.complete', sid);
    expect(done.payload).toEqual({ task_id: started.task_id, text: 'side: Paris' });
    const sideCall = JSON.stringify(gateway.host.model.calls[1]?.messages);
    expect(sideCall).toContain('capital of France?');
    expect(sideCall).toContain('the capital is Paris');
    expect(sideCall).toContain('which country was that?');
    const history = await client.result('session.history', { session_id: sid });
    expect(history.messages.map((message: { text?: string }) => message.text)).toEqual([
      'capital of France?',
      'the capital is Paris',
    ]);
  });
});

describe('model keys and tools', () => {
  it('model.save_key stores the provider key in HERMES_HOME/.env and model.disconnect removes it', async () => {
    const gateway = await fixture();
    const client = await gateway.connect();
    const saved = await client.result('model.save_key', { slug: 'openai', api_key: 'sk-test-123' });
    expect(saved).toMatchObject({ saved: true, key_env: 'OPENAI_API_KEY', provider: { slug: 'openai' } });
    expect(readFileSync(join(gateway.host.homeDir, '.env'), 'utf8')).toContain('OPENAI_API_KEY=');
    expect(gateway.host.lookupEnv('OPENAI_API_KEY')).toBe('sk-test-123');
    expect(gateway.host.resolveModel('openai:gpt-4o').provider).toBe('openai');
    const disconnected = await client.result('model.disconnect', { slug: 'openai' });
    expect(disconnected).toMatchObject({ disconnected: true, key_env: 'OPENAI_API_KEY' });
    expect(() => gateway.host.resolveModel('openai:gpt-4o')).toThrow(/API key/);
    expect((await client.call('model.save_key', { slug: 'nosuch', api_key: 'x' })).error.code).toBe(4002);
  });

  it('tools.configure disables a known tool for the session and reports unknown names', async () => {
    const gateway = await fixture();
    const client = await gateway.connect();
    const created = await client.result('session.create', {});
    await client.event('session.info', created.session_id, (params) => params.payload.lazy !== true);
    const result = await client.result('tools.configure', {
      action: 'disable',
      names: ['terminal', 'no_such_tool'],
      session_id: created.session_id,
    });
    expect(result).toEqual({ changed: ['terminal'], unknown: ['no_such_tool'], missing_servers: [], reset: false });
  });

  it('sudo.respond for a request that no longer exists says expired', async () => {
    const client = await (await fixture()).connect();
    expect(await client.result('sudo.respond', { request_id: 'srq-000000000000', password: '' })).toEqual({
      status: 'expired',
    });
  });
});
