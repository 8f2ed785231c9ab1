import type { LanguageModelV3 } from '@ai-sdk/provider';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { toFunctionTool } from '../../src/agent/turn-model.js';
import type { ProviderAdapter, ToolDefinition } from '../../src/index.js';
import { createTestHost, type TestHost } from '../../src/testing/index.js';

let host: TestHost | null = null;
afterEach(async () => {
  await host?.dispose();
  host = null;
});

/** A provider whose models count how often they are created and asked for `supportedUrls` (what loads a model). */
function probeProvider(options: { failLoad?: boolean } = {}) {
  const created: string[] = [];
  const loaded: string[] = [];
  const adapter: ProviderAdapter = {
    id: 'probe',
    create(route) {
      created.push(route.model);
      return {
        specificationVersion: 'v3',
        provider: 'probe',
        modelId: route.model,
        get supportedUrls() {
          loaded.push(route.model);
          return options.failLoad ? Promise.reject(new Error('cannot load')) : Promise.resolve({});
        },
        doGenerate: () => Promise.reject(new Error('not called')),
        doStream: () => Promise.reject(new Error('not called')),
      } satisfies LanguageModelV3;
    },
  };
  return { adapter, created, loaded };
}

/** Resolves once `check` holds, a macrotask at a time (bounded). */
async function until(check: () => boolean): Promise<void> {
  for (let turn = 0; turn < 1000 && !check(); turn += 1) await new Promise((resolve) => setImmediate(resolve));
  expect(check()).toBe(true);
}

describe('warming a model before its first turn', () => {
  it('loads a model once per spec, the default when none is named', async () => {
    const probe = probeProvider();
    host = await createTestHost({ providers: [probe.adapter], config: { model: { default: 'probe:main' } } });
    await host.warmModel();
    expect(probe.loaded).toEqual(['main']);
    await host.warmModel('probe:other');
    await host.warmModel('probe:other');
    await host.warmModel();
    expect(probe.loaded).toEqual(['main', 'other']);
  });

  it('never rejects: an unknown spec, a model that fails to load, a closed host', async () => {
    const probe = probeProvider({ failLoad: true });
    host = await createTestHost({ providers: [probe.adapter] });
    await expect(host.warmModel('nowhere:model')).resolves.toBeUndefined();
    await expect(host.warmModel('probe:broken')).resolves.toBeUndefined();
    expect(probe.loaded).toEqual(['broken']);
    await host.close();
    await expect(host.warmModel('probe:later')).resolves.toBeUndefined();
    expect(probe.created).not.toContain('later');
  });

  it('a new or resumed session warms its own model by itself, after the call that opened it returned', async () => {
    const probe = probeProvider();
    host = await createTestHost({ providers: [probe.adapter] });
    const agent = await host.newSession({ model: 'probe:session' });
    expect(probe.loaded).toEqual([]);
    await until(() => probe.loaded.length === 1);
    expect(probe.loaded).toEqual(['session']);
    await host.store.createSession({ id: 'resumed-1', source: 'test', model: 'probe:resumed', cwd: agent.cwd });
    await host.resumeSession('resumed-1');
    await until(() => probe.loaded.length === 2);
    expect(probe.loaded).toEqual(['session', 'resumed']);
  });

  it('loads a built-in OpenAI-compatible model without calling its endpoint', async () => {
    let calls = 0;
    host = await createTestHost({
      env: { HERMES_BASE_URL: 'http://127.0.0.1:9/v1' },
      fetch: () => {
        calls += 1;
        return Promise.reject(new Error('no request is made while warming'));
      },
    });
    expect(host.resolveModel('custom:some-model').baseUrl).toBe('http://127.0.0.1:9/v1');
    await expect(host.warmModel('custom:some-model')).resolves.toBeUndefined();
    expect(calls).toBe(0);
  });
});

describe('warming declares the tools too', () => {
  it('converts every registered tool for the model request once, so the first turn finds them converted', async () => {
    const probe = probeProvider();
    let reads = 0;
    const tool: ToolDefinition = {
      name: 'counted_tool',
      get description() {
        reads += 1;
        return 'A tool that counts how often it is declared.';
      },
      inputSchema: z.object({ path: z.string() }),
      toolset: 'test',
      kind: 'read',
      readOnly: true,
      execute: async () => ({ content: 'done' }),
    };
    host = await createTestHost({
      providers: [probe.adapter],
      config: { model: { default: 'probe:main' } },
      tools: [tool],
    });
    expect(reads).toBe(0);
    await host.warmModel();
    expect(reads).toBe(1);
    const declared = toFunctionTool(tool);
    expect(reads).toBe(1);
    expect(declared).toMatchObject({ type: 'function', name: 'counted_tool', inputSchema: { type: 'object' } });
  });
});

describe('warming compiles the store’s per-turn statements too (ADR 0102)', () => {
  it('once per host, before the first turn, which then runs on them', async () => {
    const probe = probeProvider();
    host = await createTestHost({ providers: [probe.adapter], config: { model: { default: 'probe:main' } } });
    const store = host.store as typeof host.store & { prepareStatements: () => void };
    expect(typeof store.prepareStatements).toBe('function');
    const prepared = vi.spyOn(store, 'prepareStatements');
    await host.warmModel();
    await host.warmModel('probe:other');
    expect(prepared).toHaveBeenCalledTimes(1);
    // The compiled statements are the ones a session's first writes use.
    const session = await store.createSession({ id: 'warmed-1', source: 'test', model: 'probe:main', cwd: '/' });
    await store.appendMessages(session.id, [{ role: 'user', content: 'hello' }]);
    expect((await store.getSession(session.id))?.messageCount).toBe(1);
  });

  it('a store that cannot compile them (closed) leaves them to their first use, and the warm-up still resolves', async () => {
    const probe = probeProvider();
    host = await createTestHost({ providers: [probe.adapter], config: { model: { default: 'probe:main' } } });
    const store = host.store as typeof host.store & { prepareStatements: () => void };
    await store.close();
    expect(() => store.prepareStatements()).toThrow();
    await expect(host.warmModel()).resolves.toBeUndefined();
    expect(probe.loaded).toEqual(['main']);
  });
});
