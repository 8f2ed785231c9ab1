import { describe, expect, it } from 'vitest';
import { DEFAULT_SERVER_V8_FLAGS, SERVER_V8_FLAGS, serverHeapFlags } from './heap-settings.js';

// What the flags do to the peak is shown by test/backpressure.test.ts against the real server; here, which are chosen
// (`serverHeapFlags` sets nothing: a flag set would change this test process's own heap).
describe('the server heap settings (ADR 0069, ADR 0078, ADR 0091)', () => {
  it('are not set when the operator sized the heap on the node command line or in NODE_OPTIONS', () => {
    for (const env of [{}, { HERMES_V8_HEAP: 'small' }]) {
      expect(serverHeapFlags(env, ['--max-semi-space-size=8'])).toEqual([]);
      expect(serverHeapFlags(env, ['--optimize-for-size'])).toEqual([]);
      expect(serverHeapFlags(env, ['--no-optimize-for-size'])).toEqual([]);
      expect(serverHeapFlags(env, ['--heap-growing-percent=50'])).toEqual([]);
      expect(serverHeapFlags({ ...env, NODE_OPTIONS: '--inspect --max_semi_space_size=4' }, [])).toEqual([]);
    }
  });

  it("keep the young generation small by default, add the old generation's small growth and --optimize-for-size with small, and set nothing with node", () => {
    expect(serverHeapFlags({}, [])).toEqual(DEFAULT_SERVER_V8_FLAGS);
    expect(serverHeapFlags({ NODE_OPTIONS: '--inspect=127.0.0.1:0' }, [])).toEqual(['--semi-space-growth-factor=1']);
    expect(SERVER_V8_FLAGS).toEqual(
      expect.arrayContaining([...DEFAULT_SERVER_V8_FLAGS, '--heap-growing-percent=10', '--optimize-for-size']),
    );
    expect(serverHeapFlags({ HERMES_V8_HEAP: 'small' }, [])).toEqual(SERVER_V8_FLAGS);
    expect(serverHeapFlags({ HERMES_V8_HEAP: 'node' }, [])).toEqual([]);
  });
});
