import type { AddressInfo } from 'node:net';
import { defaultConfig, systemClock, type ToolDefinition } from '@hermes/core';
import { createTestHost, type ModelScript, type TestHost, type TestHostOptions } from '@hermes/core/testing';
import { type ServerType, serve } from '@hono/node-server';
import OpenAI from 'openai';
import { type ApiServerSettings, createOpenAIApp, handleClientError, type OpenAIApp } from '../src/index.js';

/** The conformance key (spec §25.1). */
export const KEY = 'conformance-key-0123456789';

/** `test_sleep {seconds}`: sleeps, interruptibly. */
const testSleep: ToolDefinition<{ seconds: number }> = {
  name: 'test_sleep',
  description: 'Sleeps for a number of seconds.',
  inputSchema: { type: 'object', properties: { seconds: { type: 'number' } }, required: ['seconds'] },
  toolset: 'test',
  kind: 'other',
  readOnly: true,
  async execute(args, context) {
    const signal = (context as unknown as { signal?: AbortSignal }).signal;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, args.seconds * 1000);
      signal?.addEventListener('abort', () => {
        clearTimeout(timer);
        resolve();
      });
    });
    return signal?.aborted ? { content: 'interrupted', status: 'cancelled' } : { content: 'slept' };
  },
};

/** `test_echo {text}`: returns its text. */
const testEcho: ToolDefinition<{ text: string }> = {
  name: 'test_echo',
  description: 'Echoes a text.',
  inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  toolset: 'test',
  kind: 'other',
  readOnly: true,
  async execute(args) {
    return { content: args.text };
  },
};

/** Memory scopes seen by `test_scope` calls, in call order. */
export const scopesSeen: (string | null)[] = [];

/** `test_scope {}`: records and returns the memory scope of its turn (spec §9.2). */
const testScope: ToolDefinition<Record<string, never>> = {
  name: 'test_scope',
  description: 'Reports the memory scope of the turn.',
  inputSchema: { type: 'object', properties: {} },
  toolset: 'test',
  kind: 'other',
  readOnly: true,
  async execute(_args, context) {
    scopesSeen.push(context.memoryScope);
    return { content: `scope=${context.memoryScope ?? 'none'}` };
  },
};

/** A running server over a scripted test host. */
export interface Rig {
  host: TestHost;
  api: OpenAIApp;
  base: string;
  /** OpenAI client on `/v1`. */
  client: OpenAI;
  /** OpenAI client on the root, for native routes. */
  native: OpenAI;
  /** HTTP requests that reached the server. */
  requests: { method: string; path: string }[];
  raw(path: string, init?: RequestInit): Promise<Response>;
  close(): Promise<void>;
}

/** Starts the app on 127.0.0.1 port 0 over a fresh test host with real timers. */
export async function startRig(
  options: {
    script?: ModelScript;
    scripts?: Record<string, ModelScript>;
    settings?: Partial<ApiServerSettings>;
    config?: TestHostOptions['config'];
    keepaliveMs?: number;
    /** Extra provider adapters (e.g. a second scripted provider). */
    providers?: TestHostOptions['providers'];
    /** The store location: a PostgreSQL URL makes rigs on one database instances of one deployment. */
    database?: string;
    /** See `OpenAIAppOptions.controlTimeoutMs`. */
    controlTimeoutMs?: number;
    /** See `AgentHostOptions.generateSessionId`. */
    generateSessionId?: TestHostOptions['generateSessionId'];
  } = {},
): Promise<Rig> {
  const host = await createTestHost({
    ...(options.script ? { script: options.script } : {}),
    ...(options.scripts ? { scripts: options.scripts } : {}),
    clock: systemClock as never,
    ...(options.providers ? { providers: options.providers } : {}),
    ...(options.database ? { database: options.database } : {}),
    ...(options.generateSessionId ? { generateSessionId: options.generateSessionId } : {}),
    tools: [testSleep as ToolDefinition, testEcho as ToolDefinition, testScope as ToolDefinition],
    config: {
      // The test tools' toolset is enabled, as a user would list it in `toolsets`.
      toolsets: [...defaultConfig().toolsets, 'test'],
      approvals: { mode: 'manual' },
      session: { auto_title: false },
      ...(options.config ?? {}),
    } as TestHostOptions['config'],
  });
  const api = createOpenAIApp({
    host,
    settings: { key: KEY, ...(options.settings ?? {}) },
    ...(options.keepaliveMs ? { keepaliveMs: options.keepaliveMs } : {}),
    ...(options.controlTimeoutMs ? { controlTimeoutMs: options.controlTimeoutMs } : {}),
  });
  const requests: { method: string; path: string }[] = [];
  const server: ServerType = await new Promise((resolve) => {
    const created = serve(
      {
        // The node request and response go on as `env`, as apps/server's adapter passes them (SSE writes directly).
        fetch: (request: Request, env: unknown) => {
          requests.push({ method: request.method, path: new URL(request.url).pathname });
          return api.app.fetch(request, env);
        },
        hostname: '127.0.0.1',
        port: 0,
      },
      () => resolve(created),
    );
    created.on('clientError', handleClientError);
  });
  const port = (server.address() as AddressInfo).port;
  const base = `http://127.0.0.1:${port}`;
  return {
    host,
    api,
    base,
    requests,
    client: new OpenAI({ baseURL: `${base}/v1`, apiKey: KEY }),
    native: new OpenAI({ baseURL: base, apiKey: KEY }),
    raw: (path, init = {}) =>
      fetch(base + path, {
        ...init,
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', ...(init.headers ?? {}) },
      }),
    async close() {
      (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      api.close();
      await host.dispose();
    },
  };
}

/** Reads an SSE body into frames (split on blank lines). */
export async function readFrames(response: Response): Promise<string[]> {
  const text = await response.text();
  return text.split('\n\n').filter((frame) => frame !== '');
}

/** The JSON of a frame's `data:` line. */
export function dataOf(frame: string): unknown {
  const line = frame.split('\n').find((entry) => entry.startsWith('data: '));
  if (!line) return undefined;
  const payload = line.slice(6);
  return payload === '[DONE]' ? payload : JSON.parse(payload);
}

/** Polls until `check` is truthy (real time, bounded). */
export async function until<T>(check: () => T | Promise<T>, timeoutMs = 10_000): Promise<NonNullable<T>> {
  const started = Date.now();
  for (;;) {
    const value = await check();
    if (value) return value as NonNullable<T>;
    if (Date.now() - started > timeoutMs) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
