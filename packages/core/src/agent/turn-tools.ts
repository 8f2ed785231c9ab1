import type { ZodType } from 'zod';
import type { AgentEventPayloads } from '../events.js';
import type { SecretRedactor } from '../security/secret-redactor.js';
import type { NewMessage } from '../store/types.js';
import { capToolResult } from '../tools/index.js';
import type { ToolContext, ToolDefinition, ToolResult } from '../tools/types.js';
import type { JsonObject, JsonValue } from '../types.js';
import { estimateTokens } from '../usage.js';
import { cancelledToolText } from './interrupt.js';
import { type ToolCallRequest, TurnBase } from './turn-base.js';

/** Outcome of one tool call. */
export interface CallOutcome {
  status: 'completed' | 'failed' | 'denied' | 'cancelled';
  result: ToolResult;
  truncated: boolean;
  durationMs: number;
}

/** A tool call checked against its tool before it runs. */
export interface PreparedCall {
  request: ToolCallRequest;
  index: number;
  batchSize: number;
  tool: ToolDefinition | undefined;
  args: unknown;
  problem: string | null;
  parallelSafe: boolean;
}

/** The tool stage of a turn (spec/core.md §7.8, §7.9): runs a batch of calls and delivers steer text. */
export abstract class TurnTools extends TurnBase {
  /** Runs a tool batch (spec/core.md §7.8). */
  protected async runToolBatch(calls: ToolCallRequest[], tools: ToolDefinition[]): Promise<void> {
    const byName = new Map(tools.map((tool) => [tool.name, tool]));
    const prepared = calls.map((call, index) => this.prepareCall(call, index, calls.length, byName));
    // Segments: runs of consecutive parallel-safe calls, every other call alone.
    const segments: (typeof prepared)[] = [];
    for (const call of prepared) {
      const previous = segments[segments.length - 1];
      if (call.parallelSafe && previous?.[0]?.parallelSafe) previous.push(call);
      else segments.push([call]);
    }
    const results: (CallOutcome | null)[] = calls.map(() => null);
    let nextToStore = 0;
    const storeReady = async () => {
      const rows: NewMessage[] = [];
      const indexes: number[] = [];
      while (nextToStore < calls.length && results[nextToStore] !== null) {
        const outcome = results[nextToStore] as CallOutcome;
        const call = prepared[nextToStore];
        if (!call) break;
        rows.push(this.toolRow(call.request, outcome));
        indexes.push(nextToStore);
        nextToStore += 1;
      }
      if (rows.length === 0) return new Map<number, number | null>();
      const ids = await this.appendRows(rows);
      this.storedAnything = true;
      return new Map(indexes.map((index, position) => [index, ids[position] ?? null]));
    };

    this.setPhase('tools', 'Running tools…');
    for (const segment of segments) {
      const parallel = segment.length > 1;
      const limit = Math.max(1, this.settings.agent.max_parallel_tools);
      let cursor = 0;
      const worker = async () => {
        while (cursor < segment.length) {
          const call = segment[cursor];
          cursor += 1;
          if (!call) return;
          const outcome = await this.executeCall(call, parallel);
          results[call.index] = outcome;
          const stored = await storeReady();
          this.emitToolEnd(call, outcome, stored.get(call.index) ?? null);
        }
      };
      await Promise.all(Array.from({ length: Math.min(limit, segment.length) }, worker));
    }
  }

  protected prepareCall(
    call: ToolCallRequest,
    index: number,
    batchSize: number,
    byName: Map<string, ToolDefinition>,
  ): PreparedCall {
    // Only a tool offered to the model in this step may run: a disabled or unoffered tool named by the model is unknown.
    const tool = byName.get(call.name);
    let args: unknown = null;
    let problem: string | null = null;
    if (!tool) problem = `Unknown tool "${call.name}". Available tools: ${[...byName.keys()].join(', ')}.`;
    else {
      try {
        args = call.input.trim() === '' ? {} : JSON.parse(call.input);
      } catch (error) {
        problem = `The arguments of ${call.name} are not valid JSON: ${(error as Error).message}`;
      }
      if (problem === null) {
        const validated = validateArguments(tool, args);
        if (validated.ok) args = validated.value;
        else problem = `Invalid arguments for ${call.name}: ${validated.message}`;
      }
    }
    let parallelSafe = false;
    if (tool && problem === null && !tool.interactive) {
      try {
        parallelSafe = typeof tool.readOnly === 'function' ? tool.readOnly(args) : tool.readOnly;
      } catch {
        parallelSafe = false;
      }
    }
    return { request: call, index, batchSize, tool, args, problem, parallelSafe };
  }

