/**
 * Child-process entry of the pass-through proxy floor (issue 18): node:http accepting the client's request and
 * node:http sending it on to the model over a keep-alive agent, the model's SSE piped back chunk by chunk with nothing
 * parsed. It uses the HTTP stack the agents use for the model's stream (ADR 0026), so that what it costs is what any
 * server in front of the model costs at the least (issue 34.1); apps/server's figures are read beside it. The model's
 * base URL comes as argv[2]; the proxy's own URL goes back over IPC as `{ url }`.
 */
import { Agent, createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';

const target = process.argv[2];
if (!target) throw new Error('usage: proxy-process <model base URL>');
const agent = new Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });

const server = createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    const body = Buffer.concat(chunks);
    const upstream = httpRequest(
      `${target}${request.url?.replace(/^\/v1/, '') ?? ''}`,
      {
        method: request.method ?? 'POST',
        agent,
        headers: {
          'content-type': 'application/json',
          'content-length': body.length,
          authorization: request.headers.authorization ?? '',
        },
      },
      (answer) => {
        response.writeHead(answer.statusCode ?? 502, {
          'content-type': answer.headers['content-type'] ?? 'text/event-stream',
          'cache-control': 'no-cache',
        });
        answer.pipe(response);
      },
    );
    upstream.on('error', () => {
      if (!response.headersSent) response.writeHead(502);
      response.end();
    });
    upstream.end(body);
  });
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
