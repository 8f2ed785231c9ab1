import type { PricingConfig } from '../config/schema.js';
import type { CostStatus, Usage } from '../types.js';
import { BoundedMemo } from '../util/bounded-memo.js';
import { normalizeModelName } from './metadata.js';

/** Date of the shipped price table: prices change, and a displayed estimate should say how old its source is. */
export const PRICE_TABLE_DATE = '2025-11-01';

/** USD per million tokens. */
export interface ModelPrice {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  /** `config` when any rate comes from `pricing.<spec>`, else `table`. */
  source: 'config' | 'table';
  /** Date of the table the rates come from; absent for prices that are entirely configured. */
  date?: string;
}

interface TablePrice {
  provider: string;
  model: string;
  input: number;
  output: number;
  cacheRead?: number;
  cacheWrite?: number;
}

/** List prices per million tokens as of {@link PRICE_TABLE_DATE}. Missing cache rates mean the input rate. */
export const PRICE_TABLE: readonly TablePrice[] = [
  { provider: 'anthropic', model: 'claude-opus-4-5', input: 5, output: 25, cacheRead: 0.5, cacheWrite: 6.25 },
  { provider: 'anthropic', model: 'claude-sonnet-4-5', input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
  { provider: 'anthropic', model: 'claude-haiku-4-5', input: 1, output: 5, cacheRead: 0.1, cacheWrite: 1.25 },
  { provider: 'anthropic', model: 'claude-opus-4-1', input: 15, output: 75, cacheRead: 1.5, cacheWrite: 18.75 },
  { provider: 'anthropic', model: 'claude-sonnet-4', input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
  { provider: 'openai', model: 'gpt-5', input: 1.25, output: 10, cacheRead: 0.125 },
  { provider: 'openai', model: 'gpt-5-mini', input: 0.25, output: 2, cacheRead: 0.025 },
  { provider: 'openai', model: 'gpt-4.1', input: 2, output: 8, cacheRead: 0.5 },
  { provider: 'openai', model: 'gpt-4.1-mini', input: 0.4, output: 1.6, cacheRead: 0.1 },
  { provider: 'openai', model: 'gpt-4o', input: 2.5, output: 10, cacheRead: 1.25 },
  { provider: 'openai', model: 'gpt-4o-mini', input: 0.15, output: 0.6, cacheRead: 0.075 },
  { provider: 'openai', model: 'o3', input: 2, output: 8, cacheRead: 0.5 },
  { provider: 'openai', model: 'o4-mini', input: 1.1, output: 4.4, cacheRead: 0.275 },
  {
    provider: 'openrouter',
    model: 'anthropic/claude-sonnet-4.5',
    input: 3,
    output: 15,
    cacheRead: 0.3,
    cacheWrite: 3.75,
  },
  { provider: 'openrouter', model: 'openai/gpt-4.1', input: 2, output: 8, cacheRead: 0.5 },
];

/**
 * The table entry of a route. Matching stays within the provider and accepts only a dated suffix
 * (`claude-sonnet-4-5-20250929`), because variants such as openrouter's `:free` cost something else.
 */
function tablePrice(provider: string, model: string): TablePrice | undefined {
  // Asked on every turn for the few models in use.
  return priced.get(`${provider}\0${model}`, () => searchPrices(provider, model));
}
const priced = new BoundedMemo<string, TablePrice | undefined>();

function searchPrices(provider: string, model: string): TablePrice | undefined {
  const wanted = normalizeModelName(model);
  const candidates = PRICE_TABLE.filter((entry) => entry.provider === provider);
  const exact = candidates.find((entry) => normalizeModelName(entry.model) === wanted);
  if (exact !== undefined) return exact;
  return candidates.find((entry) => {
    const name = normalizeModelName(entry.model);
    return wanted.startsWith(`${name}-`) && /^[\d-]+$/.test(wanted.slice(name.length + 1));
  });
}

function splitSpec(spec: string): { provider: string; model: string } {
  const colon = spec.indexOf(':');
  return colon < 0 ? { provider: '', model: spec } : { provider: spec.slice(0, colon), model: spec.slice(colon + 1) };
}

/**
 * The price of a canonical `provider:model` spec (spec/core.md §17.2): `pricing.<spec>` from the
 * configuration over the shipped table, rate by rate. Cache rates default to the input rate. Returns
 * null when neither source knows the model.
 */
export function priceFor(spec: string, overrides: Readonly<Record<string, PricingConfig>> = {}): ModelPrice | null {
  const { provider, model } = splitSpec(spec);
  const configured = overrides[spec];
  const table = tablePrice(provider, model);
  if (configured === undefined && table === undefined) return null;
  const input = configured?.input ?? table?.input ?? 0;
  const price: ModelPrice = {
    input,
    output: configured?.output ?? table?.output ?? 0,
    cacheRead: configured?.cache_read ?? table?.cacheRead ?? input,
    cacheWrite: configured?.cache_write ?? table?.cacheWrite ?? input,
    source: configured === undefined ? 'table' : 'config',
  };
  if (table !== undefined) price.date = PRICE_TABLE_DATE;
  return price;
}

/**
 * Cost in USD of a usage at a price (spec/core.md §17.2): uncached input × input rate + cache reads
 * × cache-read rate + cache writes × cache-write rate + output × output rate, rates per million.
 */
export function computeCost(
  usage: Pick<Usage, 'inputTokens' | 'outputTokens' | 'cacheReadTokens' | 'cacheWriteTokens'>,
  price: Pick<ModelPrice, 'input' | 'output'> & Partial<Pick<ModelPrice, 'cacheRead' | 'cacheWrite'>>,
): number {
  const cacheReadRate = price.cacheRead ?? price.input;
  const cacheWriteRate = price.cacheWrite ?? price.input;
  // Cache figures are subsets of the input; a provider that reports them inconsistently does not
  // produce a negative uncached share.
  const uncached = Math.max(0, usage.inputTokens - usage.cacheReadTokens - usage.cacheWriteTokens);
  return (
    (uncached * price.input +
      usage.cacheReadTokens * cacheReadRate +
      usage.cacheWriteTokens * cacheWriteRate +
      usage.outputTokens * price.output) /
    1_000_000
  );
}

/** Cost and its status for one call. */
export interface CallCost {
  costUsd: number;
  status: CostStatus;
}

/**
 * Status and cost of one call (spec/core.md §17.2): a local provider is `included` at 0; a cost the
 * provider reported is `actual`; a known price gives `estimated`; otherwise `unknown`, counted as 0.
 */
export function costStatusFor(input: {
  usage: Pick<Usage, 'inputTokens' | 'outputTokens' | 'cacheReadTokens' | 'cacheWriteTokens'>;
  price: ModelPrice | null;
  local: boolean;
  /** Cost the provider reported for the call, when it did. */
  reportedCostUsd?: number | null | undefined;
}): CallCost {
  if (input.local) return { costUsd: 0, status: 'included' };
  if (typeof input.reportedCostUsd === 'number' && Number.isFinite(input.reportedCostUsd)) {
    return { costUsd: input.reportedCostUsd, status: 'actual' };
  }
  if (input.price === null) return { costUsd: 0, status: 'unknown' };
  return { costUsd: computeCost(input.usage, input.price), status: 'estimated' };
}

const STATUS_STRENGTH: Record<CostStatus, number> = { unknown: 0, estimated: 1, actual: 2, included: 2 };

/**
 * The weaker of two statuses, for a session made of several calls: `unknown` < `estimated` <
 * `actual` = `included`. Between `actual` and `included` the result is `actual`, since the sum then
 * contains reported costs.
 */
export function weakestCostStatus(first: CostStatus, second: CostStatus): CostStatus {
  const difference = STATUS_STRENGTH[first] - STATUS_STRENGTH[second];
  if (difference < 0) return first;
  if (difference > 0) return second;
  return first === second ? first : 'actual';
}

/** `$0.0042` below one cent, `$1.23` otherwise (spec/core.md §17.2). */
export function formatUsd(value: number): string {
  const sign = value < 0 ? '-' : '';
  const magnitude = Math.abs(value);
  return `${sign}$${magnitude.toFixed(magnitude < 0.01 ? 4 : 2)}`;
}
