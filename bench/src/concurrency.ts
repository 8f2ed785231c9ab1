/**
 * Concurrency: N concurrent streaming chat completions against one apps/server process whose model
 * is the scripted OpenAI-compatible server (issue 11): errors, throughput, and inter-delta latency
 * seen by the clients.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { delay, step, text } from '@hermes/core/testing';
import { startRemoteModel } from './remote-model.js';
import { percentile } from './stats.js';

const KEY = 'bench-key-0123456789abcdefghij';

/** One run of `streams` concurrent completions of `deltas` deltas each. */
export async function runConcurrency(
  streams: number,
  deltas = 50,
): Promise<{ errors: number; deltasPerSecond: number; p50Ms: number; p99Ms: number }> {
  const serverEntry = join(
    dirname(createRequire(import.meta.url).resolve('@hermes/server/package.json')),
    'dist',
    'main.js',
  );
  const model = await startRemoteModel();
  // Each answer streams `deltas` two-character chunks with a 10 ms pause in the middle, like a model.
  const body = 'ab'.repeat(deltas);
  await model.push(
    ...Array.from({ length: streams }, () =>
      step(text(body.slice(0, deltas), 2), delay(10), text(body.slice(deltas), 2)),
    ),
  );
  const home = mkdtempSync(join(tmpdir(), 'hermes-concurrency-'));
  writeFileSync(join(home, 'config.yaml'), 'session:\n  auto_title: false\n');
  const child = spawn(process.execPath, [serverEntry], {
    env: {
      PATH: process.env.PATH ?? '',
      HOME: home,
      HERMES_HOME: home,
      API_SERVER_PORT: '0',
      API_SERVER_KEY: KEY,
      API_SERVER_MAX_CONCURRENT_RUNS: '0',
      HERMES_LOG_LEVEL: 'info',
      HERMES_MODEL: 'custom:bench',
      HERMES_BASE_URL: model.baseURL,
    },
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  try {
    const url = await new Promise<string>((resolve, reject) => {
      let stdout = '';
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
        const line = stdout.split('\n').find((entry) => entry.includes('"msg":"listening"'));
        if (line) resolve((JSON.parse(line) as { url: string }).url);
      });
      child.on('exit', (code) => reject(new Error(`server exited with ${code}`)));
    });
    const gaps: number[] = [];
    let errors = 0;
    let received = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: streams }, async (_unused, index) => {
        try {
          const response = await fetch(`${url}/v1/chat/completions`, {
            method: 'POST',
            headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
            body: JSON.stringify({
              model: 'hermes-agent',
              stream: true,
              messages: [{ role: 'user', content: `stream ${index}` }],
            }),
          });
          if (!response.ok || !response.body) {
            errors += 1;
            return;
          }
          let last = -1;
          const decoder = new TextDecoder();
          for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
            const textChunk = decoder.decode(chunk, { stream: true });
            const count = textChunk.split('"content":"').length - 1;
            if (count === 0) continue;
            const now = performance.now();
            if (last >= 0) gaps.push(now - last);
            last = now;
            received += count;
          }
        } catch {
          errors += 1;
        }
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    gaps.sort((a, b) => a - b);
    return { errors, deltasPerSecond: received / seconds, p50Ms: percentile(gaps, 0.5), p99Ms: percentile(gaps, 0.99) };
  } finally {
    child.kill('SIGKILL');
    await model.close();
    rmSync(home, { recursive: true, force: true });
  }
}
