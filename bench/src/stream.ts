/**
 * Stream-path benchmarks: 10,000 text deltas from the core's scripted OpenAI-compatible server,
 * measured on the two floors of issue 11 — a client reading the SSE itself (direct path) and the
 * AI SDK provider's `doStream` consumed in-process (provider path) — and through the core's turn
 * loop in-process. Wall time and CPU time of this process, and time to first delta. The model server
 * runs in its own process, as it does for the protocol paths.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { createAgentHost, silentLogger } from '@hermes/core';
import { step, text } from '@hermes/core/testing';
import { startRemoteModel } from './remote-model.js';
import { fieldMedians } from './stats.js';

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

/**
 * Each figure its own median: the CPU of the run with the median wall time swings with whatever GC or background
 * work of this process happened to land in that one run.
 */
function medians(name: string, samples: StreamMeasurement[]): StreamMeasurement {
  return { name, ...fieldMedians(samples, ['wallMs', 'cpuMs', 'firstDeltaMs']) };
}

/** The name of the fresh-process floor, which the stream paths' first-turn rows are read against. */
export const FRESH_DIRECT_FLOOR = 'stream: direct SSE read, first read of a fresh process (floor)';

/**
 * The direct client's first read in a fresh node process (`direct-fresh-process.mjs`): started and ready, then the
 * deltas. It pays what any process pays on its first stream (compiling the code it runs, loading fetch) and is
 * what the stream paths' first turn of a fresh process compares with.
 */
async function measureFreshDirect(server: { baseURL: string }): Promise<StreamMeasurement> {
  const script = fileURLToPath(new URL('./direct-fresh-process.mjs', import.meta.url));
  const child = spawn(process.execPath, [script, server.baseURL], { stdio: ['pipe', 'pipe', 'inherit'] });
  try {
    const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
    const ready = await lines.next();
    if (ready.value !== 'ready') throw new Error('the fresh direct client did not start');
    child.stdin.write('go\n');
    const figures = await lines.next();
    const parsed = JSON.parse(String(figures.value)) as Omit<StreamMeasurement, 'name'> & { deltas: number };
    if (parsed.deltas !== DELTAS) throw new Error(`the fresh direct client saw ${parsed.deltas} deltas`);
    return { name: FRESH_DIRECT_FLOOR, wallMs: parsed.wallMs, cpuMs: parsed.cpuMs, firstDeltaMs: parsed.firstDeltaMs };
  } finally {
    child.kill('SIGKILL');
  }
}

/** Medians of `runs` runs of each path, after one uncounted run. */
export async function runStreamBenchmarks(options: { quick: boolean }): Promise<StreamMeasurement[]> {
  const runs = options.quick ? 3 : 7;
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
      // One uncounted run first: the first use of a path compiles its code, and the floors are read as warm.
      await server.push(...script());
      await measure(name, path);
      const samples: StreamMeasurement[] = [];
      for (let index = 0; index < runs; index += 1) {
        await server.push(...script());
        samples.push(await measure(name, path));
      }
      results.push(medians(name, samples));
    }
    const fresh: StreamMeasurement[] = [];
    for (let index = 0; index < runs; index += 1) {
      await server.push(...script());
      fresh.push(await measureFreshDirect(server));
    }
    results.push(medians(FRESH_DIRECT_FLOOR, fresh));
  } finally {
    await host.close();
    await server.close();
    rmSync(home, { recursive: true, force: true });
  }
  return results;
}
