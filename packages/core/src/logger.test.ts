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
});
