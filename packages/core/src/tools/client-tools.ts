import * as z from 'zod';
import type { ClientRequestMethod, JsonValue } from '../types.js';
import type { ToolContext, ToolDefinition, ToolResult } from './types.js';

/**
 * Tools that act through the session's client (tui-gateway spec §6.4): each sends one request with
 * `ToolContext.clientRequest` and uses the answer. They are offered only when the session's host
 * can reach a client (`HostCallbacks.clientRequest`); a client that cannot answer makes the call
 * fail at once with the reason, never a silent wait.
 */

const CLIENT_TOOLSET = 'client';

/** Drops undefined fields so the request carries only what the model gave. */
function defined(fields: Record<string, unknown>): Record<string, JsonValue> {
  const out: Record<string, JsonValue> = {};
  for (const [key, value] of Object.entries(fields)) if (value !== undefined) out[key] = value as JsonValue;
  return out;
}

async function ask(
  ctx: ToolContext,
  method: ClientRequestMethod,
  params: Record<string, JsonValue>,
): Promise<{ result: Record<string, unknown> } | { failure: ToolResult }> {
  try {
    return { result: await ctx.clientRequest(method, params) };
  } catch (error) {
    if (ctx.signal.aborted) return { failure: { content: `${method} was interrupted.`, status: 'cancelled' } };
    const reason = error instanceof Error ? error.message : String(error);
    return { failure: { content: `The client could not handle ${method}: ${reason}`, isError: true } };
  }
}

/** The `{value}` answer of a one-string request; '' (or none) means the client had nothing or the user skipped. */
function answerText(result: Record<string, unknown>): string {
  return typeof result.value === 'string' ? result.value : '';
}

/** A tool whose request is answered with `{value}`: a JSON text, or '' for nothing. */
function valueTool<A extends Record<string, unknown>>(definition: {
  name: string;
  description: string;
  inputSchema: z.ZodType<A>;
  method: ClientRequestMethod;
  readOnly: boolean;
  kind: ToolDefinition['kind'];
  title: (args: A) => string;
  empty: string;
  params?: (args: A) => Record<string, unknown>;
}): ToolDefinition<A> {
  return {
    name: definition.name,
    description: definition.description,
    inputSchema: definition.inputSchema,
    toolset: CLIENT_TOOLSET,
    kind: definition.kind,
    readOnly: definition.readOnly,
    interactive: true,
    available: (ctx) => ctx.hasClientRequests === true && !ctx.isSubagent,
    display: (args) => ({ title: definition.title(args) }),
    async execute(args, ctx) {
      const asked = await ask(ctx, definition.method, defined(definition.params ? definition.params(args) : args));
      if ('failure' in asked) return asked.failure;
      const value = answerText(asked.result);
      if (value === '') return { content: definition.empty };
      return { content: value };
    },
  };
}

const readRange = z.object({
  start: z.number().int().min(0).optional().describe('First line to return (0 = oldest kept).'),
  count: z.number().int().min(1).optional().describe('How many lines to return.'),
});

const previewAction = z.object({
  action: z
    .string()
    .min(1)
    .describe('What to do in the preview page: click, type, press, scroll, navigate, back, snapshot, annotate.'),
  ref: z.string().optional().describe('Element reference from a previous snapshot.'),
  selector: z.string().optional().describe('CSS selector of the element.'),
  text: z.string().optional().describe('Text to type.'),
  key: z.string().optional().describe('Key to press, e.g. Enter.'),
  submit: z.boolean().optional().describe('Press Enter after typing.'),
  full: z.boolean().optional().describe('Snapshot the whole page instead of the viewport.'),
  to: z.string().optional().describe('URL to navigate to, or scroll direction.'),
  amount: z.number().int().optional().describe('Scroll amount in pixels.'),
  max: z.number().int().optional().describe('Most elements a snapshot lists.'),
});

const tourStep = z
  .object({
    selector: z.string().optional(),
    title: z.string().optional(),
    text: z.string().optional(),
    side: z.string().optional(),
  })
  .passthrough();

const tourArgs = z.object({
  action: z.string().min(1).describe('start, next, previous, highlight or end.'),
  surface: z.string().optional().describe('app (default) or preview.'),
  selector: z.string().optional(),
  title: z.string().optional(),
  text: z.string().optional(),
  side: z.string().optional(),
  steps: z.array(tourStep).optional().describe('The steps of a tour to start.'),
  step_index: z.number().int().min(0).optional(),
});

const loginCodeArgs = z.object({
  site: z.string().min(1).describe('The site asking for the code, e.g. github.com.'),
  hint: z.string().optional().describe('Where the user finds the code (authenticator app, SMS to …).'),
});

const vaultUnlockArgs = z.object({
  backend: z.string().min(1).describe('The password manager, e.g. bitwarden or 1password.'),
  display_name: z.string().optional().describe('Its name as the user knows it.'),
});

const connectionArgs = z.object({
  targets: z
    .array(
      z.object({
        name: z.string().min(1).describe('The connector or MCP server name.'),
        kind: z.enum(['connector', 'mcp']),
        action: z.enum(['authorize', 'enable', 'install']),
      }),
    )
    .min(1),
  reason: z.string().optional().describe('Why these connections are needed, shown to the user.'),
  timeout_seconds: z.number().int().min(10).max(3600).optional().describe('How long the user has (default 300).'),
});

