import { redactSecrets, type TurnResult, type Usage } from '@hermes/core';

/** The machine code of a turn that did not complete (spec §13.5). */
export function outcomeErrorCode(result: TurnResult): 'iteration_limit' | 'agent_error' | 'agent_interrupted' {
  if (result.outcome === 'failed' && result.exitReason.startsWith('max_iterations_reached')) return 'iteration_limit';
  return result.outcome === 'cancelled' ? 'agent_interrupted' : 'agent_error';
}

/** The redacted error text of a failed or cancelled turn. */
export function outcomeErrorText(result: TurnResult): string {
  return redactSecrets(result.error?.message ?? result.interruptMessage ?? `The turn ended: ${result.exitReason}`);
}

/** The `hermes` outcome object (spec §13.5). */
export function hermesOutcome(result: TurnResult) {
  return {
    completed: result.outcome === 'completed',
    partial: result.partial,
    failed: result.outcome === 'failed',
    interrupted: result.outcome === 'cancelled',
    error: result.outcome === 'completed' ? null : outcomeErrorText(result),
    error_code: outcomeErrorCode(result),
    turn_exit_reason: result.exitReason,
  };
}

/** `finish_reason` of a chat completion (spec §13.5). */
export function chatFinishReason(result: TurnResult): 'stop' | 'length' | 'content_filter' | 'error' {
  if (result.outcome === 'completed') {
    if (result.finishReason === 'length' || result.finishReason === 'content_filter') return result.finishReason;
    return 'stop';
  }
  return outcomeErrorCode(result) === 'iteration_limit' ? 'length' : 'error';
}

/** Usage in the chat shape: this turn only (spec §13.4). */
export function chatUsage(usage: Usage) {
  return {
    prompt_tokens: usage.inputTokens,
    completion_tokens: usage.outputTokens,
    total_tokens: usage.totalTokens,
    prompt_tokens_details: { cached_tokens: usage.cacheReadTokens },
    completion_tokens_details: { reasoning_tokens: usage.reasoningTokens },
  };
}

/** Usage in the Responses shape (spec §14.4). */
export function responsesUsage(usage: Usage) {
  return {
    input_tokens: usage.inputTokens,
    input_tokens_details: { cached_tokens: usage.cacheReadTokens },
    output_tokens: usage.outputTokens,
    output_tokens_details: { reasoning_tokens: usage.reasoningTokens },
    total_tokens: usage.totalTokens,
  };
}

/** Usage in the native shape (spec §22.3). */
export function nativeUsage(usage: Usage) {
  return { input_tokens: usage.inputTokens, output_tokens: usage.outputTokens, total_tokens: usage.totalTokens };
}

/** A result's interrupt issuer, if it was cancelled. */
export function interruptIssuer(result: TurnResult): string | null {
  return result.interruptedBy?.issuer ?? null;
}
