/**
 * The host-wide switch that holds new `delegate_task` children (tui-gateway spec §4.10,
 * `delegation.pause`): while closed, a child about to start waits; children already running go on.
 */
export class SpawnGate {
  #paused = false;
  #waiters = new Set<() => void>();

  get paused(): boolean {
    return this.#paused;
  }

  /** Closes (true) or opens (false) the gate; opening releases every waiting child at once. */
  setPaused(paused: boolean): void {
    this.#paused = paused;
    if (paused) return;
    const waiters = [...this.#waiters];
    this.#waiters.clear();
    for (const release of waiters) release();
  }

  /**
   * Resolves true when a child may start: at once while open, else when the gate opens. Resolves
   * false when `signal` aborts first (the child must not start).
   */
  wait(signal: AbortSignal): Promise<boolean> {
    if (signal.aborted) return Promise.resolve(false);
    if (!this.#paused) return Promise.resolve(true);
    return new Promise((resolve) => {
      const release = () => {
        signal.removeEventListener('abort', onAbort);
        resolve(true);
      };
      const onAbort = () => {
        this.#waiters.delete(release);
        resolve(false);
      };
      this.#waiters.add(release);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }
}
