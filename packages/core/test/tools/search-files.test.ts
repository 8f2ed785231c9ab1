import { execFileSync } from 'node:child_process';
import { mkdir, symlink, utimes, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findRipgrep } from '../../src/tools/ripgrep-path.js';
import { createSearchFilesTool, type SearchFilesArgs } from '../../src/tools/search-files.js';
import { createTestToolContext, type TestToolContext } from './context.js';

// The core ships ripgrep (`@vscode/ripgrep`), so the comparison below runs on every supported platform.
const ripgrepPath = await findRipgrep(process.env.PATH);
const withRipgrep = createSearchFilesTool({ ripgrep: ripgrepPath ?? false });
const withWalker = createSearchFilesTool({ ripgrep: false });

let test: TestToolContext;

/** A tree with every case where the two engines could disagree. */
const FILES: Record<string, string | Buffer> = {
  '.gitignore': 'build/\n*.log\n!keep.log\n/rootonly.txt\n',
  '.ignore': '!build/\nhidden-by-dot-ignore/\n',
  'a.txt': 'foo one\nbar\nFOO two\nbaz\nqux\nfoo three\n',
  'b.md': '# Title\nno match here\n',
  'build/x.js': 'const foo = 1;\n',
  'keep.log': 'foo kept\n',
  'other.log': 'foo ignored\n',
  'rootonly.txt': 'foo ignored at the root\n',
  'sub/rootonly.txt': 'foo kept below the root\n',
  'sub/.gitignore': 'local.txt\nunignored.txt\n',
  'sub/.ignore': '!unignored.txt\n',
  'sub/local.txt': 'foo ignored locally\n',
  'sub/unignored.txt': 'foo re-included by .ignore\n',
  'sub/deep/c.txt': 'line 1\nline 2\nfoo deep\nline 4\nline 5\nline 6\nline 7\nfoo again\nline 9\n',
  'sub/deep/d.log': 'foo ignored by the parent .gitignore\n',
  '.hidden/h.txt': 'foo hidden but searched\n',
  '.git/config': 'foo in git\n',
  'hidden-by-dot-ignore/z.txt': 'foo\n',
  'bin.dat': Buffer.from('foo\0bar\n'),
  'late-binary.txt': Buffer.concat([
    Buffer.from('foo early\n'.repeat(3)),
    Buffer.from('x'.repeat(100_000)),
    Buffer.from([0]),
  ]),
  'crlf.txt': 'foo crlf\r\nbar\r\nfoo$\r\n',
  'bom.txt': Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('foo after bom\n')]),
  'utf16.txt': Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('foo in utf16\nsecond\n', 'utf16le')]),
  'long.txt': `foo ${'y'.repeat(800)}\n`,
  'unicode.txt': 'naïve foo café\n',
};

beforeAll(async () => {
  test = await createTestToolContext();
  let time = 1_700_000_000;
  for (const [path, content] of Object.entries(FILES)) {
    const absolute = join(test.cwd, path);
    await mkdir(dirname(absolute), { recursive: true });
    await writeFile(absolute, content);
    // Distinct modification times make the order of file results deterministic.
    time += 10;
    await utimes(absolute, time, time);
  }
  await symlink(join(test.cwd, 'a.txt'), join(test.cwd, 'link.txt'));
  await symlink(join(test.cwd, 'sub'), join(test.cwd, 'linked-dir'));
});

afterAll(async () => {
  await test.cleanup();
});

const CASES: [string, SearchFilesArgs][] = [
  ['content', { pattern: 'foo' }],
  ['content, ignore_case', { pattern: 'foo', ignore_case: true }],
  ['content with context 1', { pattern: 'foo', context: 1 }],
  ['content with context 2 in a subdirectory', { pattern: 'foo', context: 2, path: 'sub' }],
  ['content, basename file_glob', { pattern: 'foo', file_glob: '*.txt' }],
  ['content, path file_glob', { pattern: 'foo', file_glob: 'sub/**/*.txt' }],
  ['content, brace file_glob', { pattern: 'foo', file_glob: '*.{js,log}' }],
  ['content, one file', { pattern: 'foo', path: 'sub/deep/c.txt' }],
  ['content, regex', { pattern: '^foo\\s\\w+$' }],
  ['content, dollar at a CRLF line end', { pattern: 'foo\\$$' }],
  ['content, unicode', { pattern: 'caf.' }],
  ['content, paged', { pattern: 'foo', limit: 3, offset: 2 }],
  ['content, no match', { pattern: 'zzz_nothing' }],
  ['files_only', { pattern: 'foo', output_mode: 'files_only' }],
  ['files_only, paged', { pattern: 'foo', output_mode: 'files_only', limit: 2, offset: 1 }],
  ['count', { pattern: 'foo', output_mode: 'count' }],
  ['count, ignore_case', { pattern: 'foo', output_mode: 'count', ignore_case: true }],
  ['files by glob', { pattern: '*.txt', target: 'files' }],
  ['files by substring', { pattern: 'ROOT', target: 'files' }],
  ['files by path glob', { pattern: 'sub/**', target: 'files' }],
  ['files in a subdirectory', { pattern: '*', target: 'files', path: 'sub' }],
  ['files, paged', { pattern: '*', target: 'files', limit: 4, offset: 3 }],
  ['files, none', { pattern: 'nothing-like-this', target: 'files' }],
];

