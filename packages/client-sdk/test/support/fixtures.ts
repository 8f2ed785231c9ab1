import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type ModelScript, type ScriptedServer, startScriptedOpenAIServer } from '@hermes/core/testing';

const here = fileURLToPath(new URL('.', import.meta.url));
/** The monorepo root. */
export const REPO_ROOT = resolve(here, '../../../..');
/** The built CLI (`cd apps/cli && npx tsup`). */
export const CLI_BIN = join(REPO_ROOT, 'apps/cli/dist/bin.js');
/** The built deployable server (`cd apps/server && npx tsup`). */
export const SERVER_MAIN = join(REPO_ROOT, 'apps/server/dist/main.js');

/** The scripted model server's API key, handed to the gateway as HERMES_API_KEY. */
export const MODEL_KEY = 'test-key';

/** Things to undo after each test, most recent first. */
export class Cleanups {
  readonly #steps: (() => Promise<void> | void)[] = [];

  add(step: () => Promise<void> | void): void {
    this.#steps.push(step);
  }

  async run(): Promise<void> {
    for (const step of this.#steps.splice(0).reverse()) {
      try {
        await step();
      } catch {
        // Cleanup is best effort; the test's own assertions decide.
      }
    }
  }
}

/** Fails fast, with the command to run, when an app was not built. */
export function requireBuilt(path: string): void {
  if (!existsSync(path)) throw new Error(`${path} is missing: build it first (npx tsup in its folder)`);
}

/** A fresh HERMES_HOME; automatic titling is off so it never consumes scripted steps. */
export function makeHome(cleanups: Cleanups): string {
  const home = mkdtempSync(join(tmpdir(), 'hermes-sdk-home-'));
  // The approval tests delete a folder in the OS temporary directory, outside the session's workspace, which the
  // default command sandbox (terminal.sandbox: auto) keeps out of reach; these tests are about the wire, and the
  // sandbox is tested in the core and apps/server.
  writeFileSync(join(home, 'config.yaml'), 'session:\n  auto_title: false\nterminal:\n  sandbox: none\n');
  cleanups.add(() => rmSync(home, { recursive: true, force: true }));
  return home;
}

/** Starts the scripted OpenAI-compatible model server of @hermes/core/testing. */
export async function startModel(script: ModelScript, cleanups: Cleanups): Promise<ScriptedServer> {
  const server = await startScriptedOpenAIServer({ script, apiKey: MODEL_KEY });
  cleanups.add(() => server.close());
  return server;
}

/** The environment of a gateway or server child that talks to the scripted model. */
export function childEnvironment(home: string, baseURL: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH ?? '',
    HOME: home,
    HERMES_HOME: home,
    HERMES_MODEL: 'custom:scripted',
    HERMES_BASE_URL: baseURL,
    HERMES_API_KEY: MODEL_KEY,
    ...extra,
  };
}

/** Spawn options of `hermes gateway` on stdio, as a host passes them to the SDK. */
export function gatewayCommand(home: string, baseURL: string) {
  requireBuilt(CLI_BIN);
  return { command: process.execPath, args: [CLI_BIN, 'gateway'], env: childEnvironment(home, baseURL) };
}

