/** Kept so existing imports inside agent/ keep working; the turn types live in src/turn-types.ts (ADR 0015). */
export type {
  ClientTool,
  ClientToolResult,
  InterruptOptions,
  RunTurnOptions,
  SteerResult,
  TurnInput,
  TurnResult,
} from '../turn-types.js';
