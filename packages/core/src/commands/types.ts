/** Kept so existing imports keep working; the interfaces live in src/api/types.ts (ADR 0015). */
export type { CommandDef, CommandRegistry, CommandResult } from '../api/types.js';
