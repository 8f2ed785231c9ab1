import { createHash, randomBytes } from 'node:crypto';
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { type AgentHost, pingSockets, type ToolContext, type ToolDefinition, type ToolResult } from '@hermes/core';
import type { Hono } from 'hono';
import { type WebSocket, WebSocketServer } from 'ws';
import * as z from 'zod';
import { ApiError } from './http-error.js';
import { refuseUpgrade, resolveHttpTimeouts } from './http-hardening.js';

/**
 * Browser-extension control (spec/openai-api.md §24): a browser extension registers as the
 * controller of one session, connects a WebSocket with a single-use ticket, and the session's
 * `browser_*` tools drive that browser. Off unless `api_server.browser_control.enabled` is true.
 */

/** The only capabilities a controller may be granted (spec §24). */
export const BROWSER_CAPABILITIES = [
  'controller.noop',
  'browser_back',
  'browser_click',
  'browser_navigate',
  'browser_press',
  'browser_screenshot',
  'browser_scroll',
  'browser_snapshot',
  'browser_tab_activate',
  'browser_tabs',
  'browser_type',
] as const;

/** The WebSocket subprotocol of the controller lane, and the prefix of the ticket subprotocol. */
export const BROWSER_CONTROL_PROTOCOL = 'hermes-browser-control-v1';
const TICKET_PROTOCOL_PREFIX = 'hermes-browser-control-ticket.';
const WS_PATH = '/v1/browser-control/ws';
const TICKET_LIFETIME_MS = 30_000;
/** How long a tool waits for the controller's result before giving up. */
const COMMAND_TIMEOUT_MS = 60_000;

const RegisterSchema = z.object({
  protocol_version: z.literal(1),
  session_id: z.string().min(1),
  controller_id: z.string().min(1).max(200),
  browser_profile_id: z.string().min(1).max(200),
  capabilities: z.array(z.string()).min(1),
});

interface Ticket {
  principal: string;
  sessionId: string;
  controllerId: string;
  browserProfileId: string;
  capabilities: string[];
  expiresAt: number;
}

interface Controller {
  principal: string;
  sessionId: string;
  controllerId: string;
  browserProfileId: string;
  capabilities: Set<string>;
  socket: WebSocket;
  pending: Map<string, { resolve: (value: ToolResult) => void; capability: string }>;
}

/** Options of {@link BrowserControlBroker}. */
export interface BrowserControlOptions {
  /** Overrides `api_server.browser_control.enabled` (default false). */
  enabled?: boolean;
}

/** The principal an API key stands for: a digest, so the key itself is never kept. */
export function principalOfKey(key: string): string {
  return `key:${createHash('sha256').update(key, 'utf8').digest('hex').slice(0, 16)}`;
}

function enabledInConfig(host: AgentHost): boolean {
  const section = host.configSection('api_server') as { browser_control?: { enabled?: unknown } } | undefined;
  return section?.browser_control?.enabled === true;
}

/**
 * Holds tickets and bound controllers. A controller belongs to the principal that registered it and
 * to one session; once a session has had a controller its browser tools fail closed when the
 * controller is gone, never falling back to another browser.
 */
export class BrowserControlBroker {
  readonly enabled: boolean;
  private readonly tickets = new Map<string, Ticket>();
  private readonly controllers = new Map<string, Controller>();
  /** Session → principal of its first controller: a session's browser lane never changes hands. */
  private readonly owners = new Map<string, string>();
  private readonly stopPings: () => void;
  private readonly sockets = new WebSocketServer({
    noServer: true,
    handleProtocols: (protocols) => (protocols.has(BROWSER_CONTROL_PROTOCOL) ? BROWSER_CONTROL_PROTOCOL : false),
  });

  constructor(
    private readonly host: AgentHost,
    options: BrowserControlOptions = {},
  ) {
    this.enabled = options.enabled ?? enabledInConfig(host);
    this.stopPings = pingSockets(this.sockets, resolveHttpTimeouts(host).pingIntervalMs);
    if (this.enabled) for (const tool of this.tools()) if (!host.tools.get(tool.name)) host.tools.register(tool);
  }

