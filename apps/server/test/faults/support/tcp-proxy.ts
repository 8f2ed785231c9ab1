import { createConnection, createServer, type Socket } from 'node:net';
import { cleanups } from '../../support/server-process.js';

/**
 * A TCP relay on 127.0.0.1 between one instance and PostgreSQL, so the suite can cut that one instance off from the
 * database (a network partition) while the others keep it. `cut` ends every relayed connection and drops new ones at
 * once until `heal`.
 */
export interface TcpProxy {
  /** `target` with its host and port replaced by the relay's. */
  url: string;
  cut(): void;
  heal(): void;
}

export async function startTcpProxy(target: string): Promise<TcpProxy> {
  const parsed = new URL(target);
  const sockets = new Set<Socket>();
  let open = true;
  const server = createServer((client) => {
    if (!open) {
      client.destroy();
      return;
    }
    const upstream = createConnection({ host: parsed.hostname, port: Number(parsed.port) });
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => {});
    }
    client.pipe(upstream);
    upstream.pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (typeof address !== 'object' || address === null) throw new Error('the relay has no port');
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  );
  const url = new URL(target);
  url.hostname = '127.0.0.1';
  url.port = String(address.port);
  return {
    url: url.toString(),
    cut: () => {
      open = false;
      for (const socket of sockets) socket.destroy();
    },
    heal: () => {
      open = true;
    },
  };
}
