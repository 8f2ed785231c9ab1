import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/** One address a host name resolves to. */
export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to every address it has (the system resolver by default). */
export type HostLookup = (hostname: string) => Promise<ResolvedAddress[]>;

/** The address a URL's connection must go to, after the check. */
export interface CheckedTarget {
  /** The URL's host name without IPv6 brackets. */
  hostname: string;
  address: string;
  family: 4 | 6;
}

/** A URL whose host is not public and not in `web.allow_private_hosts`. */
export class PrivateAddressRefused extends Error {
  override readonly name = 'PrivateAddressRefused';
  /** Brand-checked: `instanceof` fails across duplicated package copies. */
  static isRefusal(value: unknown): value is PrivateAddressRefused {
    return value instanceof Error && value.name === 'PrivateAddressRefused';
  }
}

/** What the ranges of ipaddr.js are called in a refusal. */
const RANGE_NAMES: Record<string, string> = {
  loopback: 'loopback',
  private: 'private',
  linkLocal: 'link-local',
  uniqueLocal: 'unique-local',
  multicast: 'multicast',
  unspecified: 'unspecified',
  broadcast: 'broadcast',
  carrierGradeNat: 'carrier-grade NAT',
  reserved: 'reserved',
};

/** The ipaddr.js range of an address, IPv4-mapped IPv6 addresses classified as the IPv4 address they carry. */
function rangeOf(address: string): string {
  return ipaddr.process(address).range();
}

/** A public address is one ipaddr.js calls plain `unicast`: every special-purpose range (NAT64, 6to4, Teredo…) is not. */
function isPublic(address: string): boolean {
  return rangeOf(address) === 'unicast';
}

type AllowEntry =
  | { kind: 'host'; hostname: string; port: string | null }
  | { kind: 'address'; address: ipaddr.IPv4 | ipaddr.IPv6; port: string | null }
  | { kind: 'range'; range: [ipaddr.IPv4 | ipaddr.IPv6, number] };

function bare(hostname: string): string {
  return hostname.replace(/^\[|\]$/g, '');
}

/**
 * Reads one `web.allow_private_hosts` entry: a host name, an IP address (any spelling a URL accepts), either with an
 * optional `:port`, or a CIDR range (`10.0.0.0/8`, `fd00::/8`).
 */
function parseAllowEntry(entry: string): AllowEntry | null {
  const trimmed = entry.trim().toLowerCase();
  if (trimmed === '') return null;
  if (trimmed.includes('/')) {
    try {
      const [address, bits] = ipaddr.parseCIDR(trimmed);
      return { kind: 'range', range: [address.kind() === 'ipv6' ? ipaddr.process(address.toString()) : address, bits] };
    } catch {
      return null;
    }
  }
  if (isIP(trimmed) !== 0) return { kind: 'address', address: ipaddr.process(trimmed), port: null };
  let url: URL;
  try {
    // The URL parser spells the host as a fetched URL's host is spelled (2130706433 → 127.0.0.1, [::1] → ::1).
    url = new URL(`http://${trimmed}/`);
  } catch {
    return null;
  }
  // A port written out, 80 included (the URL parser drops a scheme's default port).
  const written = /^(?:\[[^\]]*\]|[^:]*):(\d+)$/.exec(trimmed)?.[1];
  const port = written === undefined ? null : String(Number(written));
  const hostname = bare(url.hostname).replace(/\.$/, '');
  if (isIP(hostname) !== 0) return { kind: 'address', address: ipaddr.process(hostname), port };
  return { kind: 'host', hostname, port };
}

function portOf(url: URL): string {
  return url.port !== '' ? url.port : url.protocol === 'https:' ? '443' : '80';
}

function sameAddress(left: ipaddr.IPv4 | ipaddr.IPv6, right: ipaddr.IPv4 | ipaddr.IPv6): boolean {
  return left.kind() === right.kind() && left.toNormalizedString() === right.toNormalizedString();
}

const systemLookup: HostLookup = async (hostname) => {
  const found = await dnsLookup(hostname, { all: true, verbatim: true });
  return found.map((entry) => ({ address: entry.address, family: entry.family === 6 ? 6 : 4 }));
};

/** Options of {@link createAddressGuard}. */
export interface AddressGuardOptions {
  /** `web.allow_private_hosts`: hosts, addresses and ranges that may be private. */
  allow: readonly string[];
  /** The resolver; default the system's (`dns.lookup`, as a connection would resolve). */
  lookup?: HostLookup;
}

/** Checks the destination of each URL web_fetch is about to request (spec/core.md §11.11). */
export interface AddressGuard {
  /**
   * Resolves the URL's host and returns the address to connect to; rejects with {@link PrivateAddressRefused} when
   * any address the host has is not public and neither the host nor that address is allowed.
   */
  check(url: URL): Promise<CheckedTarget>;
}

/** Creates the guard that keeps web_fetch away from loopback, private, link-local and other non-public addresses. */
export function createAddressGuard(options: AddressGuardOptions): AddressGuard {
  const entries = options.allow.map(parseAllowEntry).filter((entry): entry is AllowEntry => entry !== null);
  const lookup = options.lookup ?? systemLookup;
  const hostAllowed = (hostname: string, port: string) =>
    entries.some(
      (entry) => entry.kind === 'host' && entry.hostname === hostname && (entry.port === null || entry.port === port),
    );
  const addressAllowed = (address: string, port: string) => {
    const parsed = ipaddr.process(address);
    return entries.some((entry) => {
      if (entry.kind === 'address')
        return sameAddress(entry.address, parsed) && (entry.port === null || entry.port === port);
      if (entry.kind === 'range') return parsed.kind() === entry.range[0].kind() && parsed.match(entry.range);
      return false;
    });
  };
  return {
    async check(url) {
      const hostname = bare(url.hostname).replace(/\.$/, '');
      const port = portOf(url);
      let addresses: ResolvedAddress[];
      if (isIP(hostname) !== 0) {
        addresses = [{ address: hostname, family: isIP(hostname) === 6 ? 6 : 4 }];
      } else {
        try {
          addresses = await lookup(hostname);
        } catch (error) {
          throw new PrivateAddressRefused(
            `Could not resolve ${hostname}: ${error instanceof Error ? error.message : String(error)}`,
          );
        }
        if (addresses.length === 0) throw new PrivateAddressRefused(`Could not resolve ${hostname}: no address.`);
      }
      const allowedByName = hostAllowed(hostname, port);
      for (const { address } of addresses) {
        if (isIP(address) === 0)
          throw new PrivateAddressRefused(`${hostname} resolved to "${address}", not an address.`);
        if (allowedByName || isPublic(address) || addressAllowed(address, port)) continue;
        const range = rangeOf(address);
        const named = RANGE_NAMES[range] ?? `special-purpose (${range})`;
        const shown = hostname === address ? address : `${hostname} (${address})`;
        throw new PrivateAddressRefused(
          `Refused to fetch ${url.href}: ${shown} is a ${named} address. web_fetch reaches public addresses only; web.allow_private_hosts opens a host.`,
        );
      }
      // Every address passed: the connection goes to the first, the one a connection would have tried first.
      const chosen = addresses[0] as ResolvedAddress;
      return { hostname, address: chosen.address, family: chosen.family };
    },
  };
}
