import { describe, expect, it } from 'vitest';
import { applyServerHeapSettings } from './heap-settings.js';

// What the flags do to the peak is shown by test/backpressure.test.ts against the real server; here, when they are not
// set. (Only the paths that set nothing run here: a flag set would change this test process's own heap.)
describe('the server heap settings (ADR 0069)', () => {
  it('are not set when the operator sized the heap on the node command line or in NODE_OPTIONS', () => {
    const small = { HERMES_V8_HEAP: 'small' };
    expect(applyServerHeapSettings(small, ['--max-semi-space-size=8'])).toEqual([]);
    expect(applyServerHeapSettings(small, ['--optimize-for-size'])).toEqual([]);
    expect(applyServerHeapSettings(small, ['--no-optimize-for-size'])).toEqual([]);
    expect(applyServerHeapSettings({ ...small, NODE_OPTIONS: '--inspect --max_semi_space_size=4' }, [])).toEqual([]);
  });

  it('are not set without HERMES_V8_HEAP=small', () => {
    expect(applyServerHeapSettings({}, [])).toEqual([]);
    expect(applyServerHeapSettings({ HERMES_V8_HEAP: 'node' }, [])).toEqual([]);
  });
});
