import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type ScriptedServer, startScriptedOpenAIServer, step, text, toolCall } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';

const bin = fileURLToPath(new URL('../dist/bin.js', import.meta.url));
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function temp(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function server(script: Parameters<typeof startScriptedOpenAIServer>[0]['script']): Promise<ScriptedServer> {
  const started = await startScriptedOpenAIServer({ script });
  cleanups.push(() => started.close());
  return started;
}

function hermes(args: string[], env: Record<string, string>, stdin = '') {
  const home = env.HERMES_HOME ?? temp('hermes-home-');
  const child = spawn(process.execPath, [bin, ...args], {
    cwd: temp('hermes-ws-'),
    env: { PATH: process.env.PATH ?? '', HOME: home, HERMES_HOME: home, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  child.stdin.end(stdin);
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on('close', (code) => resolve({ code, stdout, stderr })),
  );
}

function modelEnv(baseURL: string): Record<string, string> {
  return { HERMES_MODEL: 'custom:scripted', HERMES_BASE_URL: baseURL };
}

describe('hermes -q --output-format', () => {
  it('json prints one result object with the answer, the outcome and the usage', async () => {
    const scripted = await server([step(text('Four.'))]);
    const result = await hermes(['-q', 'two plus two?', '--output-format', 'json'], modelEnv(scripted.baseURL));
    expect(result.code).toBe(0);
    const lines = result.stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    const parsed = JSON.parse(lines[0] ?? '') as Record<string, unknown>;
    expect(parsed).toMatchObject({ type: 'result', outcome: 'completed', finalText: 'Four.' });
    expect(typeof parsed.sessionId).toBe('string');
    expect((parsed.usage as { turn: { outputTokens: number } }).turn.outputTokens).toBeGreaterThan(0);
  }, 60_000);

  it('stream-json prints one JSON object per event, in order, then the result', async () => {
    const scripted = await server([step(toolCall('read_file', { path: 'missing.txt' })), step(text('No such file.'))]);
    const result = await hermes(['-q', 'read it', '--output-format', 'stream-json'], modelEnv(scripted.baseURL));
    expect(result.code).toBe(0);
    const events = result.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { type: string; seq?: number; text?: string });
    const types = events.map((event) => event.type);
    expect(types[0]).toBe('turn.start');
    expect(types).toContain('tool.start');
    expect(types).toContain('tool.end');
    expect(types).toContain('message.delta');
    expect(types.at(-1)).toBe('result');
    expect(types.indexOf('tool.end')).toBeLessThan(types.lastIndexOf('message.delta'));
    const answer = events
      .filter((event) => event.type === 'message.delta')
      .map((event) => event.text)
      .join('');
    expect(answer).toContain('No such file.');
    // The progress text of the text format stays off stderr.
    expect(result.stderr).not.toContain('→');
  }, 60_000);

  it('rejects an unknown format', async () => {
    const result = await hermes(['-q', 'hi', '--output-format', 'xml'], {});
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('xml');
  }, 60_000);
});

describe('hermes with piped stdin and without -q', () => {
  it('reads the piped text as the prompt and prints the answer', async () => {
    const scripted = await server([step(text('Piped answer.'))]);
    const result = await hermes([], modelEnv(scripted.baseURL), 'summarize this please\n');
    expect(result.code).toBe(0);
    expect(result.stdout).toBe('Piped answer.\n');
    expect(JSON.stringify(scripted.calls[0]?.messages)).toContain('summarize this please');
  }, 60_000);
});

describe('model choice at start', () => {
  it('an unknown provider prefix fails at once with the known providers listed', async () => {
    const result = await hermes(['-q', 'hi', '-m', 'nosuch:model'], {});
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("unknown provider 'nosuch'");
    expect(result.stderr).toMatch(/Known providers: .*anthropic.*openrouter/);
    // The same for a configured default model.
    const configured = await hermes(['-q', 'hi'], { HERMES_MODEL: 'nosuch:model' });
    expect(configured.code).toBe(1);
    expect(configured.stderr).toContain("unknown provider 'nosuch' in 'nosuch:model'");
  }, 60_000);
});
