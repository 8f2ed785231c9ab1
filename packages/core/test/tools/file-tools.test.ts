import { chmod, mkdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createPatchTool } from '../../src/tools/patch.js';
import { createReadFileTool } from '../../src/tools/read-file.js';
import type { FileAccess } from '../../src/tools/types.js';
import { createWriteFileTool } from '../../src/tools/write-file.js';
import type { FileDiff } from '../../src/types.js';
import { createTestToolContext, type TestToolContext } from './context.js';

const readFileTool = createReadFileTool();
const writeFileTool = createWriteFileTool();
const patchTool = createPatchTool();

let test: TestToolContext;

beforeEach(async () => {
  test = await createTestToolContext();
});

afterEach(async () => {
  await test.cleanup();
});

function numbered(count: number): string {
  return `${Array.from({ length: count }, (_, index) => `line ${index + 1}`).join('\n')}\n`;
}

describe('checklist', () => {
  it('28. patch returns a unified diff in its result and a FileDiff with old and new text; an ambiguous old_string returns an error and leaves the file unchanged', async () => {
    const path = join(test.cwd, 'src', 'app.ts');
    await mkdir(join(test.cwd, 'src'));
    const before = 'const a = 1;\nconst b = 2;\nconst c = 3;\n';
    await writeFile(path, before);

    const result = await test.run(patchTool, {
      path: 'src/app.ts',
      old_string: 'const b = 2;',
      new_string: 'const b = 20;',
    });
    expect(result.isError).toBeUndefined();
    expect(result.content).toBe(
      [
        'Patched src/app.ts: 1 replacement',
        '',
        '--- a/src/app.ts',
        '+++ b/src/app.ts',
        '@@ -1,3 +1,3 @@',
        ' const a = 1;',
        '-const b = 2;',
        '+const b = 20;',
        ' const c = 3;',
        '',
      ].join('\n'),
    );
    const after = 'const a = 1;\nconst b = 20;\nconst c = 3;\n';
    expect(await readFile(path, 'utf8')).toBe(after);
    expect(result.diffs).toEqual([
      { path, oldText: before, newText: after, unified: expect.stringContaining('+const b = 20;') } satisfies FileDiff,
    ]);
    expect(result.structured).toEqual({ path: 'src/app.ts', replacements: 1, strategy: 'exact' });

    await writeFile(path, 'x = 1\nx = 1\n');
    const ambiguous = await test.run(patchTool, { path: 'src/app.ts', old_string: 'x = 1', new_string: 'x = 2' });
    expect(ambiguous.isError).toBe(true);
    expect(ambiguous.content).toBe(
      'old_string matches 2 places in src/app.ts; add surrounding context or set replace_all.',
    );
    expect(await readFile(path, 'utf8')).toBe('x = 1\nx = 1\n');
  });

  it('29. write_file on a new nested path creates the directories and reports oldText null; a path in file.write_denylist is refused', async () => {
    const result = await test.run(writeFileTool, { path: 'a/b/c/new.txt', content: 'one\ntwo\n' });
    expect(result.content).toBe('Created a/b/c/new.txt (2 lines)');
    const path = join(test.cwd, 'a/b/c/new.txt');
    expect(await readFile(path, 'utf8')).toBe('one\ntwo\n');
    expect(result.diffs?.[0]).toMatchObject({ path, oldText: null, newText: 'one\ntwo\n' });
    expect(result.diffs?.[0]?.unified).toContain('--- /dev/null\n+++ b/a/b/c/new.txt');
    expect(result.structured).toEqual({ path: 'a/b/c/new.txt', created: true, bytes: 8 });

    await mkdir(join(test.cwd, '.git', 'objects'), { recursive: true });
    const refused = await test.run(writeFileTool, { path: '.git/objects/ab', content: 'x' });
    expect(refused.isError).toBe(true);
    expect(refused.content).toContain('matches file.write_denylist (**/.git/objects/**)');
    await expect(stat(join(test.cwd, '.git/objects/ab'))).rejects.toThrow();
  });

  it('30. read_file with offset 10 and limit 5 returns lines 10–14 in N|text form with the continuation footer', async () => {
    await writeFile(join(test.cwd, 'lines.txt'), numbered(30));
    const result = await test.run(readFileTool, { path: 'lines.txt', offset: 10, limit: 5 });
    expect(result.content).toBe(
      [
        '    10|line 10',
        '    11|line 11',
        '    12|line 12',
        '    13|line 13',
        '    14|line 14',
        '[Showing lines 10–14 of 30. Use offset=15 to continue.]',
      ].join('\n'),
    );
    expect(result.structured).toEqual({
      path: 'lines.txt',
      startLine: 10,
      endLine: 14,
      totalLines: 30,
      truncated: true,
    });
    expect(result.locations).toEqual([{ path: join(test.cwd, 'lines.txt'), line: 10 }]);
  });
});

