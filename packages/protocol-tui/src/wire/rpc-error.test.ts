import { describe, expect, it } from 'vitest';
import { RpcError } from './rpc-error.js';

describe('RpcError', () => {
  it('is brand-checked and serializes to a JSON-RPC error object', () => {
    const error = new RpcError(4000, 'bad', { unknown_keys: ['x'] });
    expect(RpcError.isInstance(error)).toBe(true);
    expect(RpcError.isInstance(new Error('plain'))).toBe(false);
    expect(RpcError.isInstance({ code: 1 })).toBe(false);
    expect(error.toJSON()).toEqual({ code: 4000, message: 'bad', data: { unknown_keys: ['x'] } });
    expect(new RpcError(-32700, 'parse error').toJSON()).toEqual({ code: -32700, message: 'parse error' });
  });
});
