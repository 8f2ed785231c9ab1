import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { hang, type ScriptedServer, startScriptedOpenAIServer, step, text, toolCall } from '@hermes/core/testing';
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

interface Finished {
  code: number | null;
  stdout: string;
  stderr: string;
}

function hermes(
  args: string[],
  env: Record<string, string>,
  options: { cwd?: string; stdin?: string } = {},
): { child: ChildProcess; done: Promise<Finished> } {
  const child = spawn(process.execPath, [bin, ...args], {
    cwd: options.cwd,
    env: { PATH: process.env.PATH ?? '', HOME: env.HERMES_HOME ?? tmpdir(), ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  child.stdin?.end(options.stdin ?? '');
  const done = new Promise<Finished>((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
  return { child, done };
}

function modelEnv(baseURL: string): Record<string, string> {
  return { HERMES_HOME: temp('hermes-home-'), HERMES_MODEL: 'custom:scripted', HERMES_BASE_URL: baseURL };
}

describe('hermes -q', () => {
  it('prints the final answer on stdout, progress on stderr, and exits 0', async () => {
    const cwd = temp('hermes-ws-');
    const scripted = await server([step(text('Looking.'), toolCall('todo', {})), step(text('All done.'))]);
    const { done } = hermes(['-q', 'plan something'], modelEnv(scripted.baseURL), { cwd });
    const finished = await done;
    expect(finished.code).toBe(0);
    expect(finished.stdout).toBe('All done.\n');
    expect(finished.stderr).toContain('→');
  });

  it('reads the prompt from stdin when it is -', async () => {
    const scripted = await server([step(text('Got it.'))]);
    const { done } = hermes(['-q', '-'], modelEnv(scripted.baseURL), { stdin: 'prompt from a pipe' });
    const finished = await done;
    expect(finished.code).toBe(0);
    expect(JSON.stringify(scripted.requests[0]?.body)).toContain('prompt from a pipe');
  });

  it('exits 1 with one clear line when no model is configured', async () => {
    const { done } = hermes(['-q', 'hello'], { HERMES_HOME: temp('hermes-home-') });
    const finished = await done;
    expect(finished.code).toBe(1);
    expect(finished.stdout).toBe('');
    expect(finished.stderr).toContain('HERMES_MODEL');
    expect(finished.stderr).not.toMatch(/\n\s+at /);
  });

  it('exits 130 when interrupted with Ctrl-C', async () => {
    const scripted = await server([step(text('thinking'), hang())]);
    const { child, done } = hermes(['-q', 'take your time'], modelEnv(scripted.baseURL));
    for (let attempt = 0; attempt < 6_000 && scripted.requests.length === 0; attempt += 1)
      await new Promise((resolve) => setTimeout(resolve, 10));
    await new Promise((resolve) => setTimeout(resolve, 50));
    child.kill('SIGINT');
    const finished = await done;
    expect(finished.code).toBe(130);
  });

  it('runs a built-in slash command instead of sending it to the model; other /text is still a prompt', async () => {
    const scripted = await server([step(text('It lists host names.'))]);
    const env = modelEnv(scripted.baseURL);
    const help = await hermes(['-q', '/help'], env).done;
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('/model');
    expect(help.stdout).toContain('/usage');
    const json = await hermes(['-q', '/help', '--output-format', 'json'], env).done;
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ type: 'command', command: 'help', kind: 'text' });
    expect(scripted.requests).toHaveLength(0);
    const prompt = await hermes(['-q', '/etc/hosts: what is this file?'], env).done;
    expect(prompt.code).toBe(0);
    expect(prompt.stdout).toBe('It lists host names.\n');
    // The first request to the model is this prompt (a title request may follow it).
    expect(JSON.stringify(scripted.requests[0]?.body)).toContain('/etc/hosts: what is this file?');
  });

  it('denies dangerous commands unless --yolo', async () => {
    const cwd = temp('hermes-ws-');
    mkdirSync(join(cwd, 'build'));
    const first = await server([
      step(toolCall('terminal', { command: 'rm -rf build' })),
      step(text('Could not delete.')),
    ]);
    const denied = await hermes(['-q', 'clean'], modelEnv(first.baseURL), { cwd }).done;
    expect(denied.code).toBe(0);
    expect(existsSync(join(cwd, 'build'))).toBe(true);
    // Off a terminal nobody can be asked: the message says how to allow it, not how to embed the core.
    expect(denied.stderr).toContain('--yolo');
    expect(denied.stderr).toContain('not one');
    expect(denied.stderr).not.toContain('callbacks.approve');
    const second = await server([step(toolCall('terminal', { command: 'rm -rf build' })), step(text('Deleted.'))]);
    const allowed = await hermes(['-q', 'clean', '--yolo'], modelEnv(second.baseURL), { cwd }).done;
    expect(allowed.code).toBe(0);
    expect(allowed.stdout).toBe('Deleted.\n');
    expect(existsSync(join(cwd, 'build'))).toBe(false);
  });
});

describe('hermes sessions, config and model', () => {
  it('lists, shows, searches, exports and deletes sessions', async () => {
    const scripted = await server([step(text('The capital of France is Paris.'))]);
    const env = modelEnv(scripted.baseURL);
    expect((await hermes(['-q', 'What is the capital of France?'], env).done).code).toBe(0);
    const list = await hermes(['sessions', 'list', '--json'], env).done;
    const sessions = JSON.parse(list.stdout) as { id: string; preview: string }[];
    expect(sessions).toHaveLength(1);
    expect(sessions[0]!.preview).toBe('What is the capital of France?');
    const id = sessions[0]!.id;
    expect((await hermes(['sessions', 'show', id], env).done).stdout).toContain('Paris');
    expect((await hermes(['sessions', 'search', 'Paris'], env).done).stdout).toContain('>>>Paris<<<');
    const exported = JSON.parse((await hermes(['sessions', 'export', id], env).done).stdout) as { messages: unknown[] };
    expect(exported.messages).toHaveLength(2);
    expect((await hermes(['sessions', 'delete', id], env).done).code).toBe(0);
    expect(JSON.parse((await hermes(['sessions', 'list', '--json'], env).done).stdout)).toEqual([]);
  });

  it('config set keeps the file valid and config get reads it back; a bad value is one clear line', async () => {
    const env = { HERMES_HOME: temp('hermes-home-') };
    expect((await hermes(['config', 'set', 'agent.max_iterations', '12'], env).done).code).toBe(0);
    expect((await hermes(['config', 'get', 'agent.max_iterations'], env).done).stdout).toBe('12\n');
    const bad = await hermes(['config', 'set', 'agent.max_iterations', 'many'], env).done;
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('agent.max_iterations');
  });

  it('model set writes the default and model lists it', async () => {
    const env = { HERMES_HOME: temp('hermes-home-'), ANTHROPIC_API_KEY: 'sk-ant-test-000000' };
    expect((await hermes(['model', 'set', 'anthropic:claude-sonnet-4-5'], env).done).code).toBe(0);
    const listed = await hermes(['model'], env).done;
    expect(listed.stdout).toContain('anthropic:claude-sonnet-4-5');
  });

  it('model with nothing configured shows the providers and what each needs', async () => {
    const home = temp('hermes-home-');
    writeFileSync(join(home, 'config.yaml'), 'providers:\n  together:\n    base_url: https://api.together.xyz/v1\n');
    const listed = await hermes(['model'], { HERMES_HOME: home, OLLAMA_BASE_URL: 'http://127.0.0.1:11434/v1' }).done;
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain('No models are configured yet.');
    // A link that works for an npm install, where docs/ is not in the package.
    expect(listed.stdout).toContain('https://github.com/hermes-ts/hermes-ts/blob/main/docs/providers.md');
    for (const [spec, needs] of <[string, string][]>[
      ['openai:', 'OPENAI_API_KEY'],
      ['anthropic:', 'ANTHROPIC_API_KEY'],
      ['openrouter:', 'OPENROUTER_API_KEY'],
      ['custom:', 'HERMES_BASE_URL'],
      ['together:', 'providers.together (https://api.together.xyz/v1)'],
    ]) {
      expect(listed.stdout).toMatch(new RegExp(`^  ${spec}\\S*\\s+.*${needs.replace(/[.()]/g, '\\$&')}`, 'm'));
    }
    // A variable that is set is ticked.
    expect(listed.stdout).toMatch(/^ {2}ollama:\S+\s+OLLAMA_BASE_URL \(default http:\/\/localhost:11434\/v1\) ✓$/m);
  });

  it('errors a newcomer meets are one clear line: a missing key, a port in use, an unusable HERMES_HOME', async () => {
    const missingKey = await hermes(['-q', 'hi'], {
      HERMES_HOME: temp('hermes-home-'),
      HERMES_MODEL: 'anthropic:claude-sonnet-4-5',
    }).done;
    expect(missingKey.code).toBe(1);
    expect(missingKey.stderr).toContain('ANTHROPIC_API_KEY');
    expect(missingKey.stderr).not.toMatch(/\n\s+at /);

    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise<void>((resolve) => blocker.close(() => resolve())));
    const port = (blocker.address() as AddressInfo).port;
    const busy = await hermes(['serve', '--port', String(port)], {
      HERMES_HOME: temp('hermes-home-'),
      API_SERVER_KEY: 'abcdefghijklmnopqrstuvwxyz123456',
    }).done;
    expect(busy.code).toBe(1);
    expect(busy.stderr.trim().split('\n')).toEqual(['hermes: the port is already in use. Pick another with --port.']);

    const home = join(temp('hermes-home-'), 'file-not-folder');
    writeFileSync(home, 'not a directory');
    const unusable = await hermes(['-q', 'hi'], { HERMES_HOME: home }).done;
    expect(unusable.code).toBe(1);
    expect(unusable.stderr.trim().split('\n')).toHaveLength(1);
    expect(unusable.stderr).toContain('HERMES_HOME');
  });
});