describe('read_file', () => {
  it('reads a whole short file without a footer', async () => {
    await writeFile(join(test.cwd, 'a.txt'), 'alpha\r\nbeta');
    const result = await test.run(readFileTool, { path: 'a.txt' });
    expect(result.content).toBe('     1|alpha\n     2|beta');
    expect(result.structured).toEqual({ path: 'a.txt', startLine: 1, endLine: 2, totalLines: 2, truncated: false });
  });

  it('pages at 500 lines by default and caps limit at 2000', async () => {
    await writeFile(join(test.cwd, 'big.txt'), numbered(2500));
    const first = await test.run(readFileTool, { path: 'big.txt' });
    expect(first.content.split('\n')).toHaveLength(501);
    expect(first.content.endsWith('[Showing lines 1–500 of 2500. Use offset=501 to continue.]')).toBe(true);
    const capped = await test.run(readFileTool, { path: 'big.txt', limit: 5000 });
    expect(capped.content.endsWith('[Showing lines 1–2000 of 2500. Use offset=2001 to continue.]')).toBe(true);
  });

  it('reports an empty file', async () => {
    await writeFile(join(test.cwd, 'empty.txt'), '');
    const result = await test.run(readFileTool, { path: 'empty.txt' });
    expect(result.content).toBe('[empty file]');
    expect(result.isError).toBeUndefined();
  });

  it('cuts lines longer than 2,000 characters with a marker', async () => {
    await writeFile(join(test.cwd, 'long.txt'), `${'x'.repeat(2500)}\n`);
    const result = await test.run(readFileTool, { path: 'long.txt' });
    expect(result.content).toBe(`     1|${'x'.repeat(2000)}… [line cut: 2500 characters]`);
    expect(result.structured).toMatchObject({ truncated: true });
  });

  it('names up to three similar files when the file does not exist', async () => {
    for (const name of ['config.ts', 'config.js', 'confg.ts', 'config.test.ts', 'unrelated.md']) {
      await writeFile(join(test.cwd, name), 'x');
    }
    const result = await test.run(readFileTool, { path: 'config.tsx' });
    expect(result.isError).toBe(true);
    expect(result.content).toMatch(/^File not found: config\.tsx\. Similar names: /);
    const names = result.content.replace(/^.*Similar names: /, '').split(', ');
    expect(names).toHaveLength(3);
    expect(names).toContain('config.ts');
    expect(names).not.toContain('unrelated.md');
  });

  it('refuses directories and binary files', async () => {
    await mkdir(join(test.cwd, 'dir'));
    const directory = await test.run(readFileTool, { path: 'dir' });
    expect(directory.isError).toBe(true);
    expect(directory.content).toContain('dir is a directory');
    await writeFile(join(test.cwd, 'blob.bin'), Buffer.from([0x50, 0x4b, 0x00, 0x01]));
    const binary = await test.run(readFileTool, { path: 'blob.bin' });
    expect(binary.isError).toBe(true);
    expect(binary.content).toBe('blob.bin is a binary file (4 bytes); read_file reads text files only.');
  });

  it('reports an offset past the end', async () => {
    await writeFile(join(test.cwd, 'three.txt'), numbered(3));
    const result = await test.run(readFileTool, { path: 'three.txt', offset: 9 });
    expect(result.isError).toBe(true);
    expect(result.content).toBe('offset 9 is past the end of three.txt, which has 3 lines.');
  });

  it('reads ranges through the file-access seam with line and limit', async () => {
    await writeFile(join(test.cwd, 'seam.txt'), numbered(20));
    const calls: unknown[] = [];
    const files: FileAccess = {
      async readText(input) {
        calls.push(input);
        return 'editor 5\neditor 6\n';
      },
      async writeText() {},
    };
    const seamTest = await createTestToolContext({ cwd: test.cwd, files });
    const result = await seamTest.run(readFileTool, { path: 'seam.txt', offset: 5, limit: 2 });
    expect(calls).toEqual([
      { sessionId: 'session_test', callId: 'call_test', path: join(test.cwd, 'seam.txt'), line: 5, limit: 2 },
    ]);
    expect(result.content).toBe(
      '     5|editor 5\n     6|editor 6\n[Showing lines 5–6 of 20. Use offset=7 to continue.]',
    );
    await seamTest.cleanup();
  });

  it('expands ~ to the home directory and shows paths outside the cwd as absolute', async () => {
    await writeFile(join(test.home, 'notes.txt'), 'home note\n');
    const result = await test.run(readFileTool, { path: '~/notes.txt' });
    expect(result.content).toBe('     1|home note');
    expect(result.structured).toMatchObject({ path: join(test.home, 'notes.txt') });
  });
});

