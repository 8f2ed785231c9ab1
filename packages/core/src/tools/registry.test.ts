import { describe, expect, it } from 'vitest';
import { HermesError } from '../errors.js';
import { createToolRegistry } from './registry.js';
import type { ToolDefinition } from './types.js';

function tool(name: string): ToolDefinition {
  return {
    name,
    description: 'd',
    inputSchema: { type: 'object' },
    toolset: 'mcp',
    kind: 'other',
    readOnly: false,
    execute: async () => ({ content: '' }),
  };
}

describe('createToolRegistry', () => {
  it('registers, gets, lists in order and unregisters', () => {
    const registry = createToolRegistry();
    registry.register(tool('b'));
    registry.register(tool('a'));
    expect(registry.list().map((entry) => entry.name)).toEqual(['b', 'a']);
    expect(registry.get('a')?.name).toBe('a');
    registry.unregister('b');
    expect(registry.list().map((entry) => entry.name)).toEqual(['a']);
    expect(registry.get('b')).toBeUndefined();
  });

  it('throws on a duplicate name', () => {
    const registry = createToolRegistry();
    registry.register(tool('x'));
    expect(() => registry.register(tool('x'))).toThrow(/already registered/);
  });

  it('accepts only ^[A-Za-z0-9_-]{1,64}$', () => {
    const registry = createToolRegistry();
    for (const name of ['', 'a b', 'a.b', 'x'.repeat(65), 'é']) {
      let error: unknown;
      try {
        registry.register(tool(name));
      } catch (caught) {
        error = caught;
      }
      expect(HermesError.isInstance(error), name).toBe(true);
    }
    registry.register(tool(`mcp_server-1_${'x'.repeat(50)}`));
  });
});
