import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { step, text } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { createFixture, type GatewayFixture } from './support/client.js';

// A 2×3 PNG (signature, IHDR, IDAT, IEND).
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAIAAAADCAYAAAC56t6BAAAAEklEQVR4nGP4z8DAwMDAwMDAAAAeAAHr5NYPAAAAAElFTkSuQmCC',
  'base64',
);

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function fixture(options: Parameters<typeof createFixture>[0] = {}): Promise<GatewayFixture> {
  const created = await createFixture(options);
  cleanups.push(() => created.dispose());
  return created;
}

/** Sets environment variables of this process for one test (the gateway runs in it). */
function withEnvironment(values: Record<string, string | undefined>): void {
  const saved = Object.fromEntries(Object.keys(values).map((key) => [key, process.env[key]]));
  for (const [key, value] of Object.entries(values)) {
    if (value === undefined) delete process.env[key];
    else process.env[key] = value;
  }
  cleanups.push(() => {
    for (const [key, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  });
}

/**
 * A folder holding an `xclip` that behaves like the real one for the two calls the gateway makes:
 * `-t TARGETS -o` lists the clipboard's types, `-t <type> -o` prints its content.
 */
function fakeXclip(types: string[], image: Buffer | null): string {
  const folder = mkdtempSync(join(tmpdir(), 'hermes-fake-xclip-'));
  cleanups.push(() => rmSync(folder, { recursive: true, force: true }));
  const imageFile = join(folder, 'clipboard.png');
  if (image) writeFileSync(imageFile, image);
  writeFileSync(
    join(folder, 'xclip'),
    [
      '#!/bin/sh',
      `echo "$*" >> '${join(folder, 'calls.log')}'`,
      'case "$4" in',
      `  TARGETS) printf '${types.join('\\n')}\\n' ;;`,
      `  image/png) cat '${imageFile}' ;;`,
      '  *) echo "Error: target $4 not available" >&2; exit 1 ;;',
      'esac',
    ].join('\n'),
  );
  chmodSync(join(folder, 'xclip'), 0o755);
  return folder;
}

/** A PATH with the system tools a shell script needs but no clipboard utility. */
const basePath = [dirname(process.execPath), '/usr/bin', '/bin'].join(delimiter);

describe('clipboard.paste with a host clipboard tool (§4.5, issue 16.6)', () => {
  it('reads the image through xclip, saves it as PNG, and queues it for the next turn', async () => {
    const xclipFolder = fakeXclip(['TARGETS', 'image/png', 'text/plain'], PNG);
    withEnvironment({
      PATH: `${xclipFolder}${delimiter}${basePath}`,
      DISPLAY: ':42',
      WAYLAND_DISPLAY: undefined,
    });
    const gateway = await fixture({ script: [step(text('a tiny image'))] });
    const client = await gateway.connect();
    const created = await client.result('session.create', {});
    const pasted = await client.result('clipboard.paste', { session_id: created.session_id });
    expect(pasted).toMatchObject({ attached: true, count: 1, width: 2, height: 3, token_estimate: 85 });
    expect(pasted.path).toBe(join(gateway.host.homeDir, 'attachments', created.stored_session_id, pasted.name));
    expect(readFileSync(pasted.path).equals(PNG)).toBe(true);
    expect(readFileSync(join(xclipFolder, 'calls.log'), 'utf8').trim().split('\n')).toEqual([
      '-selection clipboard -t TARGETS -o',
      '-selection clipboard -t image/png -o',
    ]);

    // The same file through image.attach is not queued twice.
    const attached = await client.result('image.attach', { session_id: created.session_id, path: pasted.path });
    expect(attached).toMatchObject({ attached: true, count: 1, width: 2, height: 3 });

    await client.result('prompt.submit', { session_id: created.session_id, text: 'what is this?' });
    await client.event('message.complete', created.session_id);
    const user = JSON.stringify(gateway.host.model.calls[0]?.messages.at(-1));
    expect(user).toContain('what is this?');
    expect(user).toMatch(/image\/png/);
  });

  it('answers "no image in clipboard" when the clipboard holds only text', async () => {
    withEnvironment({
      PATH: `${fakeXclip(['TARGETS', 'UTF8_STRING', 'text/plain'], null)}${delimiter}${basePath}`,
      DISPLAY: ':42',
      WAYLAND_DISPLAY: undefined,
    });
    const client = await (await fixture()).connect();
    const created = await client.result('session.create', {});
    const pasted = await client.call('clipboard.paste', { session_id: created.session_id });
    expect(pasted.result).toEqual({ attached: false, message: 'no image in clipboard' });
  });

  it('answers "clipboard not available" without a clipboard utility, or without a display', async () => {
    withEnvironment({ PATH: basePath, DISPLAY: ':42', WAYLAND_DISPLAY: undefined });
    const client = await (await fixture()).connect();
    const created = await client.result('session.create', {});
    const pasted = await client.call('clipboard.paste', { session_id: created.session_id });
    expect(pasted.result).toEqual({ attached: false, message: 'clipboard not available on this host' });

    // xclip installed but no display server: still unavailable, and xclip is never started.
    const folder = fakeXclip(['TARGETS', 'image/png'], PNG);
    process.env.PATH = `${folder}${delimiter}${basePath}`;
    delete process.env.DISPLAY;
    const headless = await client.call('clipboard.paste', { session_id: created.session_id });
    expect(headless.result).toEqual({ attached: false, message: 'clipboard not available on this host' });
    expect(existsSync(join(folder, 'calls.log'))).toBe(false);
  });
});
