/**
 * Embedding @hermes/core in your own process.
 *
 * Point it at any OpenAI-compatible endpoint:
 *   HERMES_BASE_URL=http://127.0.0.1:11434/v1 HERMES_MODEL=qwen2.5-coder node dist/main.js "What is in this folder?"
 * With no endpoint configured it starts the core's scripted OpenAI-compatible server and runs a
 * scripted tool-using turn against it, so the example runs offline.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAgent } from '@hermes/core';
import { startScriptedOpenAIServer, step, text, toolCall } from '@hermes/core/testing';

const prompt = process.argv[2] ?? 'What does notes.txt say?';
const workdir = mkdtempSync(join(tmpdir(), 'hermes-embed-'));
writeFileSync(join(workdir, 'notes.txt'), 'Buy milk.\nCall Ada about the launch.\n');

const env: Record<string, string | undefined> = { ...process.env };
let server: Awaited<ReturnType<typeof startScriptedOpenAIServer>> | null = null;
if (!env.HERMES_BASE_URL && !env.HERMES_MODEL) {
  server = await startScriptedOpenAIServer({
    script: [
      step(text('Let me read the file.'), toolCall('read_file', { path: 'notes.txt' })),
      step(text('notes.txt has two items: buy milk, and call Ada about the launch.')),
    ],
  });
  env.HERMES_BASE_URL = server.baseURL;
  env.HERMES_MODEL = 'scripted-demo';
}

// A private HERMES_HOME keeps the example from touching ~/.hermes.
const agent = await createAgent({
  env,
  homeDir: mkdtempSync(join(tmpdir(), 'hermes-home-')),
  cwd: workdir,
  source: 'example',
});
const run = agent.runTurn({ text: prompt });
for await (const event of run) {
  switch (event.type) {
    case 'message.delta':
      process.stdout.write(event.text);
      break;
    case 'message.end':
      process.stdout.write('\n');
      break;
    case 'tool.start':
      process.stdout.write(`→ ${event.name} ${JSON.stringify(event.args)}\n`);
      break;
    case 'tool.end':
      process.stdout.write(`← ${event.name} ${event.status} (${event.result.split('\n').length} lines)\n`);
      break;
    default:
      break;
  }
}
const result = await run.result;
process.stdout.write(`[${result.outcome}: ${result.exitReason}; ${result.usage.turn.totalTokens} tokens]\n`);
await agent.close();
await server?.close();
process.exitCode = result.outcome === 'completed' ? 0 : 1;
