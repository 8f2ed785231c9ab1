import { readFileSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { LanguageModelV3, LanguageModelV3CallOptions } from '@ai-sdk/provider';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ScriptedServer, startScriptedOpenAIServer, step, text } from '../testing/index.js';
import { PART_BATCHES, partBatchesOf } from './part-batches.js';

/*
 * ADR 0092: the OpenAI-compatible provider and the lean stream are built into a bundle of their own,
 * `dist/compatible-sdk.js`, with the provider's dependencies inside it. These tests load that built file (as a process
 * running the built core does) and drive it against the real scripted server.
 */
const bundle = fileURLToPath(new URL('../../dist/compatible-sdk.js', import.meta.url));

type Bundle = typeof import('./compatible-sdk.js');

let scripted: ScriptedServer;
let built: Bundle;
beforeAll(async () => {
  scripted = await startScriptedOpenAIServer({ script: [] });
  built = (await import(bundle)) as Bundle;
});
afterAll(() => scripted.close());

const call: LanguageModelV3CallOptions = { prompt: [{ role: 'user', content: [{ type: 'text', text: 'hello' }] }] };

function model(loaded: Bundle): LanguageModelV3 {
  return loaded.createLeanCompatibleChatModel((fetch, transformRequestBody) =>
    loaded
      .createOpenAICompatible({
        name: 'custom',
        baseURL: scripted.baseURL,
        includeUsage: true,
        fetch,
        transformRequestBody,
      })
      .chatModel('scripted'),
  );
}

describe('the built compatible-sdk bundle (ADR 0092)', () => {
  it('imports nothing from node_modules but @ai-sdk/provider, which the core already loads', () => {
    const source = readFileSync(bundle, 'utf8');
    const specifiers = new Set(
      [
        ...source.matchAll(
          /(?:^|\n)\s*(?:import|export)\b[^'"]*?from\s*["']([^"']+)["']|\bimport\(\s*["']([^"']+)["']\s*\)/g,
        ),
      ].map((match) => match[1] ?? match[2]),
    );
    const packages = [...specifiers].filter((specifier) => specifier !== undefined && !isBuiltin(specifier));
    expect(packages).toEqual(['@ai-sdk/provider']);
    // The core's own modules inside it are copies: only these three, which keep no state another copy must share
    // (part-batches.ts's key is a registered symbol). A module with a class the core tests with `instanceof`, or with
    // state, imported here would need a second look.
    const map = JSON.parse(readFileSync(`${bundle}.map`, 'utf8')) as { sources: string[] };
    expect(map.sources.filter((source) => !source.includes('node_modules')).sort()).toEqual([
      '../src/providers/lean-compatible-chat.ts',
      '../src/providers/node-http-call.ts',
      '../src/providers/part-batches.ts',
    ]);
    // zod's messages in other languages are left out; its English ones are in.
    expect(source).not.toMatch(/zod\/v4\/locales\/de\.js/);
    expect(source).toMatch(/zod\/v4\/locales\/en\.js/);
  });

  it('streams a turn whose parts the core’s turn loop reads a body chunk at a time, across the two copies', async () => {
    scripted.push(step(text('Hello there, world!', 3)));
    const { stream } = await model(built).doStream(call);
    // The bundle has its own copy of part-batches.ts: the registered symbol is what the core's copy looks for.
    expect(PART_BATCHES).toBe(Symbol.for('hermes.partBatches'));
    const batches = partBatchesOf(stream);
    if (!batches) throw new Error('the core found no batch reader on the bundle’s stream');
    let streamed = '';
    for (let batch = await batches.read(); batch !== null; batch = await batches.read())
      for (const part of batch) if (part.type === 'text-delta') streamed += part.delta;
    expect(streamed).toBe('Hello there, world!');
  });
});
