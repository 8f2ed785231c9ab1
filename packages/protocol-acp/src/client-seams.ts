import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import {
  type AgentContext,
  type CreateTerminalResponse,
  RequestError,
  type TerminalOutputResponse,
  type WaitForTerminalExitResponse,
} from '@agentclientprotocol/sdk/unstable';
import type { CommandRunner, FileAccess, RunningCommand } from '@hermes/core';
import type { AcpSession, TerminalRecord } from './acp-session.js';

/** The client capabilities that select the seams (spec/acp.md §12.1). */
export interface ClientSeamCapabilities {
  readTextFile: boolean;
  writeTextFile: boolean;
  terminal: boolean;
}

/** What the seams need from the connection. */
export interface SeamContext {
  capabilities: () => ClientSeamCapabilities;
  client: () => AgentContext;
  session: (sessionId: string) => AcpSession | undefined;
}

function notFound(path: string): Error {
  return Object.assign(new Error(`File not found: ${path}`), { code: 'ENOENT' });
}

/** A missing file in the text of a generic client error: Node's errno name or its message. */
const MISSING_FILE_TEXT = /\bENOENT\b|no such file or directory/i;

/**
 * True when a client's error answer to `fs/read_text_file` means the file does not exist: `-32002`
 * (resource not found), or a generic error whose message or data names ENOENT, which is how a
 * client answers when its handler lets the file system's error escape (acpx before 0.19, and any
 * client on the SDK's default error mapping: `-32603` with `data.details` holding the message).
 */
export function isMissingFileError(error: unknown): boolean {
  if (!(error instanceof RequestError)) return false;
  if (error.code === -32002) return true;
  if (error.code !== -32603) return false;
  let data = '';
  try {
    data = JSON.stringify(error.data ?? null);
  } catch {
    data = '';
  }
  return MISSING_FILE_TEXT.test(error.message) || MISSING_FILE_TEXT.test(data);
}

/**
 * The per-connection file-access seam (§12.2): reads and writes go to the client when it
 * advertises `fs`, otherwise to `local` (the core's disk access); edit approval happens before
 * every write.
 */
export function createClientFileAccess(context: SeamContext, local: FileAccess): FileAccess {
  const read: FileAccess['readText'] = async (input) => {
    if (!context.capabilities().readTextFile) return local.readText(input);
    const signal = context.session(input.sessionId)?.currentTurn?.controller.signal;
    try {
      const response = await context.client().request(
        'fs/read_text_file',
        {
          sessionId: input.sessionId,
          path: input.path,
          ...(input.line !== undefined ? { line: input.line } : {}),
          ...(input.limit !== undefined ? { limit: input.limit } : {}),
        },
        signal ? { cancellationSignal: signal, stopWaitingOnCancel: true } : {},
      );
      return response.content;
    } catch (error) {
      if (isMissingFileError(error)) throw notFound(input.path);
      throw error instanceof Error ? error : new Error(String(error));
    }
  };
  return {
    readText: read,
    async writeText(input) {
      const session = context.session(input.sessionId);
      if (session) {
        let oldText: string | null;
        try {
          oldText = await read({ sessionId: input.sessionId, callId: input.callId, path: input.path });
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
          oldText = null;
        }
        await session.approveEdit({ callId: input.callId, path: input.path, oldText, newText: input.content });
      }
      if (!context.capabilities().writeTextFile) return local.writeText(input);
      const signal = session?.currentTurn?.controller.signal;
      await context
        .client()
        .request(
          'fs/write_text_file',
          { sessionId: input.sessionId, path: input.path, content: input.content },
          signal ? { cancellationSignal: signal, stopWaitingOnCancel: true } : {},
        );
    },
  };
}

function hasBash(): boolean {
  return (process.env.PATH ?? '')
    .split(delimiter)
    .some((directory) => directory && existsSync(join(directory, 'bash')));
}

