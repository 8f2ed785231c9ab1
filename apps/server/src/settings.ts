import { isIP } from 'node:net';

/** How the server is configured: environment variables, documented in the README. */
export interface ServerSettings {
  host: string;
  port: number;
  /** API_SERVER_KEY; null when unset (a loopback server then generates one). */
  key: string | null;
  /** Addresses whose X-Forwarded-For / X-Forwarded-Proto are believed. */
  trustedProxies: string[];
  logLevel: string;
  /** The gateway WebSocket token (HERMES_GATEWAY_TOKEN), defaulting to the API key. */
  gatewayToken: string | null;
  /** Seconds to let running turns finish after SIGTERM/SIGINT before interrupting them. */
  drainTimeoutSeconds: number | null;
  /**
   * API_SERVER_ALLOWED_HOSTS: further host names (a proxy's public name) the gateway WebSocket's `Host`/`Origin`
   * check admits besides the bound address.
   */
  allowedHosts: string[];
}

/** True for loopback bind addresses. */
export function isLoopback(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  return bare === 'localhost' || bare === '::1' || bare.startsWith('127.') || bare === '::ffff:127.0.0.1';
}

/** Reads the server settings from the environment. */
export function readServerSettings(env: NodeJS.ProcessEnv): ServerSettings {
  const port = Number(env.API_SERVER_PORT ?? env.PORT ?? 8642);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error(`API_SERVER_PORT must be a port number, not "${env.API_SERVER_PORT}".`);
  const proxies = (env.HERMES_TRUSTED_PROXIES ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
  for (const proxy of proxies)
    if (isIP(proxy) === 0) throw new Error(`HERMES_TRUSTED_PROXIES: "${proxy}" is not an IP address.`);
  const allowedHosts = (env.API_SERVER_ALLOWED_HOSTS ?? '')
    .split(',')
    .map((entry) => entry.trim().toLowerCase())
    .filter(Boolean);
  for (const name of allowedHosts)
    if (/[\s/@?#]/.test(name) || name.includes('://'))
      throw new Error(`API_SERVER_ALLOWED_HOSTS: "${name}" is not a host name (give names like hermes.example.com).`);
  const drain = env.HERMES_DRAIN_TIMEOUT ? Number(env.HERMES_DRAIN_TIMEOUT) : null;
  return {
    host: env.API_SERVER_HOST ?? '127.0.0.1',
    port,
    key: env.API_SERVER_KEY?.trim() || null,
    trustedProxies: proxies,
    logLevel: env.HERMES_LOG_LEVEL ?? env.LOG_LEVEL ?? 'info',
    gatewayToken: env.HERMES_GATEWAY_TOKEN?.trim() || null,
    drainTimeoutSeconds: drain !== null && Number.isFinite(drain) ? drain : null,
    allowedHosts,
  };
}

function normalizeAddress(address: string): string {
  return address.replace(/^::ffff:/, '');
}

/** True when the socket peer is one of the trusted proxies. */
export function isTrustedProxy(peer: string | undefined, trusted: readonly string[]): boolean {
  return peer !== undefined && trusted.includes(normalizeAddress(peer));
}

/**
 * The scheme the client used: the socket's (plain HTTP: this server terminates no TLS), or the left-most value of
 * X-Forwarded-Proto when the peer is a trusted proxy. Anything other than http/https in the header is ignored.
 */
export function clientScheme(
  peer: string | undefined,
  forwardedProto: string | undefined,
  trusted: readonly string[],
): 'http' | 'https' {
  if (!peer || !forwardedProto || !trusted.includes(normalizeAddress(peer))) return 'http';
  const first = forwardedProto.split(',')[0]?.trim().toLowerCase();
  return first === 'https' ? 'https' : 'http';
}

/**
 * The client address of a request: the socket peer, or the left-most untrusted hop of
 * X-Forwarded-For when the peer is a trusted proxy.
 */
export function clientAddress(
  peer: string | undefined,
  forwardedFor: string | undefined,
  trusted: readonly string[],
): string | undefined {
  const normalize = normalizeAddress;
  if (!peer || !forwardedFor || !trusted.includes(normalize(peer))) return peer && normalize(peer);
  const hops = forwardedFor
    .split(',')
    .map((hop) => normalize(hop.trim()))
    .filter(Boolean);
  for (let index = hops.length - 1; index >= 0; index -= 1) {
    const hop = hops[index] as string;
    if (!trusted.includes(hop)) return hop;
  }
  return hops[0] ?? normalize(peer);
}
