import { execFile } from 'node:child_process';
import { accessSync, constants, mkdirSync, writeFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { ErrorCode } from '../wire/index.js';
import { fail, type MethodContext, requireSession } from './context.js';

/** How one clipboard utility lists the clipboard's types and reads one of them. */
interface ClipboardTool {
  name: string;
  /** The display server it needs, by environment variable. */
  display: string;
  listTypes: string[];
  read: (type: string) => string[];
}

/** Wayland first (wl-clipboard), then X11 (xclip): the order a desktop session would pick. */
const TOOLS: ClipboardTool[] = [
  {
    name: 'wl-paste',
    display: 'WAYLAND_DISPLAY',
    listTypes: ['--list-types'],
    read: (type) => ['--no-newline', '--type', type],
  },
  {
    name: 'xclip',
    display: 'DISPLAY',
    listTypes: ['-selection', 'clipboard', '-t', 'TARGETS', '-o'],
    read: (type) => ['-selection', 'clipboard', '-t', type, '-o'],
  },
];

const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'];
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const MAX_IMAGE_BYTES = 50 * 1024 * 1024;

/** The executable named `name` on PATH, or null. */
function onPath(name: string, path: string | undefined): string | null {
  for (const folder of (path ?? '').split(delimiter)) {
    if (!folder) continue;
    const candidate = join(folder, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {}
  }
  return null;
}

/** The first clipboard utility on PATH whose display server is present, or null (a headless host). */
export function detectClipboardTool(
  environment: NodeJS.ProcessEnv = process.env,
): { tool: ClipboardTool; executable: string } | null {
  for (const tool of TOOLS) {
    if (!environment[tool.display]) continue;
    const executable = onPath(tool.name, environment.PATH);
    if (executable) return { tool, executable };
  }
  return null;
}

function run(executable: string, args: string[]): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    execFile(
      executable,
      args,
      { encoding: 'buffer', maxBuffer: MAX_IMAGE_BYTES, timeout: 10_000 },
      (error, stdout, stderr) => {
        if (error) {
          const detail = stderr.toString('utf8').trim();
          reject(new Error(detail ? `${error.message.split('\n')[0]}: ${detail}` : error.message));
        } else resolve(stdout);
      },
    );
  });
}

/**
 * `clipboard.paste` (§4.5): reads an image from the desktop clipboard with `wl-paste` or `xclip`,
 * whichever is installed for the running display server, saves it as PNG under
 * `HERMES_HOME/attachments/<stored id>/` and queues it for the next turn.
 */
export async function clipboardPaste(context: MethodContext): Promise<Record<string, unknown>> {
  const session = requireSession(context);
  const found = detectClipboardTool();
  if (!found) return { attached: false, message: 'clipboard not available on this host' };
  const { tool, executable } = found;
  let types: string[];
  try {
    types = (await run(executable, tool.listTypes))
      .toString('utf8')
      .split('\n')
      .map((line) => line.trim());
  } catch {
    // The utility exists but cannot reach a clipboard (display gone, no owner): nothing to paste.
    return { attached: false, message: 'no image in clipboard' };
  }
  const type = IMAGE_TYPES.find((candidate) => types.includes(candidate));
  if (!type) return { attached: false, message: 'no image in clipboard' };
  let bytes: Buffer;
  try {
    bytes = await run(executable, tool.read(type));
  } catch (error) {
    fail(
      ErrorCode.attachFailed,
      `clipboard image could not be saved: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  if (bytes.length === 0) return { attached: false, message: 'no image in clipboard' };
  // Only PNG is stored as is; other types are kept when they are PNG underneath, else refused clearly.
  if (!bytes.subarray(0, 8).equals(PNG_SIGNATURE))
    fail(
      ErrorCode.attachFailed,
      `clipboard image could not be saved: ${type} is not PNG and no converter is installed`,
    );
  const folder = join(context.gateway.host.homeDir, 'attachments', session.storedId);
  const name = `clipboard-${new Date().toISOString().replace(/[-:.]/g, '').replace('T', '-').slice(0, 15)}-${session.images.length + 1}.png`;
  const path = join(folder, name);
  try {
    mkdirSync(folder, { recursive: true });
    writeFileSync(path, bytes);
  } catch (error) {
    fail(
      ErrorCode.attachFailed,
      `clipboard image could not be saved: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  session.images.push(path);
  const result: Record<string, unknown> = { attached: true, path, count: session.images.length, name };
  if (bytes.length >= 24) {
    const width = bytes.readUInt32BE(16);
    const height = bytes.readUInt32BE(20);
    result.width = width;
    result.height = height;
    result.token_estimate = 85 * Math.ceil(width / 512) * Math.ceil(height / 512);
  }
  return result;
}