function waitForLine(child: ChildProcess, stream: 'stdout' | 'stderr', pattern: RegExp, timeoutMs: number) {
  return new Promise<RegExpMatchArray>((resolvePromise, reject) => {
    let text = '';
    const timer = setTimeout(
      () => reject(new Error(`no line matching ${pattern} within ${timeoutMs} ms:\n${text}`)),
      timeoutMs,
    );
    child[stream]?.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8');
      const match = text.match(pattern);
      if (match) {
        clearTimeout(timer);
        resolvePromise(match);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before printing ${pattern}:\n${text}`));
    });
  });
}

function killOnCleanup(child: ChildProcess, cleanups: Cleanups): void {
  cleanups.add(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolvePromise) => child.once('exit', () => resolvePromise()));
    child.kill('SIGKILL');
    await exited;
  });
}

/** `hermes gateway --ws --port 0`: resolves with the URL and token it prints on stderr (spec §1.3). */
export async function startWebSocketGateway(
  home: string,
  baseURL: string,
  cleanups: Cleanups,
  options: { port?: number; token?: string } = {},
): Promise<{ url: string; token: string; port: number; stop(): Promise<void> }> {
  requireBuilt(CLI_BIN);
  const child = spawn(process.execPath, [CLI_BIN, 'gateway', '--ws', '--port', String(options.port ?? 0)], {
    env: childEnvironment(home, baseURL, options.token ? { HERMES_GATEWAY_TOKEN: options.token } : {}),
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  killOnCleanup(child, cleanups);
  const match = await waitForLine(child, 'stderr', /gateway listening (ws:\/\/\S+)/, 30_000);
  const url = new URL(match[1] as string);
  return {
    url: `${url.origin}${url.pathname}`,
    token: url.searchParams.get('token') ?? '',
    port: Number(url.port),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise<void>((resolvePromise) => child.once('exit', () => resolvePromise()));
      // SIGTERM runs the gateway's shutdown sequence (spec §1.6), as a restart would.
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** The deployable server (apps/server): resolves with its HTTP URL and key. */
export async function startServerApp(
  home: string,
  baseURL: string,
  cleanups: Cleanups,
): Promise<{ url: string; port: number; key: string }> {
  requireBuilt(SERVER_MAIN);
  const key = 'sdk-test-server-key-0123456789abcdef';
  const child = spawn(process.execPath, [SERVER_MAIN], {
    env: childEnvironment(home, baseURL, { API_SERVER_PORT: '0', API_SERVER_KEY: key, HERMES_LOG_LEVEL: 'info' }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  killOnCleanup(child, cleanups);
  const match = await waitForLine(child, 'stdout', /^\{[^\n]*"msg":"listening"[^\n]*\}$/m, 30_000);
  const url = String((JSON.parse(match[0]) as { url?: unknown }).url);
  return { url, port: Number(new URL(url).port), key };
}

/**
 * A TCP proxy on 127.0.0.1 between a client and a server, so a test can cut real connections (and
 * stop accepting new ones) or stall them, without touching either side's code.
 */
export class TcpProxy {
  #server: Server | undefined;
  readonly #pairs = new Set<{ client: Socket; upstream: Socket }>();
  #port = 0;
  /** Connections accepted so far. */
  accepted = 0;

  constructor(readonly targetPort: number) {}

  get port(): number {
    return this.#port;
  }

  /** Listens (again) on the same port; a port of 0 the first time picks a free one. */
  async start(): Promise<void> {
    const server = createServer((client) => {
      this.accepted += 1;
      const upstream = new (client.constructor as typeof Socket)();
      const pair = { client, upstream };
      this.#pairs.add(pair);
      const drop = () => {
        client.destroy();
        upstream.destroy();
        this.#pairs.delete(pair);
      };
      client.on('error', drop).on('close', drop);
      upstream.on('error', drop).on('close', drop);
      upstream.connect(this.targetPort, '127.0.0.1', () => {
        client.pipe(upstream);
        upstream.pipe(client);
      });
    });
    await new Promise<void>((resolvePromise, reject) => {
      server.once('error', reject);
      server.listen(this.#port, '127.0.0.1', () => resolvePromise());
    });
    this.#server = server;
    const address = server.address();
    this.#port = typeof address === 'object' && address ? address.port : this.#port;
  }

  /** Stops accepting and cuts every open connection, as a network outage would. */
  async stop(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    for (const pair of [...this.#pairs]) {
      pair.client.destroy();
      pair.upstream.destroy();
    }
    this.#pairs.clear();
    if (server) await new Promise<void>((resolvePromise) => server.close(() => resolvePromise()));
  }

  /** Stops forwarding on the open connections (both ways) without closing them: a stalled network. */
  stall(): void {
    for (const pair of this.#pairs) {
      pair.client.unpipe(pair.upstream);
      pair.upstream.unpipe(pair.client);
      pair.client.pause();
      pair.upstream.pause();
    }
  }

  /** Cuts the open connections but keeps accepting new ones. */
  cutConnections(): void {
    for (const pair of [...this.#pairs]) {
      pair.client.destroy();
      pair.upstream.destroy();
    }
    this.#pairs.clear();
  }
}

/** Resolves after `ms`; used only to let a background condition arise, never to assert timing. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolvePromise) => setTimeout(resolvePromise, ms));
}

/** Polls `condition` until it holds; a bounded wait. */
export async function until(condition: () => boolean, timeoutMs = 20_000, label = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${label}`);
    await sleep(10);
  }
}
