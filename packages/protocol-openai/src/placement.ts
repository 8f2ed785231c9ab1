import { type AgentHost, HermesError, type ResponseRecord } from '@hermes/core';
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
 * Creates the new session `sessionId` (drawn by `AgentHost.newStoredSessionId`); when another instance stored the same
 * id between the draw and now, answers 503 to retry rather than run this client's turn in that session (ADR 0087).
 */
export async function createNewSession(host: AgentHost, sessionId: string): Promise<void> {
  try {
    await host.store.createSession({ id: sessionId, source: 'api_server' });
  } catch (error) {
    if (!(HermesError.isInstance(error) && error.code === 'session_exists')) throw error;
    throw new ApiError(503, 'session_id_taken', 'The new session id was taken meanwhile; retry.', {
      headers: { 'Retry-After': '0' },
    });
  }
}

/**
 * Applies the placement rules of section 14.2: linear continuation in R's session while R's turn is its newest,
 * else a branch up to R's last row; without a chain, a new session seeded with `conversation_history`, or a fresh
 * one named `freshId` (drawn only for a new session when it is a function).
 */
export async function placeTurn(
  host: AgentHost,
  previous: ResponseRecord | null,
  conversationHistory: unknown,
  freshId: string | (() => Promise<string>),
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
      sessionId: typeof freshId === 'string' ? freshId : await freshId(),
      seed: seeded.history.map((message) => ({ role: message.role, content: message.text })),
      rule: 'explicit_history',
    };
  }
  return { sessionId: typeof freshId === 'string' ? freshId : await freshId(), seed: [], rule: 'fresh' };
}
