/**
 * Stream-path benchmarks in the harness's process: 10,000 text deltas from the core's scripted
 * OpenAI-compatible server, read by a client reading the SSE itself over node:http, by the AI SDK
 * provider's `doStream`, and through the core's turn loop. (The stream paths' own floor, the direct
 * client in a process of its own measured in the same rounds as the paths, is in protocol-stream.ts.) Wall time and CPU time of this process, and time to first delta. The model server
 * runs in its own process, as it does for the protocol paths.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
  const agent = new Agent({ keepAlive: true });
  const paths: [string, (onDelta: () => void) => Promise<void>][] = [
    [
      'stream: direct SSE read in-process (floor)',
      (onDelta) =>
        new Promise<void>((resolve, reject) => {
          // node:http, as the agents read the model (ADR 0026) and as the stream paths' direct client does.
          const body = JSON.stringify({ model: 'bench', stream: true, messages: [{ role: 'user', content: 'go' }] });
          const outgoing = httpRequest(`${server.baseURL}/chat/completions`, {
            method: 'POST',
            agent,
            headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
          });
          outgoing.once('error', reject);
          outgoing.once('response', (response) => {
            response.setEncoding('utf8');
            let buffer = '';
            response.on('data', (piece: string) => {
              buffer += piece;
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
            });
            response.once('error', reject);
            response.once('end', resolve);
          });
          outgoing.end(body);
        }),
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
  } finally {
    agent.destroy();
    await host.close();
    await server.close();
    rmSync(home, { recursive: true, force: true });
  }
  return results;
}
