import { isIP } from 'node:net';
import { HermesError } from '../errors.js';

/** True for a host on this machine or a private network (where OpenAI-compatible servers usually listen). */
export function isLocalHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost') || host.endsWith('.local')) return true;
  if (host === 'host.docker.internal') return true;
  if (isIP(host) === 6) return host === '::1' || host === '::' || host.startsWith('fc') || host.startsWith('fd');
  if (isIP(host) !== 4) return false;
  const [first = 0, second = 0] = host.split('.').map(Number);
  return (
    first === 127 ||
    first === 10 ||
    (first === 0 && host === '0.0.0.0') ||
    (first === 192 && second === 168) ||
    (first === 172 && second >= 16 && second <= 31)
  );
}

/**
 * Normalizes a configured base URL (spec/core.md §10.3): trailing slashes removed, and `/v1`
 * appended to a local URL given without a path (`http://localhost:11434` → `…/v1`), which is how
 * local servers are commonly written. `source` names the setting in the error for a malformed URL.
 */
export function normalizeBaseUrl(value: string, source: string): string {
  // A route is resolved twice per turn (the agent's model, then the turn's), each parsing the same URL (issue 34).
  const known = normalizedBaseUrls.get(value);
  if (known !== undefined) return known;
  const normalized = normalizeNewBaseUrl(value, source);
  if (normalizedBaseUrls.size >= NORMALIZED_BASE_URLS_KEPT) normalizedBaseUrls.clear();
  normalizedBaseUrls.set(value, normalized);
  return normalized;
}

/** Base URLs already normalized, by the value as configured (a malformed one throws each time, with its source). */
const normalizedBaseUrls = new Map<string, string>();
const NORMALIZED_BASE_URLS_KEPT = 256;

function normalizeNewBaseUrl(value: string, source: string): string {
  const trimmed = value.trim();
  let url: URL;
  try {
    url = new URL(trimmed);
  } catch (error) {
    throw new HermesError('config_invalid', `${source}: expected a URL such as http://localhost:8080/v1`, {
      cause: error,
    });
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new HermesError('config_invalid', `${source}: expected an http or https URL`);
  }
  const withoutSlash = trimmed.replace(/\/+$/, '');
  if ((url.pathname === '/' || url.pathname === '') && url.search === '' && isLocalHost(url.hostname)) {
    return `${withoutSlash}/v1`;
  }
  return withoutSlash;
}
