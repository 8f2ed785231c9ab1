import { BoundedMemo } from '../util/bounded-memo.js';

/** Context window used when nothing else is known (spec/core.md §10.4). */
export const DEFAULT_CONTEXT_WINDOW = 128_000;

/** A model of the shipped table. */
export interface KnownModel {
  provider: string;
  model: string;
  contextWindow: number;
}

/**
 * Well-known models with their context windows (spec/core.md §10.4). Entries for providers that
 * need a key are offered by `listModels()` once that key is available; the others only give
 * context windows.
 */
export const KNOWN_MODELS: readonly KnownModel[] = [
  { provider: 'anthropic', model: 'claude-opus-4-5', contextWindow: 200_000 },
  { provider: 'anthropic', model: 'claude-sonnet-4-5', contextWindow: 200_000 },
  { provider: 'anthropic', model: 'claude-haiku-4-5', contextWindow: 200_000 },
  { provider: 'anthropic', model: 'claude-opus-4-1', contextWindow: 200_000 },
  { provider: 'anthropic', model: 'claude-sonnet-4', contextWindow: 200_000 },
  { provider: 'openai', model: 'gpt-5', contextWindow: 400_000 },
  { provider: 'openai', model: 'gpt-5-mini', contextWindow: 400_000 },
  { provider: 'openai', model: 'gpt-4.1', contextWindow: 1_047_576 },
  { provider: 'openai', model: 'gpt-4.1-mini', contextWindow: 1_047_576 },
  { provider: 'openai', model: 'gpt-4o', contextWindow: 128_000 },
  { provider: 'openai', model: 'gpt-4o-mini', contextWindow: 128_000 },
  { provider: 'openai', model: 'o3', contextWindow: 200_000 },
  { provider: 'openai', model: 'o4-mini', contextWindow: 200_000 },
  { provider: 'openrouter', model: 'anthropic/claude-sonnet-4.5', contextWindow: 200_000 },
  { provider: 'openrouter', model: 'openai/gpt-4.1', contextWindow: 1_047_576 },
  { provider: 'openrouter', model: 'google/gemini-2.5-pro', contextWindow: 1_048_576 },
  { provider: 'openrouter', model: 'meta-llama/llama-3.3-70b-instruct', contextWindow: 131_072 },
  { provider: 'ollama', model: 'qwen2.5-coder', contextWindow: 32_768 },
  { provider: 'ollama', model: 'llama3.3', contextWindow: 131_072 },
];

/**
 * Lower case, vendor prefix (`anthropic/`) dropped, dots in version numbers as dashes: so
 * `anthropic/claude-sonnet-4.5` and `claude-sonnet-4-5` name the same model.
 */
export function normalizeModelName(model: string): string {
  const lower = model.trim().toLowerCase();
  const slash = lower.lastIndexOf('/');
  return (slash >= 0 ? lower.slice(slash + 1) : lower).replace(/(\d)\.(\d)/g, '$1-$2');
}

/**
 * Finds the table entry for a model id: exact match first, then the longest table name that is a
 * prefix of the id at a boundary (`claude-sonnet-4-5-20250929`, `qwen2.5-coder:32b`, `…:free`).
 */
export function findKnownModel<T extends { model: string }>(model: string, table: readonly T[]): T | undefined {
  let memo = lookups.get(table) as TableMemo<T> | undefined;
  if (memo === undefined) {
    memo = { names: table.map((entry) => normalizeModelName(entry.model)), found: new BoundedMemo() };
    lookups.set(table, memo as TableMemo<{ model: string }>);
  }
  const names = memo.names;
  return memo.found.get(model, () => searchTable(model, table, names));
}

/** A table's normalized names, and the entries found for the model ids asked so far (every turn asks). */
interface TableMemo<T> {
  names: string[];
  found: BoundedMemo<string, T | undefined>;
}
const lookups = new WeakMap<readonly { model: string }[], TableMemo<{ model: string }>>();

function searchTable<T extends { model: string }>(model: string, table: readonly T[], names: string[]): T | undefined {
  const wanted = normalizeModelName(model);
  let best: T | undefined;
  let bestLength = -1;
  for (const [index, entry] of table.entries()) {
    const name = names[index] as string;
    if (name === wanted) return entry;
    const boundary = wanted.charAt(name.length);
    if (
      wanted.startsWith(name) &&
      (boundary === '-' || boundary === ':' || boundary === '@') &&
      name.length > bestLength
    ) {
      best = entry;
      bestLength = name.length;
    }
  }
  return best;
}

/** Context window of a model from the shipped table, or undefined when the table does not know it. */
export function knownContextWindow(model: string): number | undefined {
  return findKnownModel(model, KNOWN_MODELS)?.contextWindow;
}
