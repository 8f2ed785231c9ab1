import { z } from 'zod';
import { sleep } from './client.js';

/** A quick tool with no side effects. */
export const noopTool = {
  name: 'noop',
  description: 'does nothing',
  inputSchema: z.object({}).passthrough(),
  toolset: 'test',
  kind: 'other' as const,
  readOnly: true,
  async execute() {
    return { content: '{"ok":true}' };
  },
} as never;

/** A tool that waits for `ms` and ignores interrupts while it waits. */
export function stubbornTool(name: string, ms: number) {
  return {
    name,
    description: 'blocks',
    inputSchema: z.object({}).passthrough(),
    toolset: 'test',
    kind: 'other' as const,
    readOnly: true,
    async execute() {
      await sleep(ms);
      return { content: 'unblocked' };
    },
  } as never;
}
