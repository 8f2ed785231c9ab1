/** What {@link pingSockets} needs of one socket: `ws`'s WebSocket has it, and so does any test double. */
export interface PingableSocket {
  ping(): void;
  terminate(): void;
  on(event: 'pong', listener: () => void): unknown;
}

/**
 * Pings every socket of `server.clients` each `intervalMs` and terminates one that did not answer the previous
 * ping, so a peer that vanished without a close does not hold its socket (and what is attached to it) for good.
 * A socket is watched from the first tick that sees it. 0 or less turns pings off. Returns the function that stops it.
 *
 * The type is structural so the core stays free of a WebSocket library: both protocol servers hand in their `ws`
 * server.
 */
export function pingSockets(server: { readonly clients: Iterable<PingableSocket> }, intervalMs: number): () => void {
  if (intervalMs <= 0) return () => {};
  const answered = new WeakMap<PingableSocket, boolean>();
  const timer = setInterval(() => {
    for (const client of server.clients) {
      const previous = answered.get(client);
      if (previous === undefined) {
        client.on('pong', () => answered.set(client, true));
      } else if (!previous) {
        client.terminate();
        continue;
      }
      answered.set(client, false);
      try {
        client.ping();
      } catch {
        // A socket closing right now; its own close handler cleans up.
      }
    }
  }, intervalMs);
  timer.unref?.();
  return () => clearInterval(timer);
}