  /** `POST /v1/browser-control/register`: validates, and mints a single-use 30 s ticket. */
  async register(principal: string, body: unknown): Promise<Record<string, unknown>> {
    if (!this.enabled)
      throw new ApiError(404, 'not_found', 'Browser control is disabled; set api_server.browser_control.enabled');
    const parsed = RegisterSchema.safeParse(body);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new ApiError(
        400,
        'invalid_request',
        `Invalid registration: ${issue?.path.join('.') || 'body'}: ${issue?.message}`,
        {
          param: issue?.path.join('.') || null,
        },
      );
    }
    const request = parsed.data;
    if (!(await this.host.store.getSession(request.session_id)))
      throw new ApiError(404, 'session_not_found', `Session not found: ${request.session_id}`, { param: 'session_id' });
    const owner = this.owners.get(request.session_id);
    if (owner !== undefined && owner !== principal)
      throw new ApiError(403, 'forbidden', 'This session is bound to a browser controller of another principal');
    const allowed = new Set<string>(BROWSER_CAPABILITIES);
    const capabilities = [...new Set(request.capabilities.filter((capability) => allowed.has(capability)))];
    if (capabilities.length === 0)
      throw new ApiError(400, 'invalid_request', 'No requested capability is allowed', { param: 'capabilities' });
    this.pruneTickets();
    const ticket = randomBytes(24).toString('base64url');
    const expiresAt = Date.now() + TICKET_LIFETIME_MS;
    this.tickets.set(ticket, {
      principal,
      sessionId: request.session_id,
      controllerId: request.controller_id,
      browserProfileId: request.browser_profile_id,
      capabilities,
      expiresAt,
    });
    return {
      object: 'browser_control.registration',
      protocol_version: 1,
      ticket,
      expires_at: Math.floor(expiresAt / 1000),
      ws_path: WS_PATH,
      subprotocols: [BROWSER_CONTROL_PROTOCOL, `${TICKET_PROTOCOL_PREFIX}${ticket}`],
      scope: {
        session_id: request.session_id,
        controller_id: request.controller_id,
        browser_profile_id: request.browser_profile_id,
        capabilities,
      },
    };
  }

  /**
   * The HTTP server's `upgrade` handling for `GET /v1/browser-control/ws`. Returns false for other
   * paths, so other upgrade listeners (the gateway's WebSocket) keep theirs. A bad or missing
   * ticket is refused with an HTTP error before the upgrade.
   */
  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const url = new URL(request.url ?? '/', 'http://localhost');
    if (url.pathname !== WS_PATH) return false;
    // Answered and destroyed: a refused socket left to the client's FIN would hold a descriptor for good.
    const refuse = (status: 400 | 401 | 404, message: string) =>
      refuseUpgrade(
        socket,
        new ApiError(
          status,
          status === 404 ? 'not_found' : status === 401 ? 'invalid_ticket' : 'invalid_request',
          message,
        ),
      );
    if (!this.enabled) {
      refuse(404, 'Browser control is disabled');
      return true;
    }
    if (url.searchParams.has('ticket')) {
      refuse(400, 'A ticket is never accepted in the query string; send it as a subprotocol');
      return true;
    }
    const offered = (request.headers['sec-websocket-protocol'] ?? '')
      .split(',')
      .map((entry) => entry.trim())
      .filter(Boolean);
    const ticketText = offered
      .find((entry) => entry.startsWith(TICKET_PROTOCOL_PREFIX))
      ?.slice(TICKET_PROTOCOL_PREFIX.length);
    if (!offered.includes(BROWSER_CONTROL_PROTOCOL) || !ticketText) {
      refuse(400, `Both subprotocols are required: ${BROWSER_CONTROL_PROTOCOL} and ${TICKET_PROTOCOL_PREFIX}<ticket>`);
      return true;
    }
    const ticket = this.tickets.get(ticketText);
    this.tickets.delete(ticketText);
    if (!ticket || ticket.expiresAt < Date.now()) {
      refuse(401, 'Invalid, used or expired browser-control ticket');
      return true;
    }
    this.sockets.handleUpgrade(request, socket, head, (ws) => this.bind(ticket, ws));
    return true;
  }

  /** Adds the upgrade handling to a Node HTTP server; returns a function that removes it. */
  attach(server: Server): () => void {
    const listener = (request: IncomingMessage, socket: Duplex, head: Buffer) => {
      this.handleUpgrade(request, socket, head);
    };
    server.on('upgrade', listener);
    return () => server.off('upgrade', listener);
  }

  /** Whether a session's browser tools are offered: once it had a controller, for good (fail closed). */
  hasLane(sessionId: string): boolean {
    return this.owners.has(sessionId);
  }

  /** Closes every controller socket. */
  close(): void {
    this.stopPings();
    for (const controller of this.controllers.values()) this.detach(controller, 'server_closing', true);
    this.sockets.close();
  }

  private pruneTickets(): void {
    const now = Date.now();
    for (const [key, ticket] of this.tickets) if (ticket.expiresAt < now) this.tickets.delete(key);
  }

  private bind(ticket: Ticket, socket: WebSocket): void {
    const previous = this.controllers.get(ticket.sessionId);
    if (previous) this.detach(previous, 'replaced', true);
    const controller: Controller = {
      principal: ticket.principal,
      sessionId: ticket.sessionId,
      controllerId: ticket.controllerId,
      browserProfileId: ticket.browserProfileId,
      capabilities: new Set(ticket.capabilities),
      socket,
      pending: new Map(),
    };
    this.controllers.set(ticket.sessionId, controller);
    this.owners.set(ticket.sessionId, ticket.principal);
    socket.on('message', (data) => this.receive(controller, String(data)));
    socket.on('close', () => this.detach(controller, 'controller_disconnected', false));
    socket.on('error', () => {});
  }

  private receive(controller: Controller, text: string): void {
    let frame: { type?: unknown; id?: unknown; ok?: unknown; result?: unknown; error?: unknown; reason?: unknown };
    try {
      frame = JSON.parse(text);
    } catch {
      return;
    }
    if (frame.type === 'browser.controller.detach') {
      this.detach(controller, typeof frame.reason === 'string' ? frame.reason : 'controller_detached', true);
      return;
    }
    if (frame.type !== 'browser.controller.result' || typeof frame.id !== 'string') return;
    const waiting = controller.pending.get(frame.id);
    if (!waiting) return;
    controller.pending.delete(frame.id);
    if (frame.ok === true) {
      const content = typeof frame.result === 'string' ? frame.result : JSON.stringify(frame.result ?? null);
      waiting.resolve({ content });
    } else {
      const reason = typeof frame.error === 'string' ? frame.error : JSON.stringify(frame.error ?? 'unknown error');
      waiting.resolve({ content: `The browser could not run ${waiting.capability}: ${reason}`, isError: true });
    }
  }

  private detach(controller: Controller, reason: string, closeSocket: boolean): void {
    if (this.controllers.get(controller.sessionId) === controller) this.controllers.delete(controller.sessionId);
    for (const [id, waiting] of controller.pending) {
      waiting.resolve({
        content: `The browser controller went away (${reason}) before ${waiting.capability} finished.`,
        isError: true,
      });
      controller.pending.delete(id);
    }
    if (closeSocket && controller.socket.readyState === controller.socket.OPEN) {
      controller.socket.send(JSON.stringify({ type: 'browser.controller.detach', reason }));
      controller.socket.close(1000, reason);
    }
  }

  /** Sends one command to the session's controller and waits for its result (or a clear failure). */
  command(
    sessionId: string,
    capability: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<ToolResult> {
    const controller = this.controllers.get(sessionId);
    if (!controller)
      return Promise.resolve({
        content:
          'No browser controller is connected to this session (it detached); the browser extension must register again. No other browser is used.',
        isError: true,
      });
    if (!controller.capabilities.has(capability))
      return Promise.resolve({ content: `The browser controller was not granted ${capability}.`, isError: true });
    const id = `bc_${randomBytes(8).toString('hex')}`;
    return new Promise<ToolResult>((resolve) => {
      const finish = (result: ToolResult) => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        resolve(result);
      };
      const timer = setTimeout(() => {
        controller.pending.delete(id);
        controller.socket.send(JSON.stringify({ type: 'browser.controller.cancel', id, reason: 'timeout' }));
        finish({
          content: `The browser did not answer ${capability} within ${COMMAND_TIMEOUT_MS / 1000} s.`,
          isError: true,
        });
      }, COMMAND_TIMEOUT_MS);
      const onAbort = () => {
        controller.pending.delete(id);
        if (controller.socket.readyState === controller.socket.OPEN)
          controller.socket.send(JSON.stringify({ type: 'browser.controller.cancel', id, reason: 'interrupted' }));
        finish({ content: `${capability} was interrupted.`, status: 'cancelled' });
      };
      signal.addEventListener('abort', onAbort, { once: true });
      controller.pending.set(id, { resolve: finish, capability });
      controller.socket.send(
        JSON.stringify({ type: 'browser.controller.command', id, session_id: sessionId, capability, args }),
      );
    });
  }

  /** The browser tools, offered to a session once it has a controller lane. */
  tools(): ToolDefinition[] {
    const tool = <A extends Record<string, unknown>>(
      name: (typeof BROWSER_CAPABILITIES)[number],
      description: string,
      inputSchema: z.ZodType<A>,
      readOnly: boolean,
      title: (args: A) => string,
    ): ToolDefinition<A> => ({
      name,
      description,
      inputSchema,
      toolset: 'browser',
      kind: readOnly ? 'read' : 'other',
      readOnly,
      interactive: true,
      available: (ctx) => this.hasLane(ctx.sessionId),
      display: (args) => ({ title: title(args) }),
      execute: (args: A, ctx: ToolContext) => this.command(ctx.sessionId, name, args, ctx.signal),
    });
    const none = z.object({});
    return [
      tool(
        'browser_navigate',
        "Open a URL in the user's browser tab.",
        z.object({ url: z.string().url() }),
        false,
        (args) => `Browser: open ${args.url}`,
      ),
      tool(
        'browser_snapshot',
        'Read the current page as text with element references for click and type.',
        none,
        true,
        () => 'Browser: snapshot',
      ),
      tool(
        'browser_click',
        'Click an element by its snapshot reference.',
        z.object({ ref: z.string().min(1) }),
        false,
        (args) => `Browser: click ${args.ref}`,
      ),
      tool(
        'browser_type',
        'Type text into an element by its snapshot reference; submit presses Enter after.',
        z.object({ ref: z.string().min(1), text: z.string(), submit: z.boolean().optional() }),
        false,
        (args) => `Browser: type into ${args.ref}`,
      ),
      tool(
        'browser_press',
        'Press a key (Enter, Escape, ArrowDown, …).',
        z.object({ key: z.string().min(1) }),
        false,
        (args) => `Browser: press ${args.key}`,
      ),
      tool(
        'browser_scroll',
        'Scroll the page up or down.',
        z.object({ direction: z.enum(['up', 'down']), amount: z.number().int().min(1).optional() }),
        false,
        (args) => `Browser: scroll ${args.direction}`,
      ),
      tool('browser_back', 'Go back in the tab history.', none, false, () => 'Browser: back'),
      tool(
        'browser_screenshot',
        'Capture the visible page as an image description.',
        none,
        true,
        () => 'Browser: screenshot',
      ),
      tool('browser_tabs', 'List the open tabs.', none, true, () => 'Browser: tabs'),
      tool(
        'browser_tab_activate',
        'Switch to a tab by its id.',
        z.object({ tab_id: z.string().min(1) }),
        false,
        (args) => `Browser: tab ${args.tab_id}`,
      ),
    ] as ToolDefinition[];
  }
}

/** Registers `POST /v1/browser-control/register` on the app (the route exists even when disabled, answering 404). */
export function registerBrowserControlRoutes(app: Hono, broker: BrowserControlBroker, key: string): void {
  const principal = principalOfKey(key);
  app.post('/v1/browser-control/register', async (context) => {
    let body: unknown;
    try {
      body = await context.req.json();
    } catch {
      throw new ApiError(400, 'invalid_request', 'The body must be JSON');
    }
    // The principal is the API key that passed the auth stage; a client-sent principal is ignored.
    return context.json(await broker.register(principal, body));
  });
}