describe('write_file', () => {
  it('updates a file with a unified diff, keeps its mode and reports old and new text', async () => {
    const path = join(test.cwd, 'run.sh');
    await writeFile(path, '#!/bin/sh\necho old\n');
    await chmod(path, 0o755);
    const result = await test.run(writeFileTool, { path: 'run.sh', content: '#!/bin/sh\necho new\n' });
    expect(result.content).toBe(
      [
        'Updated run.sh (2 lines)',
        '',
        '--- a/run.sh',
        '+++ b/run.sh',
        '@@ -1,2 +1,2 @@',
        ' #!/bin/sh',
        '-echo old',
        '+echo new',
        '',
      ].join('\n'),
    );
    expect((await stat(path)).mode & 0o777).toBe(0o755);
    expect(result.diffs?.[0]).toMatchObject({ oldText: '#!/bin/sh\necho old\n', newText: '#!/bin/sh\necho new\n' });
    expect(result.structured).toEqual({ path: 'run.sh', created: false, bytes: 19 });
  });

  it('caps the diff in the text at 20,000 characters and leaves full texts out of a FileDiff over 1 MiB', async () => {
    const path = join(test.cwd, 'huge.txt');
    const oldText = Array.from({ length: 60_000 }, (_, index) => `old line ${index}`).join('\n');
    await writeFile(path, oldText);
    const newText = Array.from({ length: 80_000 }, (_, index) => `new line ${index}`).join('\n');
    const result = await test.run(writeFileTool, { path: 'huge.txt', content: newText });
    expect(result.content.length).toBeLessThan(20_200);
    expect(result.content).toMatch(/\[diff cut at 20000 of \d+ characters\]$/);
    const diff = result.diffs?.[0];
    expect(diff?.truncated).toBe(true);
    expect(diff?.newText).toBe('');
    expect(diff?.unified.length).toBeGreaterThan(1_000_000);
  });

  it('says when nothing changed', async () => {
    await writeFile(join(test.cwd, 'same.txt'), 'same\n');
    const result = await test.run(writeFileTool, { path: 'same.txt', content: 'same\n' });
    expect(result.content).toBe('Updated same.txt (1 line)\n\nNo changes: the new content is identical.');
  });
});

