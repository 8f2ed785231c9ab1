/**
 * The order in which `session/prompt` requests and `session/cancel` notifications arrived on the
 * wire (spec/acp.md §7.1).
 *
 * The SDK reads messages in order but runs each through an asynchronous handler chain without
 * waiting for the previous one, so a notification's handler can run before or after the handler
 * of a request read just before or after it. Whether a cancel covers a prompt must not depend on
 * that: {@link observe} sees every message as it is read and numbers it, a cancel takes effect at
 * that moment, and a prompt's handler later looks up the number its request was read with.
 */
const MAX_UNTAKEN_PROMPTS = 1000;

export class WireOrder {
  #seq = 0;
  readonly #prompts = new Map<string, number>();
  /** Cancels applied at read time whose SDK handler has not run yet, by session. */
  readonly #appliedCancels = new Map<string, number>();

  /** A number later than every message read so far (a cancel from elsewhere, a fallback). */
  next(): number {
    this.#seq += 1;
    return this.#seq;
  }

  /**
   * Called for every incoming message, in wire order, before the SDK dispatches it. Returns the
   * session id and number of a `session/cancel`, which the caller applies at once.
   */
  observe(message: unknown): { cancel: { sessionId: string; seq: number } } | null {
    if (typeof message !== 'object' || message === null || Array.isArray(message)) return null;
    const { method, id, params } = message as { method?: unknown; id?: unknown; params?: unknown };
    const sessionId = (params as { sessionId?: unknown } | undefined)?.sessionId;
    if (method === 'session/prompt' && id !== undefined) {
      // A request the SDK rejects before its handler never takes its number; keep the map bounded.
      if (this.#prompts.size >= MAX_UNTAKEN_PROMPTS) {
        const oldest = this.#prompts.keys().next().value;
        if (oldest !== undefined) this.#prompts.delete(oldest);
      }
      this.#prompts.set(JSON.stringify(id), this.next());
    } else if (method === 'session/cancel' && id === undefined && typeof sessionId === 'string') {
      this.#appliedCancels.set(sessionId, (this.#appliedCancels.get(sessionId) ?? 0) + 1);
      return { cancel: { sessionId, seq: this.next() } };
    }
    return null;
  }

  /** The number a prompt request was read with (a fresh one when it was not observed). */
  takePrompt(requestId: unknown): number {
    const key = JSON.stringify(requestId);
    const seq = this.#prompts.get(key);
    if (seq === undefined) return this.next();
    this.#prompts.delete(key);
    return seq;
  }

  /**
   * Called by the `session/cancel` handler: true when {@link observe} already applied this cancel
   * (the handler then has nothing left to do); false when the message bypassed the observer.
   */
  takeAppliedCancel(sessionId: string): boolean {
    const count = this.#appliedCancels.get(sessionId) ?? 0;
    if (count === 0) return false;
    if (count === 1) this.#appliedCancels.delete(sessionId);
    else this.#appliedCancels.set(sessionId, count - 1);
    return true;
  }
}
