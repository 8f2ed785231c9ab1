/**
 * Stream-path benchmarks: 10,000 text deltas from the core's scripted OpenAI-compatible server,
 * measured on the two floors of issue 11 — a client reading the SSE itself (direct path) and the
 * AI SDK provider's `doStream` consumed in-process (provider path) — and through the core's turn
 * loop in-process. Wall time and CPU time of this process, and time to first delta. The model server
 * runs in its own process, as it does for the protocol paths.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { createAgentHost, silentLogger } from '@hermes/core';
import { step, text } from '@hermes/core/testing';
import { startRemoteModel } from './remote-model.js';

/** One measured path. */
export interface StreamMeasurement {
  name: string;
  wallMs: number;
  cpuMs: number;
  firstDeltaMs: number;
}

const DELTAS = 10_000;

function script() {
  // One character per chunk: exactly DELTAS content deltas.
  return [step(text('x'.repeat(DELTAS), 1))];
}

async function measure(name: string, run: (onDelta: () => void) => Promise<void>): Promise<StreamMeasurement> {
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  let first = -1;
  await run(() => {
    if (first < 0) first = performance.now() - started;
  });
  const wallMs = performance.now() - started;
  const cpu = process.cpuUsage(cpuBefore);
  return { name, wallMs, cpuMs: (cpu.user + cpu.system) / 1000, firstDeltaMs: first };
}

/** Medians of `runs` runs of each path. */
export async function runStreamBenchmarks(options: { quick: boolean }): Promise<StreamMeasurement[]> {
  const runs = options.quick ? 3 : 5;
  const server = await startRemoteModel();
  const home = mkdtempSync(join(tmpdir(), 'hermes-bench-'));
  const host = await createAgentHost({
    homeDir: home,
    env: { HERMES_MODEL: 'custom:bench', HERMES_BASE_URL: server.baseURL },
    config: { session: { auto_title: false } },
    connectMcp: false,
    logger: silentLogger,
  });
  const paths: [string, (onDelta: () => void) => Promise<void>][] = [
    [
      'stream: direct SSE read (floor)',
      async (onDelta) => {
        const response = await fetch(`${server.baseURL}/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'bench', stream: true, messages: [{ role: 'user', content: 'go' }] }),
        });
        const decoder = new TextDecoder();
        let buffer = '';
        for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
          buffer += decoder.decode(chunk, { stream: true });
          let newline = buffer.indexOf('\n\n');
          while (newline >= 0) {
            const event = buffer.slice(0, newline);
            buffer = buffer.slice(newline + 2);
            if (event.startsWith('data: ') && event !== 'data: [DONE]') {
              const parsed = JSON.parse(event.slice(6)) as { choices: { delta: { content?: string } }[] };
              if (parsed.choices[0]?.delta.content) onDelta();
            }
            newline = buffer.indexOf('\n\n');
          }
        }
      },
    ],
    [
      'stream: provider doStream (floor)',
      async (onDelta) => {
        const model = createOpenAICompatible({ name: 'bench', baseURL: server.baseURL, includeUsage: true }).chatModel(
          'bench',
        );
        const { stream } = await model.doStream({
          prompt: [{ role: 'user', content: [{ type: 'text', text: 'go' }] }],
        });
        for await (const part of stream as unknown as AsyncIterable<{ type: string }>)
          if (part.type === 'text-delta') onDelta();
      },
    ],
    [
      'stream: core turn loop in-process',
      async (onDelta) => {
        const agent = await host.newSession({ ephemeral: true, skipContextFiles: true });
        const run = agent.runTurn({ text: 'go' });
        for await (const event of run) if (event.type === 'message.delta') onDelta();
        await agent.close();
      },
    ],
  ];
  const results: StreamMeasurement[] = [];
  try {
    for (const [name, path] of paths) {
      const samples: StreamMeasurement[] = [];
      for (let index = 0; index < runs; index += 1) {
        await server.push(...script());
        samples.push(await measure(name, path));
      }
      samples.sort((a, b) => a.wallMs - b.wallMs);
      results.push(samples[Math.floor(samples.length / 2)] as StreamMeasurement);
    }
  } finally {
    await host.close();
    await server.close();
    rmSync(home, { recursive: true, force: true });
  }
  return results;
}
