import { describe, expect, it } from 'vitest';
import { unifiedDiff } from './file-diff.js';
import { applyPatchMatches, closestCandidates, findPatchMatches, reindent } from './patch-matching.js';

function patch(content: string, oldString: string, newString: string): { strategy: string; result: string } | null {
  const found = findPatchMatches(content, oldString, newString);
  return found === null ? null : { strategy: found.strategy, result: applyPatchMatches(content, found.matches) };
}

describe('patch matching', () => {
  it('tries exact, line endings, trailing whitespace, then indentation', () => {
    expect(patch('a b c', 'b', 'B')).toEqual({ strategy: 'exact', result: 'a B c' });
    expect(patch('x\r\ny\r\nz', 'x\ny', 'X\nY')).toEqual({ strategy: 'line_endings', result: 'X\r\nY\r\nz' });
    expect(patch('x \ny\t\nz\n', 'x\ny\n', 'X\n')).toEqual({ strategy: 'trailing_whitespace', result: 'X\nz\n' });
    expect(patch('\tif (a) {\n\t\tb();\n\t}\n', 'if (a) {\n\tb();\n}', 'if (a) {\n\tc();\n}')).toEqual({
      strategy: 'indentation',
      result: '\tif (a) {\n\t\tc();\n\t}\n',
    });
    expect(patch('abc', 'xyz', 'q')).toBeNull();
  });

  it('never matches blank-only old strings loosely', () => {
    expect(findPatchMatches('a\n\nb\n', '  \n', 'x')).toBeNull();
  });

  it('re-indents by the offset between the old string and the file', () => {
    expect(reindent('if x:\n    y', '', '        ')).toBe('        if x:\n            y');
    expect(reindent('    if x:\n        y', '    ', '')).toBe('if x:\n    y');
    expect(reindent('    a\n\n    b', '    ', '\t')).toBe('\ta\n\n\tb');
  });

  it('finds close candidates', () => {
    const content = 'function alpha() {\n  return 1;\n}\n\nfunction beta() {\n  return 2;\n}\n';
    const [first] = closestCandidates(content, 'function alpha() {\n  return 10;\n}');
    expect(first?.startLine).toBe(1);
    expect(first?.lines).toEqual(['function alpha() {', '  return 1;', '}']);
    expect(closestCandidates(content, 'zzzzzzzz qqqqqqq')).toEqual([]);
  });
});

describe('unifiedDiff', () => {
  it('uses a/ and b/ headers, 3 lines of context, and /dev/null for created files', async () => {
    const before = `${Array.from({ length: 10 }, (_, index) => `l${index + 1}`).join('\n')}\n`;
    const after = before.replace('l5\n', 'L5\n');
    expect(await unifiedDiff('f.txt', before, after)).toBe(
      [
        '--- a/f.txt',
        '+++ b/f.txt',
        '@@ -2,7 +2,7 @@',
        ' l2',
        ' l3',
        ' l4',
        '-l5',
        '+L5',
        ' l6',
        ' l7',
        ' l8',
        '',
      ].join('\n'),
    );
    expect(await unifiedDiff('n.txt', null, 'x\n')).toBe(
      ['--- /dev/null', '+++ b/n.txt', '@@ -0,0 +1,1 @@', '+x', ''].join('\n'),
    );
    expect(await unifiedDiff('f.txt', 'same', 'same')).toBe('');
  });

  it('falls back to a whole-file hunk when the edit is too large to diff quickly', async () => {
    const before = Array.from({ length: 50_000 }, (_, index) => `old ${index}`).join('\n');
    const after = Array.from({ length: 50_000 }, (_, index) => `new ${index}`).join('\n');
    const diff = await unifiedDiff('big.txt', before, after);
    const lines = diff.split('\n');
    expect(lines.slice(0, 4)).toEqual(['--- a/big.txt', '+++ b/big.txt', '@@ -1,50000 +1,50000 @@', '-old 0']);
    expect(lines).toContain('\\ No newline at end of file');
    expect(lines.filter((line) => line.startsWith('-') && !line.startsWith('---'))).toHaveLength(50_000);
  });
});
