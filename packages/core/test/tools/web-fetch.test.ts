import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createWebFetchTool } from '../../src/tools/web-fetch.js';
import { createTestToolContext, type TestToolContext } from './context.js';

const webFetch = createWebFetchTool();
let server: Server;
let base: string;
const requests: IncomingMessage[] = [];
const contexts: TestToolContext[] = [];

type Route = (request: IncomingMessage, response: ServerResponse) => void;

const HTML = `<!doctype html><html><head><title>Page</title><style>body { color: red }</style>
<script>alert("x")</script></head><body><h1>Hello &amp; welcome</h1><p>Some <b>bold</b> text and a <a href="/next">link</a>.</p>
<ul><li>one</li><li>two</li></ul><noscript>enable js</noscript></body></html>`;

const routes: Record<string, Route> = {
  '/page': (_request, response) => {
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    response.end(HTML);
  },
  '/data.json': (_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end('{"a": [1, 2]}');
  },
  '/plain': (_request, response) => {
    response.writeHead(200, { 'content-type': 'text/plain' });
    response.end('just *text*\n');
  },
  '/latin1': (_request, response) => {
    response.writeHead(200, { 'content-type': 'text/plain; charset=iso-8859-1' });
    response.end(Buffer.from([0x63, 0x61, 0x66, 0xe9]));
  },
  '/image.png': (_request, response) => {
    response.writeHead(200, { 'content-type': 'image/png' });
    response.end(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 0]));
  },
  '/untyped-binary': (_request, response) => {
    response.end(Buffer.from([1, 2, 0, 3]));
  },
  '/missing': (_request, response) => {
    response.writeHead(404, { 'content-type': 'text/plain' });
    response.end(`not here ${'x'.repeat(5000)}`);
  },
  '/big': (_request, response) => {
    response.writeHead(200, { 'content-type': 'text/plain' });
    response.end('b'.repeat(10_000));
  },
  '/hang': () => {
    // Never answers.
  },
};

function redirect(location: string, status = 302): Route {
  return (_request, response) => {
    response.writeHead(status, { location });
    response.end();
  };
}

routes['/redirect-once'] = redirect('/plain', 301);
for (let index = 1; index <= 6; index += 1) routes[`/chain-${index}`] = redirect(`/chain-${index + 1}`);
routes['/chain-7'] = routes['/plain'] as Route;
routes['/to-ftp'] = redirect('ftp://example.com/file');

