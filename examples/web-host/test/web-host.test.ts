import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createServer as createTcpServer, Socket, type Server as TcpServer } from 'node:net';
import { tmpdir } from 'node:os';
import { extname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { delay, startScriptedOpenAIServer, step, text, toolCall } from '@hermes/core/testing';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterEach, describe, expect, it } from 'vitest';

const here = fileURLToPath(new URL('.', import.meta.url));
const SERVER_MAIN = resolve(here, '../../../apps/server/dist/main.js');
const DIST = resolve(here, '../dist');
const CHROMIUM = '/usr/bin/chromium';
const KEY = 'web-host-test-key-6f1c2e9a4b7d';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function temp(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function listen<T extends Server | TcpServer>(server: T): Promise<number> {
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const address = server.address();
  if (typeof address !== 'object' || address === null) throw new Error('no address');
  cleanups.push(() => new Promise<void>((done) => server.close(() => done())));
  return address.port;
}

/** Serves the built page (dist/) on 127.0.0.1, as any static host would. */
async function servePage(): Promise<string> {
  const types: Record<string, string> = { '.html': 'text/html', '.js': 'text/javascript', '.map': 'application/json' };
  const server = createServer((request, response) => {
    const name = new URL(request.url ?? '/', 'http://127.0.0.1').pathname.replace(/^\/$/, '/index.html');
    const file = join(DIST, name.replace(/\.\./g, ''));
    if (!existsSync(file)) {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(200, { 'content-type': types[extname(file)] ?? 'application/octet-stream' });
    response.end(readFileSync(file));
  });
  return `http://127.0.0.1:${await listen(server)}`;
}

/** Starts apps/server as built, as a real child process, and resolves with its URL. */
async function startServer(env: Record<string, string>, cwd: string): Promise<string> {
  const child: ChildProcess = spawn(process.execPath, [SERVER_MAIN], {
    cwd,
    env: { PATH: process.env.PATH ?? '', HOME: env.HERMES_HOME ?? tmpdir(), API_SERVER_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
  });
  return new Promise<string>((done, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      for (const line of stdout.split('\n'))
        if (line.includes('"msg":"listening"')) done((JSON.parse(line) as { url: string }).url);
    });
    void exited.then((code) => reject(new Error(`server exited with ${code}: ${stderr}`)));
  });
}

/**
 * A TCP proxy in front of the server: the page reaches the server only through it, so the test can kill the page's
 * gateway socket the moment the server sends a chosen frame, and refuse reconnects until it lets them through.
 */
async function startProxy(target: number) {
  const pairs = new Set<{ client: Socket; upstream: Socket; isGateway: boolean }>();
  let holding = false;
  let killOn: { pattern: string; killed: () => void } | undefined;
  const server = createTcpServer((client) => {
    if (holding) {
      client.destroy();
      return;
    }
    const upstream = new Socket();
    const pair = { client, upstream, isGateway: false };
    pairs.add(pair);
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    upstream.connect(target, '127.0.0.1');
    client.on('data', (chunk: Buffer) => {
      if (chunk.toString('latin1').startsWith('GET /api/ws')) pair.isGateway = true;
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (pair.isGateway && killOn && chunk.toString('utf8').includes(killOn.pattern)) {
        // The frame never reaches the page: it and everything after must come back through the resync.
        const { killed } = killOn;
        killOn = undefined;
        holding = true;
        end();
        killed();
        return;
      }
      client.write(chunk);
    });
    for (const socket of [client, upstream]) {
      socket.on('error', end);
      socket.on('close', end);
    }
  });
  const port = await listen(server);
  cleanups.push(() => {
    for (const pair of pairs) {
      pair.client.destroy();
      pair.upstream.destroy();
    }
  });
  return {
    url: `http://127.0.0.1:${port}`,
    /** Kills the gateway socket when the server sends a chunk containing `pattern`; then refuses new connections. */
    killGatewayOn(pattern: string): Promise<void> {
      return new Promise((killed) => {
        killOn = { pattern, killed };
      });
    },
    release() {
      holding = false;
    },
  };
}

async function launch(): Promise<{ browser: Browser; page: Page }> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  cleanups.push(() => browser.close());
  const context = await browser.newContext();
  // The page may reach loopback only; anything else is aborted before it leaves the browser.
  await context.route('**/*', (route) =>
    new URL(route.request().url()).hostname === '127.0.0.1' ? route.continue() : route.abort(),
  );
  const page = await context.newPage();
  return { browser, page };
}

