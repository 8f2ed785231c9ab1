import { describe, expect, it } from 'vitest';
import { toJSONSchema, type ZodType } from 'zod';
import { builtinTools, defaultToolSettings } from './builtin.js';
import { createToolRegistry } from './registry.js';

const tools = builtinTools();
const byName = new Map(tools.map((tool) => [tool.name, tool]));

describe('builtinTools', () => {
  it('has exactly the v1 tools with their toolsets, kinds and read-only flags (spec §11.1)', () => {
    const table = tools.map((tool) => [
      tool.name,
      tool.toolset,
      typeof tool.kind === 'function' ? 'dynamic' : tool.kind,
      typeof tool.readOnly === 'function' ? 'dynamic' : tool.readOnly,
    ]);
    expect(table).toEqual([
      ['read_file', 'file', 'read', true],
      ['write_file', 'file', 'edit', false],
      ['patch', 'file', 'edit', false],
      ['search_files', 'file', 'search', true],
      ['terminal', 'terminal', 'execute', false],
      ['process', 'terminal', 'dynamic', 'dynamic'],
      ['web_fetch', 'web', 'fetch', true],
      ['clarify', 'interaction', 'other', false],
      ['todo', 'interaction', 'think', 'dynamic'],
      ['delegate_task', 'delegation', 'other', false],
    ]);
    expect(byName.get('clarify')?.interactive).toBe(true);
  });

  it('registers in a registry without conflicts', () => {
    const registry = createToolRegistry();
    for (const tool of tools) registry.register(tool);
    expect(registry.list().map((tool) => tool.name)).toHaveLength(10);
  });

  it('describes every parameter for the model', () => {
    for (const tool of tools) {
      expect(tool.description.length, tool.name).toBeGreaterThan(40);
      const schema = toJSONSchema(tool.inputSchema as ZodType) as {
        properties: Record<string, { description?: string }>;
      };
      for (const [name, property] of Object.entries(schema.properties)) {
        expect(property.description, `${tool.name}.${name}`).toBeTruthy();
      }
    }
  });

  it('tells the model that terminal state does not persist', () => {
    expect(byName.get('terminal')?.description).toContain('cd and exported variables do NOT persist');
  });

  it('gives titles and absolute locations', () => {
    const display = (name: string, args: object) =>
      byName.get(name)?.display?.(args, { cwd: '/work/project', homeDir: '/home/me' });
    expect(display('read_file', { path: 'src/a.ts', offset: 10 })).toEqual({
      title: 'Read src/a.ts (from line 10)',
      locations: [{ path: '/work/project/src/a.ts', line: 10 }],
    });
    expect(display('write_file', { path: '~/notes.md', content: '' })).toEqual({
      title: 'Write /home/me/notes.md',
      locations: [{ path: '/home/me/notes.md' }],
    });
    expect(display('patch', { path: 'a.ts', old_string: 'a', new_string: 'b' })?.title).toBe('Patch a.ts');
    expect(display('search_files', { pattern: 'TODO', path: 'src' })?.title).toBe('Search "TODO" in src');
    expect(display('terminal', { command: 'npm test\nnpm run lint' })).toEqual({ title: 'npm test' });
    expect(display('process', { action: 'poll', process_id: 'proc_1' })?.title).toBe('process poll proc_1');
    expect(display('web_fetch', { url: 'https://example.com' })?.title).toBe('Fetch https://example.com');
    expect(display('todo', {})?.title).toBe('Read the todo list');
    expect(display('delegate_task', { tasks: [{ goal: 'a' }, { goal: 'b' }] })?.title).toBe('Delegate: 2 tasks: a; b');
  });

  it('has the §4.3 defaults', () => {
    expect(defaultToolSettings({ homeDir: '/h' })).toEqual({
      terminalTimeout: 180,
      terminalMaxTimeout: 600,
      writeDenylist: ['~/.ssh/**', '**/.git/objects/**', '/etc/**'],
      webFetchTimeout: 30,
      webMaxBytes: 5_242_880,
      webAllowPrivateHosts: [],
      maxResultChars: 100_000,
      clarifyTimeout: 300,
      maxConcurrentChildren: 3,
      homeDir: '/h',
    });
  });
});
