import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createLocalFileAccess } from '../tools/file-access.js';
import { FileCheckpointStore } from './file-checkpoints.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function workspace(): string {
  const dir = mkdtempSync(join(tmpdir(), 'hermes-ckpt-'));
  dirs.push(dir);
  return dir;
}

describe('FileCheckpointStore', () => {
  it('records the previous content before each write and restores every file written since a checkpoint', async () => {
    const dir = workspace();
    const store = new FileCheckpointStore();
    const files = store.wrap(createLocalFileAccess(), () => dir);
    const a = join(dir, 'a.txt');
    const b = join(dir, 'b.txt');
    writeFileSync(a, 'one\n');
    await files.writeText({ sessionId: 's', callId: 'c1', path: a, content: 'two\n' });
    await files.writeText({ sessionId: 's', callId: 'c2', path: b, content: 'new file\n' });
    await files.writeText({ sessionId: 's', callId: 'c3', path: a, content: 'three\n' });
    const listed = store.list('s');
    expect(listed.map((checkpoint) => checkpoint.message)).toEqual([
      'before writing a.txt',
      'before creating b.txt',
      'before writing a.txt',
    ]);
    const first = listed[2];
    const changes = await store.diff('s', first?.id ?? '');
    expect(changes.map((change) => [change.path, change.before, change.after])).toEqual([
      [a, 'one\n', 'three\n'],
      [b, null, 'new file\n'],
    ]);
    expect(changes[0]?.diff).toContain('-one');
    expect(changes[0]?.diff).toContain('+three');
    const restored = await store.restore('s', first?.id ?? '');
    expect(restored.sort()).toEqual([a, b].sort());
    expect(readFileSync(a, 'utf8')).toBe('one\n');
    expect(existsSync(b)).toBe(false);
    expect(store.list('s')).toEqual([]);
  });

  it('restores one file only, matches an id prefix, and refuses unknown ids and untouched paths', async () => {
    const dir = workspace();
    const store = new FileCheckpointStore();
    const files = store.wrap(createLocalFileAccess(), () => dir);
    const a = join(dir, 'a.txt');
    const b = join(dir, 'b.txt');
    writeFileSync(a, 'a0');
    writeFileSync(b, 'b0');
    await files.writeText({ sessionId: 's', callId: 'c1', path: a, content: 'a1' });
    await files.writeText({ sessionId: 's', callId: 'c2', path: b, content: 'b1' });
    const oldest = store.list('s')[1]?.id ?? '';
    await expect(store.restore('s', 'zzzzzz')).rejects.toThrow('no checkpoint zzzzzz');
    await expect(store.restore('s', oldest, { path: join(dir, 'c.txt') })).rejects.toThrow('was not written since');
    expect(await store.restore('s', oldest.slice(0, 6), { path: b })).toEqual([b]);
    expect(readFileSync(b, 'utf8')).toBe('b0');
    expect(readFileSync(a, 'utf8')).toBe('a1');
    expect(store.list('s').map((checkpoint) => checkpoint.path)).toEqual([a]);
    expect(store.list('other')).toEqual([]);
  });
});
