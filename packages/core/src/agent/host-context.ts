/** Kept so existing imports keep working; the interface lives in ./internals.ts (ADR 0015). */
export type { HostContext } from './internals.js';