describe('patch', () => {
  const file = () => join(test.cwd, 'code.py');

  it('matches with line endings normalized and keeps CRLF', async () => {
    await writeFile(file(), 'def f():\r\n    return 1\r\n');
    const result = await test.run(patchTool, {
      path: 'code.py',
      old_string: 'def f():\n    return 1\n',
      new_string: 'def f():\n    return 2\n',
    });
    expect(result.structured).toEqual({ path: 'code.py', replacements: 1, strategy: 'line_endings' });
    expect(await readFile(file(), 'utf8')).toBe('def f():\r\n    return 2\r\n');
  });

  it('ignores trailing whitespace per line', async () => {
    await writeFile(file(), 'a = 1   \nb = 2\t\nc = 3\n');
    const result = await test.run(patchTool, {
      path: 'code.py',
      old_string: 'a = 1\nb = 2',
      new_string: 'a = 10\nb = 20',
    });
    expect(result.structured).toEqual({ path: 'code.py', replacements: 1, strategy: 'trailing_whitespace' });
    expect(await readFile(file(), 'utf8')).toBe('a = 10\nb = 20\nc = 3\n');
  });

  it('ignores indentation per line and re-indents the replacement by the same offset', async () => {
    await writeFile(file(), 'class A:\n    def f(self):\n        if x:\n            return 1\n');
    const result = await test.run(patchTool, {
      path: 'code.py',
      old_string: 'if x:\n    return 1',
      new_string: 'if x:\n    log()\n    return 2',
    });
    expect(result.structured).toEqual({ path: 'code.py', replacements: 1, strategy: 'indentation' });
    expect(await readFile(file(), 'utf8')).toBe(
      'class A:\n    def f(self):\n        if x:\n            log()\n            return 2\n',
    );
  });

  it('prefers the exact strategy over looser ones', async () => {
    await writeFile(file(), 'x = 1\n  x = 1\n');
    const result = await test.run(patchTool, { path: 'code.py', old_string: '  x = 1', new_string: '  x = 2' });
    expect(result.structured).toEqual({ path: 'code.py', replacements: 1, strategy: 'exact' });
    expect(await readFile(file(), 'utf8')).toBe('x = 1\n  x = 2\n');
  });

  it('replaces every match with replace_all', async () => {
    await writeFile(file(), 'n = 1\nm = n\nprint(n)\n');
    const result = await test.run(patchTool, {
      path: 'code.py',
      old_string: 'n)',
      new_string: 'count)',
      replace_all: true,
    });
    expect(result.content.startsWith('Patched code.py: 1 replacement')).toBe(true);
    const all = await test.run(patchTool, {
      path: 'code.py',
      old_string: 'n = 1',
      new_string: 'count = 1',
      replace_all: true,
    });
    expect(all.structured).toMatchObject({ replacements: 1 });
    await writeFile(file(), 'v\nv\nv\n');
    const three = await test.run(patchTool, { path: 'code.py', old_string: 'v', new_string: 'w', replace_all: true });
    expect(three.content.startsWith('Patched code.py: 3 replacements')).toBe(true);
    expect(await readFile(file(), 'utf8')).toBe('w\nw\nw\n');
  });

  it('returns up to three close candidates with line numbers when nothing matches, file untouched', async () => {
    const content =
      'def load(path):\n    return open(path).read()\n\ndef save(path, data):\n    open(path, "w").write(data)\n';
    await writeFile(file(), content);
    const result = await test.run(patchTool, {
      path: 'code.py',
      old_string: 'def load(file):\n    return open(file).read()',
      new_string: 'x',
    });
    expect(result.isError).toBe(true);
    expect(result.content).toContain('old_string was not found in code.py.');
    expect(result.content).toContain('Lines 1–2 (');
    expect(result.content).toContain('     1|def load(path):');
    expect(await readFile(file(), 'utf8')).toBe(content);
  });

  it('rejects an empty old_string and identical strings', async () => {
    await writeFile(file(), 'a\n');
    const empty = await test.run(patchTool, { path: 'code.py', old_string: '', new_string: 'b' });
    expect(empty.isError).toBe(true);
    expect(empty.content).toContain('old_string is empty');
    const same = await test.run(patchTool, { path: 'code.py', old_string: 'a', new_string: 'a' });
    expect(same.isError).toBe(true);
    expect(same.content).toContain('identical');
    expect(await readFile(file(), 'utf8')).toBe('a\n');
  });
});

