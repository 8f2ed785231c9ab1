import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { startScriptedOpenAIServer } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { cleanups, runCleanups, spawnGateway, spawnHermes } from './support/hermes-process.js';

/**
 * A line bigger than the stdio modes read (issue 37): `hermes acp` used to exit 0 without a word on a line over
 * 32 MiB. Both stdio modes must answer it with a JSON-RPC error and keep serving.
 */

afterEach(runCleanups);

/** Writes `size` bytes of one JSON line (an unfinished string literal, then its end) in 1 MiB pieces. */
async function writeHugeLine(child: ChildProcessWithoutNullStreams, size: number): Promise<void> {
  const piece = 'x'.repeat(1024 * 1024);
  const write = (text: string) =>
    new Promise<void>((resolve, reject) => {
      if (child.stdin.write(text)) resolve();
      else {
        child.stdin.once('drain', resolve);
        child.once('close', () => reject(new Error('the child exited while the line was written')));
      }
    });
  await write('{"jsonrpc":"2.0","id":"huge","method":"ping","params":{"text":"');
  for (let written = 0; written < size; written += piece.length) await write(piece);
  await write('"}}\n');
}

describe('oversized stdin lines', () => {
  it('hermes acp answers a 40 MiB line with a parse error (id null), warns on stderr, and keeps serving', async () => {
    const lines: { id?: number | string | null; result?: Record<string, unknown>; error?: { code: number } }[] = [];
    const { child, exited, stderr } = spawnHermes(
      ['acp'],
      { prefix: 'hermes-acp-', env: { HERMES_MODEL: 'custom:scripted' } },
      (line) => lines.push(JSON.parse(line)),
    );
    let exitCode: number | null = null;
    child.on('exit', (code) => {
      exitCode = code;
    });
    const replyTo = async (id: number) => {
      for (let attempt = 0; attempt < 1200; attempt += 1) {
        const found = lines.find((line) => line.id === id);
        if (found) return found;
        if (exitCode !== null) throw new Error(`hermes acp exited with ${exitCode}: ${stderr()}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      throw new Error(`no reply to ${id}: ${stderr()}`);
    };
    child.stdin.write(
      `${JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: 1, clientCapabilities: {} } })}\n`,
    );
    expect((await replyTo(0)).result?.protocolVersion).toBe(1);
    await writeHugeLine(child, 40 * 1024 * 1024);
    child.stdin.write(
      `${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: 1, clientCapabilities: {} } })}\n`,
    );
    const again = await replyTo(1);
    expect(again.result?.protocolVersion).toBe(1);
    const errors = lines.filter((line) => line.error !== undefined);
    expect(errors).toEqual([{ jsonrpc: '2.0', id: null, error: expect.objectContaining({ code: -32700 }) }]);
    expect(stderr()).toContain('discarded an input line over 33554432 bytes');
    expect(exitCode).toBeNull();
    child.stdin.end();
    await exited;
  }, 120_000);

  it('hermes gateway answers a 20 MiB line with -32700 (id null) and keeps serving', async () => {
    const scripted = await startScriptedOpenAIServer({ script: [] });
    cleanups.push(() => scripted.close());
    const gateway = spawnGateway(scripted);
    await gateway.waitFor((frame) => frame.params?.type === 'gateway.ready');
    await writeHugeLine(gateway.child, 20 * 1024 * 1024);
    const pong = await gateway.call('after', 'ping', {});
    expect(pong.result).toEqual({ pong: true });
    const errors = gateway.frames.filter((frame) => frame.error !== undefined);
    expect(errors).toEqual([{ jsonrpc: '2.0', error: { code: -32700, message: 'parse error' }, id: null }]);
  }, 120_000);
});