interface PageState {
  state: string;
  events: { session_id: string; seq: number | undefined; type: string }[];
  reconnects: number;
  replayed: number;
  resyncs: number;
  sessionId: string | undefined;
  errors: string[];
}

const state = (page: Page) => page.evaluate(() => (window as unknown as { webHost: PageState }).webHost);

describe('the web host example in headless Chromium against apps/server', () => {
  it('streams a turn with a diff, approves and denies from its buttons, survives a killed socket with no event lost, and runs a run', async () => {
    if (!existsSync(SERVER_MAIN)) throw new Error(`${SERVER_MAIN} is missing: build apps/server first`);
    if (!existsSync(join(DIST, 'app.js'))) throw new Error(`${DIST}/app.js is missing: run the example's build first`);
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install chromium (.ci/run does)`);
    // The page was bundled from the SDK's browser entry: no Node module and no schema library made it in.
    const bundle = readFileSync(join(DIST, 'app.js'), 'utf8');
    for (const nodeOnly of [/child_process/, /["']node:[a-z]/, /perMessageDeflate/, /ZodError/])
      expect(nodeOnly.test(bundle), String(nodeOnly)).toBe(false);
    const workspace = temp('hermes-web-host-workspace-');
    const target = join(workspace, 'build');
    mkdirSync(target);
    mkdirSync(join(workspace, 'keep'));
    const notes = join(workspace, 'notes.txt');
    writeFileSync(notes, 'first line\n');
    const finalText = 'Removed the build folder; the notes are up to date and nothing else changed.';
    const model = await startScriptedOpenAIServer({
      apiKey: 'test-key',
      script: [
        // Turn 1: a file edit (its diff is shown) and a streamed answer.
        step(toolCall('write_file', { path: notes, content: 'first line\nsecond line\n' }, 'call_write')),
        // Pieces apart in time: deltas that reach the agent in one body chunk go out as one event (ADR 0078).
        step(text('I added ', 4), delay(30), text('a second line ', 4), delay(30), text('to the notes.', 4)),
        // Turn 2: a command that needs approval, then an answer that streams while the page is cut off.
        step(toolCall('terminal', { command: `rm -rf ${target}` }, 'call_rm')),
        step(delay(200), text(finalText, 3)),
        // Turn 3: a command the page denies.
        step(toolCall('terminal', { command: `rm -rf ${workspace}/keep` }, 'call_keep')),
        step(text('Left it alone.')),
        // The run started from the page.
        step(text('Answered through the runs API.', 5)),
      ],
    });
    cleanups.push(() => model.close());
    const home = temp('hermes-web-host-home-');
    writeFileSync(join(home, 'config.yaml'), 'session:\n  auto_title: false\n');
    const pageOrigin = await servePage();
    const serverUrl = await startServer(
      {
        HERMES_HOME: home,
        HERMES_MODEL: 'custom:scripted',
        HERMES_BASE_URL: model.baseURL,
        HERMES_API_KEY: 'test-key',
        API_SERVER_KEY: KEY,
        API_SERVER_CORS_ORIGINS: pageOrigin,
      },
      workspace,
    );
    const proxy = await startProxy(Number(new URL(serverUrl).port));
    const { page } = await launch();
    const gatewayUrls: string[] = [];
    page.on('websocket', (socket) => gatewayUrls.push(socket.url()));

    await page.goto(`${pageOrigin}/index.html`);
    await page.fill('#server', proxy.url);
    await page.fill('#key', KEY);
    await page.click('#connect');
    await page.waitForFunction(() => document.getElementById('state')?.textContent === 'connected', null, {
      timeout: 60_000,
    });
    // The key bought a ticket; it never appears in the socket's URL.
    expect(gatewayUrls.length).toBeGreaterThan(0);
    for (const url of gatewayUrls) expect(url).not.toContain(KEY);

    await page.click('#new-session');
    await page.waitForFunction(() => (window as unknown as { webHost: PageState }).webHost.sessionId !== undefined);
    await page.fill('#prompt', 'Add a line to the notes.');
    await page.click('#send');
    await page.waitForSelector('.assistant[data-status="complete"]', { timeout: 60_000 });
    expect(await page.textContent('.assistant[data-status="complete"]')).toBe('I added a second line to the notes.');
    expect(await page.textContent('.tool[data-name="write_file"] .diff')).toContain('+second line');
    expect(readFileSync(notes, 'utf8')).toBe('first line\nsecond line\n');
    const firstTurn = await state(page);
    expect(firstTurn.events.filter((event) => event.type === 'message.delta').length).toBeGreaterThan(1);

    // Turn 2: approve from the page's button; the tool's completion frame kills the socket on its way to the page.
    await page.fill('#prompt', 'Tidy the build folder.');
    await page.click('#send');
    await page.waitForSelector('.approval .approve', { timeout: 60_000 });
    expect(await page.textContent('.approval .approval-command')).toBe(`rm -rf ${target}`);
    const killed = proxy.killGatewayOn('"type":"tool.complete"');
    await page.click('.approval .approve');
    await killed;
    // While the page is cut off the turn finishes on the server; wait for it there, then let the page back in.
    const sessions = async () => {
      const response = await fetch(`${serverUrl}/api/sessions`, { headers: { authorization: `Bearer ${KEY}` } });
      return ((await response.json()) as { data?: { id: string }[] }).data ?? [];
    };
    const stored = (await sessions())[0]?.id;
    expect(stored).toBeDefined();
    for (;;) {
      const response = await fetch(`${serverUrl}/api/sessions/${stored}/messages`, {
        headers: { authorization: `Bearer ${KEY}` },
      });
      if ((await response.text()).includes(finalText)) break;
      await new Promise((done) => setTimeout(done, 200));
    }
    expect(existsSync(target)).toBe(false);
    proxy.release();
    await page.waitForSelector('.assistant[data-status="complete"] >> nth=1', { timeout: 60_000 });
    expect(await page.textContent('.assistant[data-status="complete"] >> nth=1')).toBe(finalText);
    const after = await state(page);
    expect(after.reconnects).toBeGreaterThanOrEqual(1);
    // The frame that killed the socket and the answer after it were never sent on the old socket: the ring replayed them.
    expect(after.replayed).toBeGreaterThan(0);
    expect(after.resyncs).toBe(0);
    expect(after.errors).toEqual([]);
    // Every session event exactly once, in seq order, with no gap across the cut.
    const seqs = after.events.filter((event) => event.seq !== undefined).map((event) => event.seq as number);
    expect(seqs.length).toBeGreaterThan(0);
    expect(seqs).toEqual(seqs.map((_, index) => (seqs[0] as number) + index));
    expect(after.events.filter((event) => event.type === 'tool.complete')).toHaveLength(2);
    expect(after.events.filter((event) => event.type === 'message.complete')).toHaveLength(2);
    expect(gatewayUrls.length).toBeGreaterThan(1);
    for (const url of gatewayUrls) expect(url).toBe(`${proxy.url.replace('http', 'ws')}/api/ws`);

    // Deny from the page's button: the command does not run and the turn goes on.
    await page.fill('#prompt', 'Tidy the keep folder too.');
    await page.click('#send');
    await page.waitForSelector('.approval:not([data-answered]) .deny', { timeout: 60_000 });
    await page.click('.approval:not([data-answered]) .deny');
    await page.waitForSelector('.assistant[data-status="complete"] >> nth=2', { timeout: 60_000 });
    expect(await page.textContent('.assistant[data-status="complete"] >> nth=2')).toBe('Left it alone.');
    expect(await page.getAttribute('.approval >> nth=1', 'data-answered')).toBe('deny');
    expect(existsSync(join(workspace, 'keep'))).toBe(true);

    // The session list shows the stored session; the runs API answers from the same page.
    await page.waitForSelector(`#sessions li[data-id="${stored}"]`, { timeout: 30_000 });
    await page.fill('#run-input', 'Say something through a run.');
    await page.click('#run');
    await page.waitForSelector('#run-output[data-status="run.completed"]', { timeout: 60_000 });
    expect(await page.textContent('#run-output')).toBe('Answered through the runs API.');
  });
});
