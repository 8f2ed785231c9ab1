import { randomBytes } from 'node:crypto';

/** How long a minted ticket can be redeemed: long enough to open a socket, too short to be worth stealing. */
export const GATEWAY_TICKET_LIFETIME_MS = 30_000;

/** A minted ticket and when it stops being accepted (milliseconds since the epoch). */
export interface GatewayTicket {
  ticket: string;
  expiresAt: number;
}

/**
 * Single-use, short-lived gateway tickets (tui-gateway spec §1.3): an HTTP call authenticated with the API key mints
 * one, and a browser, which can set no header on a WebSocket, presents it in `Sec-WebSocket-Protocol` instead of
 * putting the key itself in the URL. A ticket is consumed by its first presentation, admitted or not.
 */
export class GatewayTicketStore {
  readonly #tickets = new Map<string, number>();
  readonly #lifetimeMs: number;

  /** `lifetimeMs` defaults to {@link GATEWAY_TICKET_LIFETIME_MS}. */
  constructor(options: { lifetimeMs?: number } = {}) {
    this.#lifetimeMs = options.lifetimeMs ?? GATEWAY_TICKET_LIFETIME_MS;
  }

  /** Mints a ticket: 24 random bytes, base64url (valid in a subprotocol token). */
  mint(): GatewayTicket {
    this.#prune();
    const ticket = randomBytes(24).toString('base64url');
    const expiresAt = Date.now() + this.#lifetimeMs;
    this.#tickets.set(ticket, expiresAt);
    return { ticket, expiresAt };
  }

  /** Consumes a ticket; true when it was minted here, unused and unexpired. */
  redeem(ticket: string): boolean {
    const expiresAt = this.#tickets.get(ticket);
    this.#tickets.delete(ticket);
    return expiresAt !== undefined && expiresAt >= Date.now();
  }

  #prune(): void {
    const now = Date.now();
    for (const [ticket, expiresAt] of this.#tickets) if (expiresAt < now) this.#tickets.delete(ticket);
  }
}
