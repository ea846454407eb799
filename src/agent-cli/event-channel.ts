/**
 * A queue of events read as an async iterable, for one consumer. Events are kept from the
 * start, so a consumer that begins iterating late misses nothing; past `max` unread events new
 * ones are dropped (and counted) rather than growing memory without end for a caller that
 * never reads (it may use onEvent instead).
 */
export class EventChannel<T> implements AsyncIterable<T> {
  private readonly buffer: T[] = [];
  private head = 0;
  private readonly waiting: Array<(result: IteratorResult<T>) => void> = [];
  private closed = false;
  dropped = 0;

  constructor(private readonly max = 10_000) {}

  push(value: T): void {
    if (this.closed) return;
    const waiter = this.waiting.shift();
    if (waiter) {
      waiter({ value, done: false });
    } else if (this.buffer.length - this.head < this.max) {
      this.buffer.push(value);
    } else {
      this.dropped++;
    }
  }

  /** No more events; a waiting consumer finishes once it has read the rest. */
  close(): void {
    this.closed = true;
    for (const waiter of this.waiting.splice(0)) waiter({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return {
      next: () => {
        if (this.head < this.buffer.length) {
          const value = this.buffer[this.head++] as T;
          if (this.head > 1024 && this.head * 2 > this.buffer.length) {
            this.buffer.splice(0, this.head);
            this.head = 0;
          }
          return Promise.resolve({ value, done: false });
        }
        if (this.closed) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve) => this.waiting.push(resolve));
      },
    };
  }
}
