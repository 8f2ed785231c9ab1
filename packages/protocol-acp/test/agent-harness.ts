import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import {
  type ClientCapabilities,
  type ClientContext,
  client as createClientApp,
  ndJsonStream,
  type RequestPermissionRequest,
  type RequestPermissionResponse,
  type SessionNotification,
} from '@agentclientprotocol/sdk/unstable';
import { type ScriptedServer, type ScriptStep, startScriptedOpenAIServer } from '@hermes/core/testing';
import { validateAgentLine } from './wire-schema.js';

/** The built CLI entry the conformance suite spawns. */
export const CLI_ENTRY = fileURLToPath(new URL('../../../apps/cli/dist/bin.js', import.meta.url));
/** The key the scripted provider expects. */
export const SCRIPTED_KEY = 'scripted-test-key';

/** One JSON-RPC line on the wire, with a global sequence number. */
export interface WireLine {
  seq: number;
  from: 'agent' | 'client';
  message: Record<string, unknown>;
}

/** A temporary HERMES_HOME, project directory and scripted model server. */
export interface Fixture {
  home: string;
  project: string;
  server: ScriptedServer;
  writeConfig(extra?: string): Promise<void>;
  cleanup(): Promise<void>;
}

/** Creates a home whose config declares the scripted server as provider `scripted` (§19.1). */
export async function createFixture(
  options: {
    withKey?: boolean;
    script?: ScriptStep[];
    extraConfig?: string;
    autoTitle?: boolean;
    maxIterations?: number;
  } = {},
): Promise<Fixture> {
  const root = await realpath(await mkdtemp(join(tmpdir(), 'hermes-acp-')));
  const home = join(root, 'home');
  const project = join(root, 'project');
  await mkdir(home, { recursive: true });
  await mkdir(project, { recursive: true });
  const server = await startScriptedOpenAIServer({ script: options.script ?? [], apiKey: SCRIPTED_KEY });
  const writeConfig = async (extra = options.extraConfig ?? '') => {
    await writeFile(
      join(home, 'config.yaml'),
      [
        'model:',
        '  default: scripted:model-a',
        'providers:',
        '  scripted:',
        `    base_url: ${server.baseURL}`,
        '    api_key_env: SCRIPTED_API_KEY',
        '    context_length: 100000',
        '    models: [model-a, model-b]',
        'auxiliary:',
        '  model: main',
        'agent:',
        '  api_max_retries: 0',
        ...(options.maxIterations ? [`  max_iterations: ${options.maxIterations}`] : []),
        'session:',
        `  auto_title: ${options.autoTitle === true}`,
        extra,
      ].join('\n'),
    );
  };
  await writeConfig();
  if (options.withKey !== false) await writeFile(join(home, '.env'), `SCRIPTED_API_KEY=${SCRIPTED_KEY}\n`);
  return {
    home,
    project,
    server,
    writeConfig,
    async cleanup() {
      await server.close();
      await rm(root, { recursive: true, force: true });
    },
  };
}

/** Scripted answers of the test client to permission requests. */
export type PermissionAnswer = (request: RequestPermissionRequest) => Promise<RequestPermissionResponse> | 'never';

/** A running `hermes acp` child driven by the SDK's client side. */
export interface AgentProcess {
  child: ChildProcess;
  lines: WireLine[];
  schemaErrors: string[];
  agent: ClientContext;
  updates: (SessionNotification & { seq: number })[];
  permissionRequests: RequestPermissionRequest[];
  answerPermission: PermissionAnswer;
  /** Client-side file buffers for `fs/*` (absolute path → text). */
  buffers: Map<string, string>;
  stderr(): string;
  writeRaw(line: string): void;
  waitFor(predicate: (line: WireLine) => boolean, timeoutMs?: number): Promise<WireLine>;
  /** The wire line answering the `nth` client request of `method`. */
  responseTo(method: string, nth?: number): WireLine | undefined;
  /** Closes stdin and resolves with the exit code (killed after 8 s: then -1). */
  close(): Promise<number>;
}