describe('paths outside the cwd and the write denylist', () => {
  it('reads and writes a path outside the cwd given as ../x (no sandbox in v1)', async () => {
    const outside = join(test.cwd, '..', `outside-${relative('/', test.cwd).replace(/\//g, '_')}.txt`);
    const relativePath = relative(test.cwd, outside);
    expect(relativePath.startsWith('../')).toBe(true);
    const written = await test.run(writeFileTool, { path: relativePath, content: 'outside\n' });
    expect(written.content).toBe(`Created ${outside} (1 line)`);
    const read = await test.run(readFileTool, { path: relativePath });
    expect(read.content).toBe('     1|outside');
    await import('node:fs/promises').then((fs) => fs.rm(outside));
  });

  it('reads and writes an absolute path outside the cwd, shown absolute', async () => {
    const outside = join(test.home, 'absolute.txt');
    const written = await test.run(writeFileTool, { path: outside, content: 'x\n' });
    expect(written.content).toBe(`Created ${outside} (1 line)`);
    expect((await test.run(readFileTool, { path: outside })).content).toBe('     1|x');
  });

  it('follows a symbolic link pointing outside the cwd for reading and writing', async () => {
    await writeFile(join(test.home, 'target.txt'), 'before\n');
    await symlink(join(test.home, 'target.txt'), join(test.cwd, 'link.txt'));
    expect((await test.run(readFileTool, { path: 'link.txt' })).content).toBe('     1|before');
    const patched = await test.run(patchTool, { path: 'link.txt', old_string: 'before', new_string: 'after' });
    expect(patched.content.startsWith('Patched link.txt: 1 replacement')).toBe(true);
    expect(await readFile(join(test.home, 'target.txt'), 'utf8')).toBe('after\n');
  });

  it('refuses ~/.ssh/** given as ~/, as an absolute path, as ../ and through a symbolic link', async () => {
    await mkdir(join(test.home, '.ssh'));
    const keys = join(test.home, '.ssh', 'authorized_keys');
    await writeFile(keys, 'original\n');
    await symlink(join(test.home, '.ssh'), join(test.cwd, 'innocent'));
    await symlink(keys, join(test.cwd, 'keys-link'));
    for (const path of [
      '~/.ssh/authorized_keys',
      keys,
      relative(test.cwd, keys),
      'innocent/authorized_keys',
      'keys-link',
    ]) {
      const written = await test.run(writeFileTool, { path, content: 'attacker\n' });
      expect(written.isError, path).toBe(true);
      expect(written.content).toContain('matches file.write_denylist (~/.ssh/**)');
      const patched = await test.run(patchTool, { path, old_string: 'original', new_string: 'attacker' });
      expect(patched.isError, path).toBe(true);
      expect(patched.content).toContain('file.write_denylist');
    }
    const created = await test.run(writeFileTool, { path: 'innocent/new_key', content: 'x' });
    expect(created.isError).toBe(true);
    expect(await readFile(keys, 'utf8')).toBe('original\n');
  });

  it('refuses a dangling symbolic link whose target is denied', async () => {
    await symlink(join(test.home, '.ssh', 'config'), join(test.cwd, 'dangling'));
    const result = await test.run(writeFileTool, { path: 'dangling', content: 'x' });
    expect(result.isError).toBe(true);
    expect(result.content).toContain('file.write_denylist');
  });

  it('applies /etc/** and custom globs, and reads denied paths', async () => {
    const etc = await test.run(writeFileTool, { path: '/etc/hermes-test-never-written', content: 'x' });
    expect(etc.isError).toBe(true);
    expect(etc.content).toContain('(/etc/**)');
    const custom = await createTestToolContext({ settings: { writeDenylist: ['secrets/*.key'] } });
    await mkdir(join(custom.cwd, 'secrets'));
    await writeFile(join(custom.cwd, 'secrets', 'a.key'), 'k\n');
    const refused = await custom.run(writeFileTool, { path: 'secrets/a.key', content: 'x' });
    expect(refused.isError).toBe(true);
    expect((await custom.run(readFileTool, { path: 'secrets/a.key' })).content).toBe('     1|k');
    expect((await custom.run(writeFileTool, { path: 'secrets/a.pub', content: 'x' })).isError).toBeUndefined();
    await custom.cleanup();
  });
});