describe('search_files', () => {
  it('finds the ripgrep shipped with the core even when PATH has none', async () => {
    const shipped = await findRipgrep('');
    expect(shipped).not.toBeNull();
    expect(shipped).toBe(ripgrepPath);
    expect(execFileSync(shipped as string, ['--version'], { encoding: 'utf8' })).toMatch(/^ripgrep \d+\./);
  });

  it.each(CASES)(
    '31. search_files returns identical results with ripgrep and with the built-in walker: %s',
    async (_name, args) => {
      const fromRipgrep = await test.run(withRipgrep, args);
      const fromWalker = await test.run(withWalker, args);
      expect(fromRipgrep.isError).toBeUndefined();
      expect(fromWalker).toEqual(fromRipgrep);
    },
  );

  it('content results are path:line:text sorted by path then line, honouring the ignore files', async () => {
    const result = await test.run(withWalker, { pattern: 'foo' });
    expect(result.content).toBe(
      [
        '.hidden/h.txt:1:foo hidden but searched',
        'a.txt:1:foo one',
        'a.txt:6:foo three',
        'bom.txt:1:foo after bom',
        'build/x.js:1:const foo = 1;',
        'crlf.txt:1:foo crlf',
        'crlf.txt:3:foo$',
        'keep.log:1:foo kept',
        `long.txt:1:foo ${'y'.repeat(496)}… [line cut: 804 characters]`,
        'sub/deep/c.txt:3:foo deep',
        'sub/deep/c.txt:8:foo again',
        'sub/rootonly.txt:1:foo kept below the root',
        'sub/unignored.txt:1:foo re-included by .ignore',
        'unicode.txt:1:naïve foo café',
        'utf16.txt:1:foo in utf16',
      ].join('\n'),
    );
    expect(result.structured).toEqual({ total: 15, returned: 15, offset: 0, truncated: false });
  });

  it('shows context lines as path-line-text with -- between blocks', async () => {
    const result = await test.run(withWalker, { pattern: 'foo', context: 1, path: 'sub/deep' });
    expect(result.content).toBe(
      [
        'sub/deep/c.txt-2-line 2',
        'sub/deep/c.txt:3:foo deep',
        'sub/deep/c.txt-4-line 4',
        '--',
        'sub/deep/c.txt-7-line 7',
        'sub/deep/c.txt:8:foo again',
        'sub/deep/c.txt-9-line 9',
      ].join('\n'),
    );
  });

  it('pages with a footer naming the next offset', async () => {
    const result = await test.run(withWalker, { pattern: 'foo', limit: 2 });
    expect(result.content.split('\n')).toEqual([
      '.hidden/h.txt:1:foo hidden but searched',
      'a.txt:1:foo one',
      '[13 more results; use offset=2]',
    ]);
    expect(result.structured).toEqual({ total: 15, returned: 2, offset: 0, truncated: true });
  });

  it('counts matching lines per file', async () => {
    const result = await test.run(withWalker, { pattern: 'foo', output_mode: 'count', path: 'sub' });
    expect(result.content).toBe(['sub/deep/c.txt:2', 'sub/rootonly.txt:1', 'sub/unignored.txt:1'].join('\n'));
  });

  it('lists files newest first for target files', async () => {
    const result = await test.run(withWalker, { pattern: '*.txt', target: 'files', path: 'sub' });
    expect(result.content).toBe(['sub/deep/c.txt', 'sub/unignored.txt', 'sub/rootonly.txt'].join('\n'));
  });

  it('rejects look-around and invalid patterns in both engines', async () => {
    for (const tool of [withRipgrep, withWalker]) {
      const lookAround = await test.run(tool, { pattern: 'foo(?=bar)' });
      expect(lookAround.isError).toBe(true);
      expect(lookAround.content).toContain('look-around');
      const invalid = await test.run(tool, { pattern: 'foo(' });
      expect(invalid.isError).toBe(true);
      expect(invalid.content).toMatch(/^Invalid regular expression/);
    }
  });

  it('reports a missing path', async () => {
    const result = await test.run(withWalker, { pattern: 'x', path: 'missing-dir' });
    expect(result).toEqual({ content: 'Path not found: missing-dir', isError: true });
  });
});