/**
 * The per-connection command-runner seam (§12.3): foreground commands run in client terminals
 * when the client advertises `terminal`, otherwise with `local` (the core's local runner).
 */
export function createClientCommandRunner(context: SeamContext, local: CommandRunner): CommandRunner {
  const shell = hasBash() ? 'bash' : 'sh';
  return {
    async start(input): Promise<RunningCommand> {
      const session = context.session(input.sessionId);
      const turn = session?.currentTurn;
      if (!context.capabilities().terminal || !session || !turn) return local.start(input);
      const client = context.client();
      const turnSignal = turn.controller.signal;
      // Only what the core adds for the command, never the agent's own environment (§12.3).
      const env = Object.entries(input.env)
        .filter(([name, value]) => process.env[name] !== value)
        .map(([name, value]) => ({ name, value }));
      const created = await client.request<CreateTerminalResponse>(
        'terminal/create',
        {
          sessionId: input.sessionId,
          command: shell,
          args: ['-c', input.command],
          env,
          cwd: input.cwd,
          outputByteLimit: input.outputByteLimit,
        },
        { cancellationSignal: turnSignal, stopWaitingOnCancel: true },
      );
      const terminalId = created.terminalId;
      const ids = { sessionId: input.sessionId, terminalId };
      let output = { text: '', truncated: false };
      let killed = false;
      const record: TerminalRecord = {
        terminalId,
        callId: input.callId,
        released: false,
        async kill() {
          if (killed || record.released) return;
          killed = true;
          // Clean-up requests never carry the turn's signal (§7.1).
          await client.request('terminal/kill', ids);
        },
        async release() {
          if (record.released) return;
          record.released = true;
          turn.terminals.delete(record);
          await client.request('terminal/release', ids);
        },
      };
      turn.terminals.add(record);
      session.attachTerminal(turn, input.callId, terminalId);
      const fetchOutput = async () => {
        const response = await client.request<TerminalOutputResponse>('terminal/output', ids);
        output = { text: response.output, truncated: response.truncated };
      };
      return {
        pid: null,
        async wait({ timeoutMs, signal }) {
          const waitController = new AbortController();
          const waitSignal = AbortSignal.any([signal, turnSignal, waitController.signal]);
          const exit = client
            .request<WaitForTerminalExitResponse>('terminal/wait_for_exit', ids, {
              cancellationSignal: waitSignal,
              stopWaitingOnCancel: true,
            })
            .then((status) => ({ kind: 'exit' as const, status }))
            .catch(() => ({ kind: 'aborted' as const }));
          let timer: NodeJS.Timeout | undefined;
          const timeout = new Promise<{ kind: 'timeout' }>((resolve) => {
            timer = setTimeout(() => resolve({ kind: 'timeout' }), timeoutMs);
          });
          const aborted = new Promise<{ kind: 'aborted' }>((resolve) => {
            if (waitSignal.aborted) resolve({ kind: 'aborted' });
            waitSignal.addEventListener('abort', () => resolve({ kind: 'aborted' }), { once: true });
          });
          const outcome = await Promise.race([exit, timeout, aborted]);
          clearTimeout(timer);
          if (outcome.kind === 'exit') {
            await fetchOutput().catch(() => {});
            return {
              exitCode: outcome.status.exitCode ?? null,
              signal: outcome.status.signal ?? null,
              timedOut: false,
              cancelled: false,
            };
          }
          waitController.abort();
          await record.kill().catch(() => {});
          if (outcome.kind === 'timeout') {
            await fetchOutput().catch(() => {});
            return { exitCode: null, signal: null, timedOut: true, cancelled: false };
          }
          return { exitCode: null, signal: null, timedOut: false, cancelled: true };
        },
        output: () => output,
        kill: () => record.kill(),
        async release() {
          // Held until the call's completion update has been written (§12.3).
          if (!record.released) turn.pendingReleases.set(input.callId, record);
        },
      };
    },
  };
}