  protected async executeCall(call: PreparedCall, parallel: boolean): Promise<CallOutcome> {
    const startedAt = this.agent.host.clock.now();
    const tool = call.tool;
    const displayArgs = (call.args ?? safeJson(call.request.input)) as JsonValue;
    let title = call.request.name;
    let locations: { path: string; line?: number }[] = [];
    let kind: AgentEventPayloads['tool.start']['kind'] = 'other';
    if (tool && call.problem === null) {
      try {
        kind = typeof tool.kind === 'function' ? tool.kind(call.args) : tool.kind;
        const display = tool.display?.(call.args, { cwd: this.agent.cwd });
        if (display) {
          title = display.title;
          locations = display.locations ?? [];
        }
      } catch {
        // display is cosmetic; keep the defaults
      }
    }
    this.emit('tool.start', {
      callId: call.request.id,
      name: call.request.name,
      args: displayArgs,
      kind,
      title,
      locations,
      parallel,
      batchIndex: call.index,
      batchSize: call.batchSize,
    });
    const interrupted = this.interruptReason;
    if (interrupted)
      return {
        status: 'cancelled',
        result: { content: cancelledToolText(interrupted) },
        truncated: false,
        durationMs: 0,
      };
    if (!tool || call.problem !== null) {
      return {
        status: 'failed',
        result: { content: `Error: ${call.problem}`, isError: true },
        truncated: false,
        durationMs: 0,
      };
    }
    const toolController = new AbortController();
    const signal = AbortSignal.any([this.signal, toolController.signal]);
    const context: ToolContext = this.agent.toolContext(this, call.request.id, signal);
    let result: ToolResult;
    let status: CallOutcome['status'];
    try {
      result = await tool.execute(call.args, context);
      status = result.status ?? (result.isError ? 'failed' : 'completed');
      if (this.interruptReason && status !== 'completed') status = 'cancelled';
    } catch (error) {
      const reason = this.interruptReason;
      if (reason) {
        result = { content: cancelledToolText(reason) };
        status = 'cancelled';
      } else {
        result = { content: `Error: ${error instanceof Error ? error.message : String(error)}`, isError: true };
        status = 'failed';
      }
    }
    // The host's secrets never reach the model, the store or an event, whatever the tool printed.
    result = redactToolResult(result, this.agent.host.secretRedactor());
    const cap = tool.maxResultChars ?? this.settings.tools.max_result_chars;
    const capped = capToolResult(result.content, cap);
    const truncated = capped !== result.content;
    return {
      status,
      result: { ...result, content: capped },
      truncated,
      durationMs: this.agent.host.clock.now() - startedAt,
    };
  }

  protected toolRow(call: ToolCallRequest, outcome: CallOutcome): NewMessage {
    const metadata: JsonObject = { status: outcome.status };
    if (outcome.result.diffs && outcome.result.diffs.length > 0)
      metadata.diffs = outcome.result.diffs as unknown as JsonValue;
    if (outcome.result.locations) metadata.locations = outcome.result.locations as unknown as JsonValue;
    if (outcome.result.displayMetadata) Object.assign(metadata, outcome.result.displayMetadata);
    // Replays render rawOutput from the structured result; large ones stay out of the row.
    if (outcome.result.structured !== undefined && JSON.stringify(outcome.result.structured).length <= 65_536) {
      metadata.structured = outcome.result.structured;
    }
    return {
      turnId: this.turnId,
      role: 'tool',
      content: outcome.result.content,
      toolCallId: call.id,
      toolName: call.name,
      displayMetadata: metadata,
      tokenCount: estimateTokens(outcome.result.content),
    };
  }

  protected emitToolEnd(call: PreparedCall, outcome: CallOutcome, rowId: number | null): void {
    const payload: AgentEventPayloads['tool.end'] = {
      callId: call.request.id,
      name: call.request.name,
      status: outcome.status,
      result: outcome.result.content,
      truncated: outcome.truncated,
      durationMs: outcome.durationMs,
      rowId,
    };
    if (outcome.result.structured !== undefined) payload.structured = outcome.result.structured;
    if (outcome.result.diffs) payload.diffs = outcome.result.diffs;
    if (outcome.result.locations) payload.locations = outcome.result.locations;
    this.emit('tool.end', payload);
  }

  /** Delivers buffered steer text after a tool batch (spec/core.md §7.9). */
  protected async deliverSteer(afterCallIds: string[]): Promise<void> {
    if (this.steerBuffer.length === 0) return;
    const text = this.steerBuffer.join('\n');
    this.steerBuffer = [];
    const [rowId] = await this.appendRows([{ turnId: this.turnId, role: 'user', content: text, displayKind: 'steer' }]);
    this.emit('steer.delivered', { text, rowId: rowId ?? null, afterCallIds });
  }
}

/** A tool result with the values of the host's secrets replaced in its text, structured data and diffs. */
export function redactToolResult(result: ToolResult, redactor: SecretRedactor): ToolResult {
  if (redactor.empty) return result;
  const redacted: ToolResult = { ...result, content: redactor.redact(result.content) };
  if (result.structured !== undefined) redacted.structured = redactor.redactJson(result.structured);
  if (result.displayMetadata !== undefined)
    redacted.displayMetadata = redactor.redactJson(result.displayMetadata as JsonObject);
  if (result.diffs !== undefined)
    redacted.diffs = result.diffs.map((diff) => ({
      ...diff,
      oldText: diff.oldText === null ? null : redactor.redact(diff.oldText),
      newText: redactor.redact(diff.newText),
      unified: redactor.redact(diff.unified),
    }));
  return redacted;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export function isZodSchema(schema: unknown): schema is ZodType {
  return (
    typeof schema === 'object' && schema !== null && typeof (schema as { safeParse?: unknown }).safeParse === 'function'
  );
}

function validateArguments(
  tool: ToolDefinition,
  args: unknown,
): { ok: true; value: unknown } | { ok: false; message: string } {
  if (!isZodSchema(tool.inputSchema)) return { ok: true, value: args };
  const parsed = tool.inputSchema.safeParse(args);
  if (parsed.success) return { ok: true, value: parsed.data };
  return {
    ok: false,
    message: parsed.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`).join('; '),
  };
}
