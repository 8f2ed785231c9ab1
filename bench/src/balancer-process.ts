/**
 * Child-process entry of the scale benchmark's fallback balancer (balancer.ts, when nginx is not
 * installed): http-proxy, round robin over the base URLs in argv, responses streamed through
 * unbuffered. Its URL goes back over IPC as `{ url }`.
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import httpProxy from 'http-proxy';

const targets = process.argv.slice(2);
if (targets.length === 0) throw new Error('usage: balancer-process <base URL>...');

const proxy = httpProxy.createProxyServer({ xfwd: true });
proxy.on('error', (_error, _request, response) => {
  const answer = response as ServerResponse;
  if (!answer.headersSent) answer.writeHead(502);
  answer.end();
});
let next = 0;
const server = createServer((request, response) => {
  const target = targets[next % targets.length] as string;
  next += 1;
  proxy.web(request, response, { target });
});
server.listen(0, '127.0.0.1', () => {
  process.send?.({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
});
const shutdown = () => {
  server.closeAllConnections();
  server.close();
  proxy.close();
  process.exit(0);
};
process.on('SIGTERM', shutdown);
process.on('disconnect', shutdown);
