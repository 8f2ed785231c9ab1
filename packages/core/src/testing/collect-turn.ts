/**
 * Drains a running turn for assertions (spec/core.md §22.2).
 */

import type { AgentEvent } from '../events.js';
import type { TurnResult } from '../turn-types.js';

/** Anything shaped like a turn run: its events and its result. */
export type CollectableRun<E, R> = AsyncIterable<E> & { result: PromiseLike<R> };

/** Iterates every event of `run`, then awaits its result. */
export async function collectTurn<E = AgentEvent, R = TurnResult>(
  run: CollectableRun<E, R>,
): Promise<{ events: E[]; result: R }> {
  const result = Promise.resolve(run.result);
  // A result that rejects while the events are still being read must not be reported as unhandled.
  result.catch(() => undefined);
  const events: E[] = [];
  for await (const event of run) events.push(event);
  return { events, result: await result };
}
