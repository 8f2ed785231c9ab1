import * as z from 'zod';

/** `TranscriptMessage`: one row of the display projection (§2.7). */
export const TranscriptMessageSchema = z.object({
  role: z.enum(['user', 'assistant', 'tool']),
  text: z.string().optional(),
  content: z.unknown().optional(),
  tool_call_id: z.string().optional(),
  name: z.string().optional(),
  context: z.string().optional(),
  args: z.record(z.string(), z.unknown()).optional(),
  timestamp: z.number().optional(),
  row_id: z.number().int().nullable(),
  display_kind: z.string().optional(),
  display_metadata: z.record(z.string(), z.unknown()).optional(),
  reasoning: z.string().optional(),
});
/** One row of the display projection. */
export type TranscriptMessage = z.infer<typeof TranscriptMessageSchema>;

/** `Usage`: token accounting of one session (§2.7). */
export const UsageSchema = z.object({
  model: z.string(),
  input: z.number().int(),
  output: z.number().int(),
  reasoning: z.number().int(),
  prompt: z.number().int(),
  completion: z.number().int(),
  total: z.number().int(),
  calls: z.number().int(),
  cache_read: z.number().int().optional(),
  cache_write: z.number().int().optional(),
  context_used: z.number().int().optional(),
  context_max: z.number().int().optional(),
  context_percent: z.number().int().optional(),
  compressions: z.number().int().optional(),
});
/** Token accounting of one session. */
export type Usage = z.infer<typeof UsageSchema>;

/** `SessionLiveInfo`: the payload of `session.info` (§2.7). */
export const SessionLiveInfoSchema = z.object({
  model: z.string(),
  provider: z.string(),
  reasoning_effort: z.string().optional(),
  fast: z.boolean().optional(),
  yolo: z.boolean().optional(),
  approval_mode: z.string().optional(),
  tools: z.record(z.string(), z.array(z.string())),
  skills: z.record(z.string(), z.array(z.string())),
  cwd: z.string(),
  branch: z.string().nullable(),
  project: z.null(),
  running: z.boolean().optional(),
  turn_started_at: z.number().nullable().optional(),
  title: z.string().optional(),
  stored_session_id: z.string().optional(),
  version: z.string().optional(),
  usage: UsageSchema.optional(),
  profile_name: z.string(),
  mcp_servers: z
    .array(z.object({ name: z.string(), status: z.string(), tool_count: z.number(), error: z.string().optional() }))
    .optional(),
  lazy: z.boolean().optional(),
});
/** Live information about a session. */
export type SessionLiveInfo = z.infer<typeof SessionLiveInfoSchema>;

/** `PendingApproval` (§2.7). */
export const PendingApprovalSchema = z.object({
  request_id: z.string(),
  command: z.string(),
  description: z.string(),
  choices: z.array(z.enum(['once', 'session', 'always', 'deny'])),
  allow_permanent: z.boolean().optional(),
  /** What `always` allows from then on: exactly this command (ADR 0034). */
  always_scope: z.string().optional(),
  allow_session: z.boolean().optional(),
  smart_denied: z.boolean().optional(),
  tool_name: z.string().optional(),
  pattern_key: z.string().optional(),
  pattern_keys: z.array(z.string()).optional(),
});
/** An approval waiting for an answer. */
export type PendingApproval = z.infer<typeof PendingApprovalSchema>;

/** An open server request as listed in snapshots (§6.2). */
export const OpenRequestSchema = z.object({
  id: z.string(),
  method: z.string(),
  params: z.record(z.string(), z.unknown()),
});
/** An open server request. */
export type OpenRequest = z.infer<typeof OpenRequestSchema>;

/** The payload shared by the `subagent.*` events and `SubagentRecord` (§5.5). */
export const SubagentPayloadSchema = z.object({
  goal: z.string(),
  task_count: z.number().int(),
  task_index: z.number().int(),
  subagent_id: z.string().optional(),
  parent_id: z.string().optional(),
  child_session_id: z.string().optional(),
  delegation_id: z.string().optional(),
  depth: z.number().int().optional(),
  model: z.string().optional(),
  toolsets: z.array(z.string()).optional(),
  tool_name: z.string().optional(),
  tool_preview: z.string().optional(),
  text: z.string().optional(),
  status: z.string().optional(),
  summary: z.string().optional(),
  duration_seconds: z.number().optional(),
  tool_count: z.number().optional(),
  input_tokens: z.number().optional(),
  output_tokens: z.number().optional(),
  reasoning_tokens: z.number().optional(),
  api_calls: z.number().optional(),
});
/** The latest state of one delegated child. */
export type SubagentPayload = z.infer<typeof SubagentPayloadSchema>;
