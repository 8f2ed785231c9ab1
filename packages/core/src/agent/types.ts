/** Kept so existing imports inside agent/ keep working; the interfaces live in src/api/types.ts (ADR 0015). */
export type {
  Agent,
  AgentStatus,
  CompressionResult,
  ModelSwitchResult,
  OpenSessionOptions,
  ResumeOptions,
  SessionOptions,
  SubagentInfo,
  TurnRun,
  UsageSnapshot,
} from '../api/types.js';
