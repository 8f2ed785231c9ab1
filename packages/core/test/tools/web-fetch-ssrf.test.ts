import { createServer as createHttpServer, type Server } from 'node:http';
import { type AddressInfo, createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ResolvedAddress } from '../../src/tools/web-address-guard.js';
import { createWebFetchTool } from '../../src/tools/web-fetch.js';
import { createTestToolContext, type TestToolContext } from './context.js';

/**
 * web_fetch as a prompt-injected model would use it against the host's network (issue 32): every spelling of a
 * loopback, private, link-local or otherwise internal address is refused before a connection is made. Nothing here
 * sends a packet off loopback: the internal addresses that are not loopback are requested through an injected fetch
 * that makes no connection (and must not even be called), and the loopback ones go through the real connection path
 * while a listener counts what reaches it.
 */

/** A loopback listener standing for an internal service: it counts every connection it accepts. */
let trap: TcpServer;
let trapPort: number;
let trapConnections = 0;
/** An HTTP server the tests allow (`web.allow_private_hosts`), which redirects to internal addresses. */
let allowed: Server;
let allowedPort: number;
let allowedRequests: { host: string | undefined; path: string | undefined }[] = [];
const contexts: TestToolContext[] = [];

/** Names the test resolver knows; others go to the system resolver (`localhost`). */
const names: Record<string, ResolvedAddress[]> = {
  'internal.test': [{ address: '127.0.0.1', family: 4 }],
  'metadata.test': [{ address: '169.254.169.254', family: 4 }],
  'v6-internal.test': [{ address: '::1', family: 6 }],
  // One public and one private answer: the private one decides.
  'mixed.test': [
    { address: '93.184.215.14', family: 4 },
    { address: '10.0.0.5', family: 4 },
  ],
  'public.test': [{ address: '93.184.215.14', family: 4 }],
};
const lookups: string[] = [];
const webFetch = createWebFetchTool({
  lookup: async (hostname) => {
    lookups.push(hostname);
    const known = names[hostname];
    if (known) return known;
    const { lookup } = await import('node:dns/promises');
    return (await lookup(hostname, { all: true, verbatim: true })).map((entry) => ({
      address: entry.address,
      family: entry.family === 6 ? 6 : 4,
    }));
  },
});

