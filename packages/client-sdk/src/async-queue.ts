/**
 * An unbounded push queue read as an async iterable. Events are pushed as they arrive and never
 * dropped: a host that reads slowly sees every event late rather than some events never.
 */
export class AsyncQueue<T> implements AsyncIterable<T> {
  readonly #items: T[] = [];
  readonly #waiting: ((result: IteratorResult<T>) => void)[] = [];
  #ended = false;
  #failure: unknown;
  readonly #onReturn: (() => void) | undefined;

  /** `onReturn` runs once when the reader stops early or the queue ends. */
  constructor(onReturn?: () => void) {
    this.#onReturn = onReturn;
  }

  /** Adds an item; ignored after the queue ended. */
  push(item: T): void {
    if (this.#ended) return;
    const waiter = this.#waiting.shift();
    if (waiter) waiter({ value: item, done: false });
    else this.#items.push(item);
  }

  /** Ends the queue: the reader gets the buffered items, then `done` (or `failure` thrown). */
  end(failure?: unknown): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#failure = failure;
    this.#onReturn?.();
    if (this.#items.length === 0) this.#flushWaiters();
  }

  #flushWaiters(): void {
    for (const waiter of this.#waiting.splice(0)) waiter({ value: undefined as never, done: true });
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return {
      next: () => {
        const item = this.#items.shift();
        if (item !== undefined || this.#items.length > 0) return Promise.resolve({ value: item as T, done: false });
        if (this.#ended) {
          if (this.#failure !== undefined) {
            const failure = this.#failure;
            this.#failure = undefined;
            return Promise.reject(failure);
          }
          return Promise.resolve({ value: undefined as never, done: true });
        }
        return new Promise((resolve) => this.#waiting.push(resolve));
      },
      return: () => {
        this.end();
        this.#items.length = 0;
        this.#flushWaiters();
        return Promise.resolve({ value: undefined as never, done: true });
      },
    };
  }
}
