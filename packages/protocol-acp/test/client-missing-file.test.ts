import { access, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { step, text, toolCall } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { agentRequests, openRun, prompt, requestText, teardown, updatesOf } from './conformance-helpers.js';

afterEach(async (context) => {
  await teardown(context.task.result?.state === 'fail');
});

const FS = { fs: { readTextFile: true, writeTextFile: true } };

describe('a client answering a missing file with a generic ENOENT error (issue 16.3, acpx)', () => {
  for (const missingFile of ['fs-error', 'resource-not-found'] as const) {
    it(`write_file creates a new file when the client answers the read with ${missingFile === 'fs-error' ? '-32603 ENOENT' : '-32002'}`, async () => {
      const run = await openRun({
        script: [
          step(toolCall('write_file', { path: 'src/fresh/new.txt', content: 'brand new\n' })),
          step(toolCall('read_file', { path: 'missing.txt' })),
          step(text('done')),
        ],
        capabilities: FS,
        mode: 'accept-edits',
        missingFile,
      });
      expect((await prompt(run, 'create the file')).stopReason).toBe('end_turn');
      const file = join(run.fixture.project, 'src/fresh/new.txt');

      // The double answered the read of the new file exactly as configured.
      const read = agentRequests(run.agent, 'fs/read_text_file').find(
        (line) => (line.message.params as { path: string }).path === file,
      );
      const answer = run.agent.lines.find(
        (line) => line.from === 'client' && line.message.id === read?.message.id && 'error' in line.message,
      );
      const error = answer?.message.error as { code: number; message: string; data?: { details?: string } };
      if (missingFile === 'fs-error') {
        expect(error.code).toBe(-32603);
        expect(error.data?.details).toMatch(/^ENOENT: no such file or directory/);
      } else {
        expect(error.code).toBe(-32002);
      }

      // The write went to the editor with the whole new text, after the parent folder was made.
      expect(agentRequests(run.agent, 'fs/write_text_file').map((line) => line.message.params)).toEqual([
        { sessionId: run.sessionId, path: file, content: 'brand new\n' },
      ]);
      expect(run.agent.buffers.get(file)).toBe('brand new\n');
      await access(join(run.fixture.project, 'src/fresh'));
      await expect(readFile(file, 'utf8')).rejects.toThrow();
      const writeCall = updatesOf(run.agent, run.sessionId, 'tool_call').find(
        (line) => line.update.name === 'write_file',
      );
      const completion = updatesOf(run.agent, run.sessionId, 'tool_call_update').find(
        (line) => line.update.toolCallId === writeCall?.update.toolCallId && line.update.status,
      );
      expect(completion?.update.status).toBe('completed');
      const diff = completion?.update.content?.[0] as { type: string; oldText: string | null; newText: string };
      expect(diff).toMatchObject({ type: 'diff', oldText: null, newText: 'brand new\n' });

      // A read of a missing file tells the model the file does not exist, not an internal error.
      const toolResult = requestText(run.fixture.server.calls[2] ?? { messages: [] });
      expect(toolResult).toMatch(/not found/i);
      expect(toolResult).not.toContain('Internal error');
    });
  }
});
