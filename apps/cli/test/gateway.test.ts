import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startScriptedOpenAIServer, step, text, toolCall } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { cleanups, runCleanups, spawnGateway } from './support/hermes-process.js';

afterEach(runCleanups);

describe('hermes gateway', () => {
  it('answers the first turn: the provider package it imports on first use resolves from its real path', async () => {
    // The gateway stats its stdout pipe at start-up; that stat must not send the provider's
    // first-use import through the workspace symlink (where eventsource-parser is not visible).
    // No cwd for session.create: its stat of the folder would hide the problem (docs/adr/0004).
    const scripted = await startScriptedOpenAIServer({ script: [step(text('Hello from the model.'))] });
    cleanups.push(() => scripted.close());
    const gateway = spawnGateway(scripted);
    await gateway.waitFor((frame) => frame.params?.type === 'gateway.ready');
    const created = await gateway.call('create', 'session.create', {});
    const sessionId = created.result?.session_id as string;
    expect(typeof sessionId).toBe('string');
    const submitted = await gateway.call('submit', 'prompt.submit', { session_id: sessionId, text: 'hi' });
    expect(submitted.error).toBeUndefined();
    const complete = await gateway.waitFor(
      (frame) => frame.params?.type === 'message.complete' && frame.params.session_id === sessionId,
    );
    expect(complete.params?.payload).toMatchObject({ status: 'complete', text: 'Hello from the model.' });
  });

  it('edits and searches files: jsdiff, picomatch and node-ignore, imported on first use, load as well', async () => {
    const scripted = await startScriptedOpenAIServer({
      script: [
        step(toolCall('write_file', { path: 'notes.txt', content: 'hello gateway\n' }, 'call_write')),
        step(toolCall('search_files', { pattern: 'hello', file_glob: '*.txt' }, 'call_search')),
        step(text('Written and found.')),
      ],
    });
    cleanups.push(() => scripted.close());
    // Without ripgrep on PATH, search_files walks the tree itself and reads .gitignore with node-ignore.
    const noPrograms = mkdtempSync(join(tmpdir(), 'hermes-path-'));
    cleanups.push(() => rmSync(noPrograms, { recursive: true, force: true }));
    const gateway = spawnGateway(scripted, { path: noPrograms });
    const project = join(gateway.home, 'project');
    mkdirSync(project);
    writeFileSync(join(project, '.gitignore'), 'ignored.txt\n');
    writeFileSync(join(project, 'ignored.txt'), 'hello ignored\n');
    await gateway.waitFor((frame) => frame.params?.type === 'gateway.ready');
    const created = await gateway.call('create', 'session.create', { cwd: project });
    const sessionId = created.result?.session_id as string;
    await gateway.call('submit', 'prompt.submit', { session_id: sessionId, text: 'write and search' });
    const complete = await gateway.waitFor(
      (frame) => frame.params?.type === 'message.complete' && frame.params.session_id === sessionId,
    );
    expect(complete.params?.payload).toMatchObject({ status: 'complete', text: 'Written and found.' });
    expect(readFileSync(join(project, 'notes.txt'), 'utf8')).toBe('hello gateway\n');
    const written = await gateway.waitFor(
      (frame) => frame.params?.type === 'tool.complete' && frame.params.payload?.name === 'write_file',
    );
    expect(written.params?.payload?.inline_diff).toContain('+hello gateway');
    const searched = await gateway.waitFor(
      (frame) => frame.params?.type === 'tool.complete' && frame.params.payload?.name === 'search_files',
    );
    const found = JSON.stringify(searched.params?.payload);
    expect(found).toContain('notes.txt');
    expect(found).not.toContain('ignored.txt');
  });
});
