import { fileURLToPath } from 'node:url';
import type { ToolContext, ToolDefinition, ToolResult } from '../../src/tools/types.js';
import type { JsonObject, Logger } from '../../src/types.js';

/** The stdio MCP test server (a plain .mjs, run by `node` without a build). */
export const STDIO_SERVER = fileURLToPath(new URL('../fixtures/mcp/stdio-server.mjs', import.meta.url));
/** A stdio server that writes to stderr and exits with code 3 before any handshake. */
export const CRASH_SERVER = fileURLToPath(new URL('../fixtures/mcp/crash-server.mjs', import.meta.url));
/** A stdio server that never answers; its first argument is a file that receives its pid. */
export const SILENT_SERVER = fileURLToPath(new URL('../fixtures/mcp/silent-server.mjs', import.meta.url));

/** A stdio server configuration running the test server with this Node. */
export function stdioServer(
  extra: Record<string, unknown> = {},
): { command: string; args: string[] } & Record<string, unknown> {
  return { command: process.execPath, args: [STDIO_SERVER], ...extra };
}

/** A logger that keeps every line, so a test can see a server's stderr. */
export function captureLogger(): {
  logger: Logger;
  lines: { level: string; message: string; fields?: JsonObject }[];
  has(text: string): boolean;
} {
  const lines: { level: string; message: string; fields?: JsonObject }[] = [];
  const record =
    (level: string) =>
    (message: string, fields?: JsonObject): void => {
      lines.push(fields === undefined ? { level, message } : { level, message, fields });
    };
  return {
    logger: { debug: record('debug'), info: record('info'), warn: record('warn'), error: record('error') },
    lines,
    has: (text) => lines.some((line) => line.message.includes(text)),
  };
}

/** Runs a tool outside a turn: MCP tools read only the session id and the signal of their context. */
export function runTool(
  tool: ToolDefinition | undefined,
  args: unknown,
  sessionId = 'session-a',
  signal: AbortSignal = new AbortController().signal,
): Promise<ToolResult> {
  if (!tool) throw new Error('no such tool');
  return tool.execute(args, { sessionId, signal } as ToolContext);
}

/** The tool of that name, or undefined. */
export function named(tools: ToolDefinition[], name: string): ToolDefinition | undefined {
  return tools.find((tool) => tool.name === name);
}

/** Whether a process with this pid exists. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Waits until `predicate` holds, checking after each macrotask (bounded by count, not by a timing assertion). */
export async function until(predicate: () => boolean, attempts = 2000): Promise<void> {
  for (let attempt = 0; attempt < attempts; attempt += 1) {
    if (predicate()) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error('condition not reached');
}

/** `${NAME}`: a variable reference as written in `env` and `headers` of an MCP server configuration. */
export function reference(name: string): string {
  return `\${${name}}`;
}

/**
 * Per-test limit for tests that spawn MCP servers: a stuck server that ignores stdin's end takes the
 * SDK a few seconds to kill, and a loaded machine runs the suite's child processes slowly. Only a
 * hang ever comes near it.
 */
export const PROCESS_TEST_TIMEOUT_MS = 30_000;
