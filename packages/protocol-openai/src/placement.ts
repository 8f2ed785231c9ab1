import type { AgentHost, ResponseRecord } from '@hermes/core';
import { ApiError } from './http-error.js';
import { normalizeConversation } from './normalize-input.js';

/** Where a chained or seeded turn runs (spec §14.2). */
export interface Placement {
  sessionId: string;
  /** Rows to write before the turn: `conversation_history` for a new seeded session. */
  seed: { role: 'user' | 'assistant'; content: string }[];
  rule: 'linear' | 'branch' | 'explicit_history' | 'fresh';
}

/** Looks up `previous_response_id`, answering 404 `previous_response_not_found` when it is unknown. */
export async function previousResponse(host: AgentHost, id: string): Promise<ResponseRecord> {
  const record = await host.store.responses.get(id);
  if (!record) throw new ApiError(404, 'previous_response_not_found', `Previous response not found: ${id}`);
  return record;
}

/**
 * Applies the placement rules of section 14.2: linear continuation in R's session while R's turn is its newest,
 * else a branch up to R's last row; without a chain, a new session seeded with `conversation_history`, or a fresh
 * one named `freshId`.
 */
export async function placeTurn(
  host: AgentHost,
  previous: ResponseRecord | null,
  conversationHistory: unknown,
  freshId: string,
): Promise<Placement> {
  if (previous) {
    const generation = await host.store.generation(previous.sessionId);
    if (generation && previous.lastRowId !== null && generation.lastRowId > previous.lastRowId) {
      const branch = await host.store.branch(previous.sessionId, {
        upToRowId: previous.lastRowId,
        source: 'api_server',
      });
      return { sessionId: branch.id, seed: [], rule: 'branch' };
    }
    return { sessionId: previous.sessionId, seed: [], rule: 'linear' };
  }
  if (Array.isArray(conversationHistory)) {
    // The history is normalised like any input; a placeholder turn input lets the shared rules run unchanged.
    const seeded = normalizeConversation(
      [...(conversationHistory as { role: unknown; content: unknown }[]), { role: 'user', content: '.' }],
      (index) => `conversation_history[${index}]`,
      'No user message found in input',
    );
    return {
      sessionId: freshId,
      seed: seeded.history.map((message) => ({ role: message.role, content: message.text })),
      rule: 'explicit_history',
    };
  }
  return { sessionId: freshId, seed: [], rule: 'fresh' };
}