beforeAll(async () => {
  trap = createTcpServer((socket) => {
    trapConnections += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => trap.listen(0, '127.0.0.1', resolve));
  trapPort = (trap.address() as AddressInfo).port;
  allowed = createHttpServer((request, response) => {
    allowedRequests.push({ host: request.headers.host, path: request.url });
    const redirects: Record<string, string> = {
      '/to-loopback': `http://127.0.0.1:${trapPort}/admin`,
      '/to-decimal': `http://2130706433:${trapPort}/admin`,
      '/to-hex': `http://0x7f000001:${trapPort}/admin`,
      '/to-localhost': `http://localhost:${trapPort}/admin`,
      '/to-mapped': `http://[::ffff:127.0.0.1]:${trapPort}/admin`,
      '/to-unspecified': `http://0.0.0.0:${trapPort}/admin`,
      '/to-internal-name': `http://internal.test:${trapPort}/admin`,
    };
    const location = redirects[request.url ?? ''];
    if (location) {
      response.writeHead(302, { location });
      response.end();
      return;
    }
    response.writeHead(200, { 'content-type': 'text/plain' });
    response.end('allowed service');
  });
  await new Promise<void>((resolve) => allowed.listen(0, '127.0.0.1', resolve));
  allowedPort = (allowed.address() as AddressInfo).port;
});

afterAll(async () => {
  await new Promise((resolve) => trap.close(resolve));
  allowed.closeAllConnections();
  await new Promise((resolve) => allowed.close(resolve));
});

afterEach(async () => {
  allowedRequests = [];
  lookups.length = 0;
  for (const created of contexts.splice(0)) await created.cleanup();
});

async function context(options: Parameters<typeof createTestToolContext>[0] = {}): Promise<TestToolContext> {
  const created = await createTestToolContext(options);
  contexts.push(created);
  return created;
}

/** The refusal every internal address gets: what was refused, its kind of address, and the setting that opens it. */
const REFUSAL = /^Refused to fetch \S+: .+ is a [a-z -]+(\([a-z0-9]+\))? address\. .*web\.allow_private_hosts/i;

describe('web_fetch refuses internal addresses (SSRF corpus)', () => {
  it('refuses every loopback spelling before connecting, through the real connection path', async () => {
    const corpus = [
      `http://127.0.0.1:${trapPort}/admin`,
      `http://localhost:${trapPort}/admin`,
      `http://LOCALHOST.:${trapPort}/admin`,
      `http://[::1]:${trapPort}/admin`,
      `http://[0:0:0:0:0:0:0:1]:${trapPort}/admin`,
      `http://0.0.0.0:${trapPort}/admin`,
      `http://0:${trapPort}/admin`,
      `http://[::]:${trapPort}/admin`,
      `http://2130706433:${trapPort}/admin`,
      `http://0x7f000001:${trapPort}/admin`,
      `http://0177.0.0.1:${trapPort}/admin`,
      `http://0x7f.0.0.1:${trapPort}/admin`,
      `http://127.1:${trapPort}/admin`,
      `http://127.0.0.1.:${trapPort}/admin`,
      `http://127.255.255.254:${trapPort}/admin`,
      `http://[::ffff:127.0.0.1]:${trapPort}/admin`,
      `http://[::ffff:7f00:1]:${trapPort}/admin`,
      `http://internal.test:${trapPort}/admin`,
      `http://v6-internal.test:${trapPort}/admin`,
      `https://127.0.0.1:${trapPort}/admin`,
      `http://user:password@127.0.0.1:${trapPort}/admin`,
    ];
    // The allowlist names another port of the same address: it must not open this one.
    const test = await context({ settings: { webAllowPrivateHosts: [`127.0.0.1:${allowedPort}`] } });
    for (const url of corpus) {
      const result = await test.run(webFetch, { url });
      expect.soft(result.isError, url).toBe(true);
      expect.soft(result.content, url).toMatch(REFUSAL);
    }
    expect(trapConnections).toBe(0);
  });

  it('refuses private, link-local, unique-local, multicast, broadcast and carrier-grade NAT addresses without calling fetch', async () => {
    const corpus: [string, string][] = [
      ['http://169.254.169.254/latest/meta-data/', 'link-local'],
      ['http://0xa9fea9fe/latest/meta-data/', 'link-local'],
      ['http://2852039166/latest/meta-data/', 'link-local'],
      ['http://[::ffff:a9fe:a9fe]/latest/meta-data/', 'link-local'],
      ['http://metadata.test/latest/meta-data/', 'link-local'],
      ['http://[fe80::1]/', 'link-local'],
      ['http://10.0.0.1/', 'private'],
      ['http://012.0.0.1/', 'private'],
      ['http://192.168.1.1/', 'private'],
      ['http://172.16.0.1/', 'private'],
      ['http://172.31.255.255/', 'private'],
      ['http://mixed.test/', 'private'],
      ['http://100.64.0.1/', 'carrier-grade NAT'],
      ['http://[fc00::1]/', 'unique-local'],
      ['http://[fd12:3456::1]/', 'unique-local'],
      ['http://224.0.0.1/', 'multicast'],
      ['http://[ff02::1]/', 'multicast'],
      ['http://255.255.255.255/', 'broadcast'],
      ['http://192.0.2.1/', 'reserved'],
      ['http://[64:ff9b::a9fe:a9fe]/', 'special-purpose (rfc6052)'],
      ['http://[2002:a9fe:a9fe::1]/', 'special-purpose (6to4)'],
    ];
    const calls: string[] = [];
    const test = await context({
      fetch: async (input) => {
        calls.push(String(input));
        return new Response('must not be reached', { headers: { 'content-type': 'text/plain' } });
      },
    });
    for (const [url, kind] of corpus) {
      const result = await test.run(webFetch, { url });
      expect.soft(result.isError, url).toBe(true);
      expect.soft(result.content, url).toMatch(REFUSAL);
      expect.soft(result.content, url).toContain(`is a ${kind} address`);
    }
    expect(calls).toEqual([]);
  });

  it('checks every redirect hop: an allowed server cannot send the fetch to loopback', async () => {
    const test = await context({ settings: { webAllowPrivateHosts: [`127.0.0.1:${allowedPort}`] } });
    const paths = [
      '/to-loopback',
      '/to-decimal',
      '/to-hex',
      '/to-localhost',
      '/to-mapped',
      '/to-unspecified',
      '/to-internal-name',
    ];
    for (const path of paths) {
      const result = await test.run(webFetch, { url: `http://127.0.0.1:${allowedPort}${path}` });
      expect.soft(result.isError, path).toBe(true);
      expect.soft(result.content, path).toMatch(REFUSAL);
      expect.soft(result.content, path).toContain(`(a redirect from http://127.0.0.1:${allowedPort}${path})`);
    }
    // The allowed server was asked each time; the service behind the redirect never was.
    expect(allowedRequests.map((request) => request.path)).toEqual(paths);
    expect(trapConnections).toBe(0);
  });

  it('checks a redirect answered by an injected fetch too', async () => {
    const calls: string[] = [];
    const test = await context({
      fetch: async (input) => {
        calls.push(String(input));
        return new Response(null, { status: 302, headers: { location: 'http://169.254.169.254/latest/meta-data/' } });
      },
    });
    const result = await test.run(webFetch, { url: 'http://public.test/start' });
    expect(result.isError).toBe(true);
    expect(result.content).toMatch(REFUSAL);
    expect(calls).toEqual(['http://public.test/start']);
  });
});

describe('web.allow_private_hosts', () => {
  it('opens a host by name, by address with a port, or by CIDR range', async () => {
    for (const entry of ['internal.test', `127.0.0.1:${allowedPort}`, '127.0.0.0/8', '::ffff:127.0.0.1']) {
      const test = await context({ settings: { webAllowPrivateHosts: [entry] } });
      const url =
        entry === 'internal.test' ? `http://internal.test:${allowedPort}/ok` : `http://127.1:${allowedPort}/ok`;
      const result = await test.run(webFetch, { url });
      expect(result.isError, entry).toBeUndefined();
      expect(result.content, entry).toContain('allowed service');
    }
  });

  it('connects to the address it checked: the name is resolved once and the request keeps its Host', async () => {
    // A resolver that would answer differently the second time (DNS rebinding): 127.0.0.2 has no listener on this
    // port, so a connection that resolved the name again would fail.
    let answers = 0;
    const rebinding = createWebFetchTool({
      lookup: async () => {
        answers += 1;
        return [{ address: answers === 1 ? '127.0.0.1' : '127.0.0.2', family: 4 }];
      },
    });
    const test = await context({ settings: { webAllowPrivateHosts: [`127.0.0.1:${allowedPort}`] } });
    const result = await test.run(rebinding, { url: `http://rebind.test:${allowedPort}/ok` });
    expect(result.content).toContain('allowed service');
    expect(answers).toBe(1);
    expect(allowedRequests).toEqual([{ host: `rebind.test:${allowedPort}`, path: '/ok' }]);
  });

  it('refuses a name that does not resolve, with the reason', async () => {
    const test = await context();
    const result = await test.run(
      createWebFetchTool({
        lookup: async () => {
          throw Object.assign(new Error('getaddrinfo ENOTFOUND nowhere.test'), { code: 'ENOTFOUND' });
        },
      }),
      { url: 'http://nowhere.test/' },
    );
    expect(result).toEqual({
      content: 'Could not resolve nowhere.test: getaddrinfo ENOTFOUND nowhere.test',
      isError: true,
    });
  });
});
