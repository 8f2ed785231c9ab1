import type { JsonValue } from '../types.js';

/** A value the host knows is secret, with the name shown in its place. */
export interface NamedSecret {
  /** Shown as `[REDACTED:<name>]` (a variable name such as `API_SERVER_KEY`). */
  name: string;
  value: string;
}

/**
 * Secrets shorter than this are not redacted: replacing every occurrence of a short value (a
 * password like `abc`) would mangle ordinary output and protect nothing worth protecting.
 */
export const MIN_REDACTED_SECRET_LENGTH = 8;

/**
 * Replaces the values of the host's secrets with `[REDACTED:<name>]` in tool output before the model,
 * the store or an event sees it. Longer values are replaced first, so a secret that contains another
 * (a database URL and its password) is named by the longer one.
 */
export class SecretRedactor {
  private readonly secrets: NamedSecret[];

  constructor(secrets: Iterable<NamedSecret>) {
    const byValue = new Map<string, string>();
    for (const secret of secrets) {
      if (secret.value.length < MIN_REDACTED_SECRET_LENGTH || byValue.has(secret.value)) continue;
      byValue.set(secret.value, secret.name);
    }
    this.secrets = [...byValue.entries()]
      .map(([value, name]) => ({ name, value }))
      .sort((left, right) => right.value.length - left.value.length);
  }

  /** True when there is nothing to redact. */
  get empty(): boolean {
    return this.secrets.length === 0;
  }

  /** The text with every secret value replaced. */
  redact(text: string): string {
    if (this.secrets.length === 0 || text.length < MIN_REDACTED_SECRET_LENGTH) return text;
    let result = text;
    for (const secret of this.secrets) {
      if (result.includes(secret.value)) result = result.split(secret.value).join(`[REDACTED:${secret.name}]`);
    }
    return result;
  }

  /** A JSON value with every string in it redacted (structured tool results, diffs). */
  redactJson<T extends JsonValue | undefined>(value: T): T {
    if (this.secrets.length === 0 || value === undefined || value === null) return value;
    if (typeof value === 'string') return this.redact(value) as T;
    if (Array.isArray(value)) return value.map((item) => this.redactJson(item)) as T;
    if (typeof value === 'object') {
      const result: Record<string, JsonValue> = {};
      for (const [key, item] of Object.entries(value)) result[key] = this.redactJson(item as JsonValue);
      return result as T;
    }
    return value;
  }

  /**
   * A redactor for text that arrives in chunks (live command output): each call returns what is
   * safe to show, holding back a tail that could be the start of a secret cut by the chunk
   * boundary; `end()` returns the rest.
   */
  stream(): { push(chunk: string): string; end(): string } {
    let held = '';
    return {
      push: (chunk) => {
        const text = this.redact(held + chunk);
        const keep = this.partialSecretSuffix(text);
        held = text.slice(text.length - keep);
        return text.slice(0, text.length - keep);
      },
      end: () => {
        const rest = this.redact(held);
        held = '';
        return rest;
      },
    };
  }

  /** Length of the longest suffix of `text` that is a proper prefix of some secret. */
  private partialSecretSuffix(text: string): number {
    let longest = 0;
    for (const secret of this.secrets) {
      const most = Math.min(secret.value.length - 1, text.length);
      for (let length = most; length > longest; length -= 1) {
        if (text.endsWith(secret.value.slice(0, length))) {
          longest = length;
          break;
        }
      }
    }
    return longest;
  }
}
