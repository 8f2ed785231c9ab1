/**
 * A memo for lookups whose keys come from configuration and requests: a handful in practice, so it
 * simply forgets everything once it holds `limit` entries rather than tracking recency.
 */
export class BoundedMemo<K, V> {
  private readonly entries = new Map<K, V>();

  constructor(private readonly limit = 1_000) {}

  /** Whether `key` has a remembered value (which may be `undefined`). */
  has(key: K): boolean {
    return this.entries.has(key);
  }

  /** The value remembered for `key`, if any. */
  peek(key: K): V | undefined {
    return this.entries.get(key);
  }

  set(key: K, value: V): V {
    if (this.entries.size >= this.limit && !this.entries.has(key)) this.entries.clear();
    this.entries.set(key, value);
    return value;
  }

  /** The value remembered for `key`, else `compute(key)`, remembered (`undefined` results included). */
  get(key: K, compute: (key: K) => V): V {
    if (this.entries.has(key)) return this.entries.get(key) as V;
    return this.set(key, compute(key));
  }
}
