import { spawn } from 'node:child_process';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { step, text, toolCall } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { CLI_ENTRY } from './agent-harness.js';
import { fixtureFor, teardown } from './conformance-helpers.js';

afterEach(async (context) => {
  await teardown(context.task.result?.state === 'fail');
});

/** The acpx CLI installed as a devDependency. */
const ACPX = fileURLToPath(new URL('../node_modules/acpx/dist/cli.js', import.meta.url));

function runAcpx(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const environment: Record<string, string | undefined> = { ...process.env, ...env };
  delete environment.SCRIPTED_API_KEY;
  delete environment.HERMES_MODEL;
  const child = spawn(process.execPath, [ACPX, ...args], { env: environment, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString('utf8');
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stdout, stderr })));
}

describe('acpx drives hermes acp (issue 16.3)', () => {
  it('acpx exec with --model switches the model and creates a new file through its fs handlers', async () => {
    const fixture = await fixtureFor({
      script: [
        step(toolCall('write_file', { path: 'made/by/acpx.txt', content: 'created through acpx\n' })),
        step(text('done')),
      ],
    });
    // acpx keeps its own state under HOME; a private one keeps the test hermetic.
    const userHome = join(fixture.home, 'user-home');
    await mkdir(userHome, { recursive: true });
    const result = await runAcpx(
      [
        '--agent',
        `${process.execPath} ${CLI_ENTRY} acp`,
        '--approve-all',
        '--cwd',
        fixture.project,
        '--format',
        'json',
        '--model',
        'scripted:model-b',
        'exec',
        'create the file',
      ],
      { HOME: userHome, HERMES_HOME: fixture.home, HERMES_LOG_LEVEL: 'warn' },
    );
    expect(result.code, result.stderr).toBe(0);
    expect(await readFile(join(fixture.project, 'made/by/acpx.txt'), 'utf8')).toBe('created through acpx\n');
    const wire = result.stdout
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { method?: string; result?: { stopReason?: string } });
    expect(wire.some((message) => message.method === 'fs/read_text_file')).toBe(true);
    expect(wire.some((message) => message.method === 'fs/write_text_file')).toBe(true);
    expect(wire.some((message) => message.result?.stopReason === 'end_turn')).toBe(true);
    expect(fixture.server.calls).toHaveLength(2);
    for (const request of fixture.server.requests) expect(JSON.stringify(request.body)).toContain('"model":"model-b"');
    // Two CLIs start here (acpx, then hermes acp under it): more than the harness's usual ceiling.
  }, 90_000);
});
