import { describe, expect, it } from 'vitest';
import { WireOrder } from './wire-order.js';

const promptLine = (id: unknown) => ({ jsonrpc: '2.0', id, method: 'session/prompt', params: { sessionId: 's' } });
const cancelLine = (sessionId = 's') => ({ jsonrpc: '2.0', method: 'session/cancel', params: { sessionId } });

describe('WireOrder', () => {
  it('numbers prompts and cancels in the order they are read, whatever order handlers ask in', () => {
    const wire = new WireOrder();
    expect(wire.observe(promptLine(1))).toBeNull();
    const cancel = wire.observe(cancelLine());
    expect(wire.observe(promptLine('two'))).toBeNull();
    // The handler of the later prompt asks first; the numbers still follow the wire.
    const second = wire.takePrompt('two');
    const first = wire.takePrompt(1);
    expect(cancel?.cancel.sessionId).toBe('s');
    expect(first).toBeLessThan(cancel?.cancel.seq ?? 0);
    expect(second).toBeGreaterThan(cancel?.cancel.seq ?? 0);
  });

  it('a prompt or cancel that bypassed the observer gets a number later than everything read', () => {
    const wire = new WireOrder();
    const cancel = wire.observe(cancelLine())?.cancel.seq ?? 0;
    expect(wire.takePrompt(99)).toBeGreaterThan(cancel);
    expect(wire.takeAppliedCancel('s')).toBe(true);
    expect(wire.takeAppliedCancel('s')).toBe(false);
    expect(wire.takeAppliedCancel('other')).toBe(false);
  });

  it('ignores responses, other methods, batches and cancels without a session id', () => {
    const wire = new WireOrder();
    expect(wire.observe({ jsonrpc: '2.0', id: 1, result: {} })).toBeNull();
    expect(wire.observe({ jsonrpc: '2.0', id: 2, method: 'session/new', params: {} })).toBeNull();
    expect(wire.observe([cancelLine()])).toBeNull();
    expect(wire.observe({ jsonrpc: '2.0', method: 'session/cancel', params: {} })).toBeNull();
    expect(wire.takeAppliedCancel('s')).toBe(false);
  });
});
