import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createStderrLogger, redactSecrets } from './logger.js';

describe('logging (spec/core.md §20)', () => {
  it('redacts known secret values and common key shapes', () => {
    const text = 'key sk-abcdefghijklmnop and Authorization: Bearer abc.def-ghi_jkl and hunter2-secret-value';
    const redacted = redactSecrets(text, ['hunter2-secret-value']);
    expect(redacted).not.toContain('sk-abcdefghijklmnop');
    expect(redacted).not.toContain('abc.def-ghi_jkl');
    expect(redacted).not.toContain('hunter2-secret-value');
    expect(redacted.match(/\[redacted\]/g)).toHaveLength(3);
  });

  it('the default logger writes warnings and errors only, one redacted line each, never to stdout', () => {
    const lines: string[] = [];
    const logger = createStderrLogger({ write: (line) => lines.push(line), secrets: () => ['my-secret-token'] });
    logger.debug('hidden');
    logger.info('hidden too');
    logger.warn('provider failed with my-secret-token', { attempt: 2 });
    logger.error('boom');
    expect(lines).toEqual(['[hermes] warn: provider failed with [redacted] {"attempt":2}\n', '[hermes] error: boom\n']);
  });

  describe('the default stderr writer, asynchronous (docs/adr/0019)', () => {
    // The built entry, in a process of its own: what is left in the buffer when it ends is the point.
    const entry = fileURLToPath(new URL('../dist/logger.js', import.meta.url));
    const run = (body: string) =>
      spawnSync(
        process.execPath,
        [
          '--input-type=module',
          '-e',
          `const { createStderrLogger } = await import(${JSON.stringify(entry)}); const logger = createStderrLogger(); ${body}`,
        ],
        { encoding: 'utf8' },
      );
    const logged = (stderr: string) => stderr.split('\n').filter((line) => line.startsWith('[hermes]'));

    it('keeps every line when the process exits right after logging, and never writes to stdout', () => {
      const child = run("for (let i = 0; i < 5000; i += 1) logger.warn('line ' + i); process.exit(3);");
      expect(child.status).toBe(3);
      expect(child.stdout).toBe('');
      const lines = logged(child.stderr);
      expect(lines).toHaveLength(5000);
      expect(lines.at(-1)).toBe('[hermes] warn: line 4999');
    });

    it('keeps the last lines when the process crashes on an uncaught exception', () => {
      const child = run("logger.error('before the crash'); logger.warn('last words'); throw new Error('crash');");
      expect(child.status).toBe(1);
      expect(child.stderr).toContain('Error: crash');
      expect(logged(child.stderr)).toEqual(['[hermes] error: before the crash', '[hermes] warn: last words']);
    });

    it('keeps them on a natural end as well', () => {
      const child = run("logger.warn('one'); setTimeout(() => logger.error('two'), 10);");
      expect(child.status).toBe(0);
      expect(logged(child.stderr)).toEqual(['[hermes] warn: one', '[hermes] error: two']);
    });
  });
});