/** Spawns `hermes acp`, connects the SDK client over its stdio and initialises when asked. */
export async function startAgent(
  fixture: Fixture,
  options: {
    capabilities?: ClientCapabilities;
    env?: Record<string, string>;
    nodeArguments?: string[];
    /**
     * How `fs/read_text_file` answers for a missing file: `resource-not-found` (-32002, the
     * default) or `fs-error`, letting the file system's ENOENT error escape the handler so the
     * SDK answers a generic -32603, as acpx did.
     */
    missingFile?: 'resource-not-found' | 'fs-error';
  } = {},
): Promise<AgentProcess> {
  const environment: Record<string, string | undefined> = {
    ...process.env,
    HERMES_HOME: fixture.home,
    HERMES_LOG_LEVEL: 'warn',
    ...options.env,
  };
  delete environment.SCRIPTED_API_KEY;
  delete environment.HERMES_MODEL;
  delete environment.HERMES_BASE_URL;
  const child = spawn(process.execPath, [...(options.nodeArguments ?? []), CLI_ENTRY, 'acp'], {
    env: environment,
    cwd: fixture.project,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  const lines: WireLine[] = [];
  const schemaErrors: string[] = [];
  let seq = 0;
  const requestMethods = new Map<string, string>();
  const waiters = new Set<{ predicate: (line: WireLine) => boolean; resolve: (line: WireLine) => void }>();
  const record = (from: 'agent' | 'client', message: Record<string, unknown>) => {
    const line: WireLine = { seq: ++seq, from, message };
    lines.push(line);
    if (from === 'client' && typeof message.method === 'string' && 'id' in message) {
      requestMethods.set(JSON.stringify(message.id), message.method);
    }
    if (from === 'agent') {
      const errors = validateAgentLine(message, (id) => requestMethods.get(JSON.stringify(id)));
      for (const error of errors) schemaErrors.push(`${error} in ${JSON.stringify(message).slice(0, 400)}`);
    }
    for (const waiter of waiters) {
      if (waiter.predicate(line)) {
        waiters.delete(waiter);
        waiter.resolve(line);
      }
    }
  };
  // The recorder's branch of stdout: every line must be a JSON-RPC 2.0 object (§19.1).
  let pending = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    pending += chunk.toString('utf8');
    for (let index = pending.indexOf('\n'); index >= 0; index = pending.indexOf('\n')) {
      const text = pending.slice(0, index);
      pending = pending.slice(index + 1);
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        schemaErrors.push(`stdout line is not JSON: ${text.slice(0, 200)}`);
        continue;
      }
      if (
        typeof parsed !== 'object' ||
        parsed === null ||
        Array.isArray(parsed) ||
        (parsed as { jsonrpc?: unknown }).jsonrpc !== '2.0'
      ) {
        schemaErrors.push(`stdout line is not a JSON-RPC 2.0 object: ${text.slice(0, 200)}`);
        continue;
      }
      record('agent', parsed as Record<string, unknown>);
    }
  });
  const stdin = child.stdin;
  if (!stdin) throw new Error('no stdin');
  stdin.on('error', () => {});
  const input = Readable.toWeb(child.stdout as Readable) as unknown as ReadableStream<Uint8Array>;
  const encoder = new TextDecoder();
  const output = new WritableStream<Uint8Array>({
    write(chunk) {
      for (const text of encoder.decode(chunk).split('\n')) {
        if (text.trim() === '') continue;
        try {
          record('client', JSON.parse(text) as Record<string, unknown>);
        } catch {
          // Raw malformed lines are recorded by writeRaw.
        }
      }
      // Answers the SDK client sends after teardown closed stdin are dropped, as a gone IDE would.
      if (stdin.writableEnded || stdin.destroyed) return Promise.resolve();
      return new Promise<void>((resolve, reject) => stdin.write(chunk, (error) => (error ? reject(error) : resolve())));
    },
  });
  const updates: AgentProcess['updates'] = [];
  const permissionRequests: RequestPermissionRequest[] = [];
  const buffers = new Map<string, string>();
  const capabilities = options.capabilities ?? {};
  const terminals = new Map<
    string,
    { process: ChildProcess; output: string; exit: Promise<{ exitCode: number | null; signal: string | null }> }
  >();
  let terminalCount = 0;
  const process_: AgentProcess = {
    child,
    lines,
    schemaErrors,
    agent: undefined as unknown as ClientContext,
    updates,
    permissionRequests,
    answerPermission: async () => ({ outcome: { outcome: 'selected', optionId: 'allow_once' } }),
    buffers,
    stderr: () => stderr,
    writeRaw(text) {
      // Requests written raw are recorded too, so their responses validate against their method.
      for (const rawLine of text.split('\n')) {
        try {
          const parsed = JSON.parse(rawLine) as unknown;
          if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) {
            record('client', parsed as Record<string, unknown>);
          }
        } catch {
          // Not JSON: nothing to record.
        }
      }
      stdin.write(`${text}\n`);
    },
    waitFor(predicate, timeoutMs = 5000) {
      const found = lines.find(predicate);
      if (found) return Promise.resolve(found);
      return new Promise<WireLine>((resolve, reject) => {
        const waiter = {
          predicate,
          resolve: (line: WireLine) => {
            clearTimeout(timer);
            resolve(line);
          },
        };
        const timer = setTimeout(() => {
          waiters.delete(waiter);
          reject(new Error(`timed out waiting for a wire line; stderr:\n${stderr.slice(-2000)}`));
        }, timeoutMs);
        waiters.add(waiter);
      });
    },
    responseTo(method, nth = 0) {
      const requests = lines.filter(
        (line) => line.from === 'client' && line.message.method === method && 'id' in line.message,
      );
      const request = requests[nth];
      if (!request) return undefined;
      return lines.find(
        (line) =>
          line.from === 'agent' &&
          line.message.method === undefined &&
          JSON.stringify(line.message.id) === JSON.stringify(request.message.id),
      );
    },
    async close() {
      stdin.end();
      const code = await new Promise<number>((resolve) => {
        if (child.exitCode !== null) {
          resolve(child.exitCode);
          return;
        }
        const timer = setTimeout(() => {
          child.kill('SIGKILL');
          resolve(-1);
        }, 8000);
        child.once('exit', (exitCode) => {
          clearTimeout(timer);
          resolve(exitCode ?? -1);
        });
      });
      for (const terminal of terminals.values()) terminal.process.kill('SIGKILL');
      return code;
    },
  };
  const app = createClientApp({ name: 'conformance-client' })
    .onNotification('session/update', ({ params }) => {
      updates.push({ ...params, seq });
    })
    .onRequest('session/request_permission', async ({ params }) => {
      permissionRequests.push(params);
      const answer = process_.answerPermission(params);
      if (answer === 'never') return new Promise<RequestPermissionResponse>(() => {});
      return answer;
    });
  if (capabilities.fs?.readTextFile) {
    app.onRequest('fs/read_text_file', async ({ params }) => {
      let text = buffers.get(params.path);
      if (text === undefined) {
        const { readFile } = await import('node:fs/promises');
        try {
          text = await readFile(params.path, 'utf8');
        } catch (error) {
          if (options.missingFile === 'fs-error') throw error;
          const { RequestError } = await import('@agentclientprotocol/sdk/unstable');
          throw RequestError.resourceNotFound(params.path);
        }
      }
      if (params.line || params.limit) {
        const all = text.split('\n');
        const start = (params.line ?? 1) - 1;
        text = all.slice(start, params.limit ? start + params.limit : undefined).join('\n');
      }
      return { content: text };
    });
  }
  if (capabilities.fs?.writeTextFile) {
    app.onRequest('fs/write_text_file', async ({ params }) => {
      buffers.set(params.path, params.content);
      return {};
    });
  }
  if (capabilities.terminal) {
    app
      .onRequest('terminal/create', async ({ params }) => {
        const terminalId = `term-${++terminalCount}`;
        const env: Record<string, string> = { ...(process.env as Record<string, string>) };
        for (const variable of params.env ?? []) env[variable.name] = variable.value;
        const spawned = spawn(params.command, params.args ?? [], { cwd: params.cwd ?? undefined, env, detached: true });
        const entry = {
          process: spawned,
          output: '',
          exit: new Promise<{ exitCode: number | null; signal: string | null }>((resolve) =>
            spawned.once('exit', (exitCode, signal) => resolve({ exitCode, signal })),
          ),
        };
        spawned.stdout?.on('data', (chunk: Buffer) => {
          entry.output += chunk.toString('utf8');
        });
        spawned.stderr?.on('data', (chunk: Buffer) => {
          entry.output += chunk.toString('utf8');
        });
        terminals.set(terminalId, entry);
        return { terminalId };
      })
      .onRequest('terminal/output', async ({ params }) => {
        const entry = terminals.get(params.terminalId);
        return { output: entry?.output ?? '', truncated: false };
      })
      .onRequest('terminal/wait_for_exit', async ({ params }) => {
        const entry = terminals.get(params.terminalId);
        if (!entry) return { exitCode: null, signal: null };
        return entry.exit;
      })
      .onRequest('terminal/kill', async ({ params }) => {
        const entry = terminals.get(params.terminalId);
        if (entry?.process.pid) {
          try {
            process.kill(-entry.process.pid, 'SIGKILL');
          } catch {
            entry.process.kill('SIGKILL');
          }
        }
        return {};
      })
      .onRequest('terminal/release', async ({ params }) => {
        const entry = terminals.get(params.terminalId);
        if (entry?.process.pid && entry.process.exitCode === null) {
          try {
            process.kill(-entry.process.pid, 'SIGKILL');
          } catch {
            entry.process.kill('SIGKILL');
          }
        }
        terminals.delete(params.terminalId);
        return {};
      });
  }
  const connection = app.connect(ndJsonStream(output, input));
  process_.agent = connection.agent;
  return process_;
}

/** `initialize` with the given capabilities. */
export function initialize(agentProcess: AgentProcess, capabilities: ClientCapabilities = {}, protocolVersion = 1) {
  return agentProcess.agent.request('initialize', {
    protocolVersion,
    clientCapabilities: capabilities,
    clientInfo: { name: 'conformance-client', version: '1.0.0' },
  });
}
