/**
 * An unbounded push/pull queue exposed as an AsyncIterable. Producers `push`, then `end` or `fail`;
 * one consumer iterates. Used to bridge event emitters (grpc streams, the fake's event bus) to
 * `for await`, with errors that arrive before iteration starts kept rather than lost.
 */
export class AsyncQueue<T> implements AsyncIterable<T> {
  private readonly items: T[] = [];
  private waiter: (() => void) | undefined;
  private done = false;
  private error: unknown;
  private failed = false;

  constructor(private readonly onReturn: () => void = () => {}) {}

  push(item: T): void {
    if (this.done) return;
    this.items.push(item);
    this.wake();
  }

  end(): void {
    this.done = true;
    this.wake();
  }

  fail(err: unknown): void {
    if (this.done) return;
    this.error = err;
    this.failed = true;
    this.done = true;
    this.wake();
  }

  private wake(): void {
    const w = this.waiter;
    this.waiter = undefined;
    w?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    try {
      while (true) {
        if (this.items.length > 0) {
          yield this.items.shift() as T;
          continue;
        }
        if (this.failed) throw this.error;
        if (this.done) return;
        await new Promise<void>((resolve) => {
          this.waiter = resolve;
        });
      }
    } finally {
      // Runs on normal end, error, and when the consumer breaks out early.
      this.done = true;
      this.onReturn();
    }
  }
}