function createConnectionTool(): ToolDefinition<z.infer<typeof connectionArgs>> {
  return {
    name: 'manage_connections',
    description:
      'Ask the user, on a card in their client, to install, enable or authorize connectors or MCP servers. Returns each target outcome (installed, enabled, authorized, declined or error).',
    inputSchema: connectionArgs,
    toolset: CLIENT_TOOLSET,
    kind: 'other',
    readOnly: false,
    interactive: true,
    available: (ctx) => ctx.hasClientRequests === true && !ctx.isSubagent,
    display: (args) => ({ title: `Connections: ${args.targets.map((target) => target.name).join(', ')}` }),
    async execute(args, ctx) {
      const timeoutSeconds = args.timeout_seconds ?? 300;
      const asked = await ask(ctx, 'connection', {
        op_id: `${ctx.callId}`,
        deadline_at: Date.now() / 1000 + timeoutSeconds,
        timeout_seconds: timeoutSeconds,
        reason: args.reason ?? '',
        targets: args.targets,
      });
      if ('failure' in asked) return asked.failure;
      const answered = Array.isArray(asked.result.targets) ? (asked.result.targets as Record<string, unknown>[]) : [];
      // Every requested target gets an outcome; one the client did not mention counts as declined.
      const outcomes = args.targets.map((target) => {
        const found = answered.find((entry) => entry && entry.name === target.name);
        const state = typeof found?.state === 'string' ? found.state : 'declined';
        return defined({
          name: target.name,
          state,
          detail: typeof found?.detail === 'string' ? found.detail : undefined,
          tools: Array.isArray(found?.tools) ? (found.tools as JsonValue) : undefined,
        });
      });
      const structured = { targets: outcomes };
      return { content: JSON.stringify(structured), structured };
    },
  };
}

/**
 * The client-bridge tools: `read_terminal` (`terminal.read`), `read_window_below` (`window.read`),
 * `drive_preview` (`preview.act`), `tour` (`tour`), `request_login_code` (`vault.code`),
 * `unlock_password_manager` (`vault.unlock_prompt`) and `manage_connections` (`connection`).
 */
export function clientTools(): ToolDefinition[] {
  return [
    valueTool({
      name: 'read_terminal',
      description: "Read the text of the terminal pane open in the user's client (JSON with its lines).",
      inputSchema: readRange,
      method: 'terminal.read',
      readOnly: true,
      kind: 'read',
      title: () => 'Read the client terminal',
      empty: 'The client has no terminal pane open.',
    }),
    valueTool({
      name: 'read_window_below',
      description: "Describe the desktop window just below the user's client window (title, app, text).",
      inputSchema: z.object({}),
      method: 'window.read',
      readOnly: true,
      kind: 'read',
      title: () => 'Read the window below',
      empty: 'The client cannot read the window below on this desktop.',
    }),
    valueTool({
      name: 'drive_preview',
      description:
        "Act in the in-app browser preview of the user's client: click, type, press a key, scroll, navigate, or snapshot the page. Returns the result as JSON.",
      inputSchema: previewAction,
      method: 'preview.act',
      readOnly: false,
      kind: 'other',
      title: (args) => `Preview: ${args.action}`,
      empty: 'The client has no preview open.',
    }),
    valueTool({
      name: 'tour',
      description: "Run a guided tour in the user's client: start a list of steps, move between them, highlight, end.",
      inputSchema: tourArgs,
      method: 'tour',
      readOnly: true,
      kind: 'other',
      title: (args) => `Tour: ${args.action}`,
      empty: 'The client did not run the tour.',
    }),
    valueTool({
      name: 'request_login_code',
      description:
        'Ask the user for a one-time login code (2FA, e-mail or SMS code) a site is asking for, to type into the login form.',
      inputSchema: loginCodeArgs,
      method: 'vault.code',
      readOnly: true,
      kind: 'other',
      title: (args) => `Login code for ${args.site}`,
      empty: 'The user did not give a code.',
    }),
    {
      ...valueTool({
        name: 'unlock_password_manager',
        description:
          'Ask the user to unlock their password manager in their client so logins can be filled. Returns whether it was unlocked; the master password is never shown to you.',
        inputSchema: vaultUnlockArgs,
        method: 'vault.unlock_prompt',
        readOnly: true,
        kind: 'other',
        title: (args) => `Unlock ${args.display_name ?? args.backend}`,
        empty: 'The user did not unlock the password manager.',
        params: (args) => ({ backend: args.backend, display_name: args.display_name ?? args.backend }),
      }),
      async execute(args, ctx) {
        const asked = await ask(
          ctx,
          'vault.unlock_prompt',
          defined({ backend: args.backend, display_name: args.display_name ?? args.backend }),
        );
        if ('failure' in asked) return asked.failure;
        // The secret stays between the user and their client's vault: the model learns only the outcome.
        if (answerText(asked.result) === '') return { content: 'The user did not unlock the password manager.' };
        return { content: `${args.display_name ?? args.backend} is unlocked for this session.` };
      },
    } as ToolDefinition<z.infer<typeof vaultUnlockArgs>>,
    createConnectionTool(),
  ] as ToolDefinition[];
}