beforeAll(async () => {
  server = createServer((request, response) => {
    requests.push(request);
    const route = routes[new URL(request.url ?? '/', 'http://localhost').pathname];
    if (route === undefined) {
      response.writeHead(500);
      response.end();
      return;
    }
    route(request, response);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

afterEach(async () => {
  requests.length = 0;
  for (const created of contexts.splice(0)) await created.cleanup();
});

async function context(options: Parameters<typeof createTestToolContext>[0] = {}): Promise<TestToolContext> {
  // The test server is on loopback, which web_fetch refuses unless web.allow_private_hosts opens it.
  const created = await createTestToolContext({
    ...options,
    settings: { webAllowPrivateHosts: [new URL(base).host], ...options.settings },
  });
  contexts.push(created);
  return created;
}

describe('web_fetch', () => {
  it('converts HTML to Markdown without scripts and styles, under a URL header line', async () => {
    const test = await context();
    const result = await test.run(webFetch, { url: `${base}/page` });
    expect(result.content).toBe(
      [
        `URL: ${base}/page (200, text/html)`,
        '',
        'Title: Page',
        '',
        '# Hello & welcome',
        '',
        'Some **bold** text and a [link](/next).',
        '',
        '-   one',
        '-   two',
      ].join('\n'),
    );
    expect(result.structured).toEqual({
      url: `${base}/page`,
      finalUrl: `${base}/page`,
      status: 200,
      contentType: 'text/html; charset=utf-8',
      bytes: Buffer.byteLength(HTML),
      truncated: false,
    });
    expect(requests[0]?.headers.cookie).toBeUndefined();
  });

  it('converts HTML to plain text or returns it raw', async () => {
    const test = await context();
    const text = await test.run(webFetch, { url: `${base}/page`, format: 'text' });
    expect(text.content).toContain('Hello & welcome');
    expect(text.content).toContain('Some bold text and a link.');
    expect(text.content).not.toContain('**');
    expect(text.content).not.toContain('alert');
    expect(text.content).not.toContain('color: red');
    expect(text.content).not.toContain('enable js');
    expect(text.content.split('\n').slice(0, 4)).toEqual([`URL: ${base}/page (200, text/html)`, '', 'Title: Page', '']);
    const html = await test.run(webFetch, { url: `${base}/page`, format: 'html' });
    expect(html.content).toBe(`URL: ${base}/page (200, text/html)\n\n${HTML}`);
  });

  it('returns JSON and text bodies as they are, decoding the charset', async () => {
    const test = await context();
    expect((await test.run(webFetch, { url: `${base}/data.json` })).content).toBe(
      `URL: ${base}/data.json (200, application/json)\n\n{"a": [1, 2]}`,
    );
    expect((await test.run(webFetch, { url: `${base}/plain` })).content).toBe(
      `URL: ${base}/plain (200, text/plain)\n\njust *text*\n`,
    );
    expect((await test.run(webFetch, { url: `${base}/latin1` })).content.endsWith('café')).toBe(true);
  });

  it('refuses binary content', async () => {
    const test = await context();
    const png = await test.run(webFetch, { url: `${base}/image.png` });
    expect(png.isError).toBe(true);
    expect(png.content).toContain('binary content (image/png');
    const untyped = await test.run(webFetch, { url: `${base}/untyped-binary` });
    expect(untyped.isError).toBe(true);
  });

  it('reports a status of 400 or more as an error with the first 2,000 characters', async () => {
    const test = await context();
    const result = await test.run(webFetch, { url: `${base}/missing` });
    expect(result.isError).toBe(true);
    const [header, status, blank, body] = result.content.split('\n');
    expect(header).toBe(`URL: ${base}/missing (404, text/plain)`);
    expect(status).toBe('HTTP 404 Not Found');
    expect(blank).toBe('');
    expect(body).toHaveLength(2000);
    expect(result.structured).toMatchObject({ status: 404 });
  });

  it('follows up to five redirects and reports the final URL', async () => {
    const test = await context();
    const once = await test.run(webFetch, { url: `${base}/redirect-once` });
    expect(once.content.split('\n')[0]).toBe(`URL: ${base}/plain (200, text/plain)`);
    expect(once.structured).toMatchObject({ url: `${base}/redirect-once`, finalUrl: `${base}/plain` });
    const five = await test.run(webFetch, { url: `${base}/chain-2` });
    expect(five.content.split('\n')[0]).toBe(`URL: ${base}/chain-7 (200, text/plain)`);
    const six = await test.run(webFetch, { url: `${base}/chain-1` });
    expect(six.isError).toBe(true);
    expect(six.content).toContain('Too many redirects');
    const ftp = await test.run(webFetch, { url: `${base}/to-ftp` });
    expect(ftp.isError).toBe(true);
  });

  it('allows http and https only', async () => {
    const test = await context();
    for (const url of ['file:///etc/passwd', 'ftp://example.com/x', 'data:text/plain,hi']) {
      const result = await test.run(webFetch, { url });
      expect(result.isError).toBe(true);
      expect(result.content).toMatch(/^Only http and https URLs can be fetched/);
    }
    expect((await test.run(webFetch, { url: 'not a url' })).content).toBe('Invalid URL: not a url');
  });

  it('caps the body at web.max_bytes and the text at max_chars', async () => {
    const test = await context({ settings: { webMaxBytes: 1000 } });
    const capped = await test.run(webFetch, { url: `${base}/big` });
    expect(capped.structured).toMatchObject({ bytes: 1000, truncated: true });
    expect(capped.content).toContain('[the body was cut at 1000 bytes (web.max_bytes)]');
    const test2 = await context();
    const short = await test2.run(webFetch, { url: `${base}/big`, max_chars: 100 });
    expect(short.content).toBe(
      `URL: ${base}/big (200, text/plain)\n\n${'b'.repeat(100)}\n[content cut at 100 of 10000 characters]`,
    );
    expect(short.structured).toMatchObject({ bytes: 10_000, truncated: true });
  });

  it('times out after web.fetch_timeout', async () => {
    const test = await context({ settings: { webFetchTimeout: 0.2 } });
    const result = await test.run(webFetch, { url: `${base}/hang` });
    expect(result).toEqual({ content: `Timed out after 0.2 s fetching ${base}/hang.`, isError: true });
  });

  it('is cancelled by an interrupt', async () => {
    const test = await context();
    const pending = test.run(webFetch, { url: `${base}/hang` });
    await new Promise<void>((resolve) => {
      const check = () => (requests.length > 0 ? resolve() : setTimeout(check, 10));
      check();
    });
    test.controller.abort();
    expect(await pending).toEqual({ content: 'Fetch cancelled.', status: 'cancelled' });
  });

  it('goes through the fetch service', async () => {
    const seen: string[] = [];
    // A public address for the name, so the address check passes; the injected fetch makes no connection.
    const resolving = createWebFetchTool({ lookup: async () => [{ address: '93.184.215.14', family: 4 }] });
    const test = await context({
      fetch: async (input) => {
        seen.push(String(input));
        return new Response('from the service', { headers: { 'content-type': 'text/plain' } });
      },
    });
    const result = await test.run(resolving, { url: 'https://example.invalid/x' });
    expect(seen).toEqual(['https://example.invalid/x']);
    expect(result.content).toBe('URL: https://example.invalid/x (200, text/plain)\n\nfrom the service');
  });
});
