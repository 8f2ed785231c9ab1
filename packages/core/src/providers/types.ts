import type { LanguageModelV3 } from '@ai-sdk/provider';
import type { ModelRoute } from '../types.js';

/** A route with what a provider factory needs (spec/core.md §10.3). */
export interface ResolvedRoute extends ModelRoute {
  /** Handed to `create()` only; never logged or stored. */
  apiKey: string | null;
  strictAlternation: boolean;
  contextWindow: number;
}

/** A model provider: built-in, named endpoint, or registered through the `providers` host option. */
export interface ProviderAdapter {
  id: string;
  aliases?: string[];
  strictAlternation?: boolean;
  /** No key; cost status 'included'. */
  local?: boolean;
  requiresKey?: boolean;
  create(route: ResolvedRoute, fetch?: typeof globalThis.fetch): LanguageModelV3;
}
