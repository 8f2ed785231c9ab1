/**
 * Providers and models of @hermes/core (spec/core.md §10, §17.2): model specs, the provider
 * catalog, request options, model metadata and prices.
 *
 * @packageDocumentation
 */
export { isLocalHost, normalizeBaseUrl } from './base-url.js';
export {
  BUILTIN_PROVIDERS,
  type BuiltinProviderDescriptor,
  compatibleProviderName,
  createSdkAdapter,
  createSdkModel,
  type ProviderPackage,
} from './builtin.js';
export {
  createProviderCatalog,
  type ProviderCatalog,
  type ProviderCatalogOptions,
  type ProviderCatalogSource,
  publicRoute,
  type ResolveOptions,
} from './catalog.js';
export {
  DEFAULT_CONTEXT_WINDOW,
  findKnownModel,
  KNOWN_MODELS,
  type KnownModel,
  knownContextWindow,
  normalizeModelName,
} from './metadata.js';
export {
  BUILTIN_PROVIDER_IDS,
  type BuiltinProviderId,
  canonicalProvider,
  type ModelSpecContext,
  type ParsedModelSpec,
  PROVIDER_ALIASES,
  parseModelSpec,
  providerNameIndex,
} from './model-spec.js';
export {
  type CallCost,
  computeCost,
  costStatusFor,
  formatUsd,
  type ModelPrice,
  PRICE_TABLE,
  PRICE_TABLE_DATE,
  priceFor,
  weakestCostStatus,
} from './pricing.js';
export { ANTHROPIC_THINKING_BUDGETS, providerOptionsFor } from './request-options.js';
export type { ProviderAdapter, ResolvedRoute } from './types.js';
