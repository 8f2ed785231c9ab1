import { describe, expect, it } from 'vitest';
import { cliHeapFlags } from './heap-settings.js';

// Which flags are chosen; what they do to peak RSS is the bench's stream rows (ADR 0078). `cliHeapFlags` sets nothing.
describe('the CLI heap settings (ADR 0078)', () => {
  it('keep the young generation small by default, add --optimize-for-size with small, and set nothing with node', () => {
    expect(cliHeapFlags({}, [])).toEqual(['--semi-space-growth-factor=1']);
    expect(cliHeapFlags({ HERMES_V8_HEAP: 'small' }, [])).toEqual([
      '--semi-space-growth-factor=1',
      '--optimize-for-size',
    ]);
    expect(cliHeapFlags({ HERMES_V8_HEAP: 'node' }, [])).toEqual([]);
  });

  it('are not set when the operator sized the heap on the node command line or in NODE_OPTIONS', () => {
    expect(cliHeapFlags({}, ['--max-semi-space-size=8'])).toEqual([]);
    expect(cliHeapFlags({}, ['--no-optimize-for-size'])).toEqual([]);
    expect(cliHeapFlags({ NODE_OPTIONS: '--inspect --semi_space_growth_factor=2' }, [])).toEqual([]);
  });
});
