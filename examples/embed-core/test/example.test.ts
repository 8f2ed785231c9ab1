import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const main = fileURLToPath(new URL('../dist/main.js', import.meta.url));

describe('examples/embed-core', () => {
  it('runs a tool-using turn against the scripted server and prints its events', async () => {
    const env = { ...process.env };
    delete env.HERMES_BASE_URL;
    delete env.HERMES_MODEL;
    const { stdout } = await promisify(execFile)(process.execPath, [main], { env });
    expect(stdout).toContain('→ read_file');
    expect(stdout).toContain('← read_file completed');
    expect(stdout).toContain('buy milk');
    expect(stdout).toMatch(/\[completed: text_response\(finish_reason=stop\)/);
  });
});
