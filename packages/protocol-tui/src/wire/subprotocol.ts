/**
 * The WebSocket subprotocol a browser offers with a ticket (tui-gateway spec §1.3): a browser can set no header on a
 * WebSocket, and a token in the URL ends up in proxies' access logs, so the single-use ticket travels in
 * `Sec-WebSocket-Protocol` as `hermes-gateway-v1, hermes-gateway-ticket.<ticket>`.
 */
export const GATEWAY_SUBPROTOCOL = 'hermes-gateway-v1';

/** Prefix of the subprotocol entry that carries a gateway ticket. */
export const GATEWAY_TICKET_PROTOCOL_PREFIX = 'hermes-gateway-ticket.';
