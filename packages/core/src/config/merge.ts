/** True for a plain object (a YAML mapping), not an array or null. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/**
 * Layers `top` over `base`: mappings merge key by key, everything else (lists included) is
 * replaced, and `undefined` in `top` leaves the base value alone. Inputs are not modified.
 */
export function deepMerge(base: unknown, top: unknown): unknown {
  if (top === undefined) return base;
  if (!isPlainObject(base) || !isPlainObject(top)) return top;
  const result: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(top)) {
    result[key] = deepMerge(base[key], value);
  }
  return result;
}
