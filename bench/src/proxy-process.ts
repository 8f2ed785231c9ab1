/**
 * Child-process entry of the pass-through proxy floor (issue 18): node:http accepting the client's
 * request, `fetch` sending it on to the model, and the model's SSE piped back chunk by chunk, with
 * nothing parsed. What any server in front of the model costs at the least; apps/server's per-turn
 * figures are read beside it. The model's base URL comes as argv[2]; the proxy's own URL goes back
 * over IPC as `{ url }`.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

const target = process.argv[2];
if (!target) throw new Error('usage: proxy-process <model base URL>');

const server = createServer(async (request, response) => {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const upstream = await fetch(`${target}${request.url?.replace(/^\/v1/, '') ?? ''}`, {
    method: request.method ?? 'POST',
    headers: { 'content-type': 'application/json', authorization: request.headers.authorization ?? '' },
    body: Buffer.concat(chunks),
  });
  response.writeHead(upstream.status, {
    'content-type': upstream.headers.get('content-type') ?? 'text/event-stream',
    'cache-control': 'no-cache',
  });
  if (upstream.body) {
    for await (const chunk of upstream.body as AsyncIterable<Uint8Array>) response.write(chunk);
  }
  response.end();
});
// The same 4,096 backlog as apps/server: with node's 511, 1,000 connections opened at once overflow the accept queue
// and the dropped SYNs are retried 1-15 s later, which is no floor.
server.listen({ port: 0, host: '127.0.0.1', backlog: 4096 }, () => {
  process.send?.({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
});
process.on('disconnect', () => {
  server.close();
  process.exit(0);
});
