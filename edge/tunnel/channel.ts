/** An async queue: frames pushed by the session are consumed by the stream writer as an AsyncIterable. */
export interface Channel<T> extends AsyncIterable<T> {
  push(item: T): void;
  close(): void;
}

/** Creates an unbounded channel (frames are small and the tunnel drains them continuously). */
export function createChannel<T>(): Channel<T> {
  const items: T[] = [];
  let wake: (() => void) | undefined;
  let closed = false;
  return {
    push(item) {
      if (closed) return;
      items.push(item);
      wake?.();
    },
    close() {
      closed = true;
      wake?.();
    },
    async *[Symbol.asyncIterator]() {
      for (;;) {
        while (items.length) yield items.shift()!;
        if (closed) return;
        await new Promise<void>((r) => (wake = r));
        wake = undefined;
      }
    },
  };
}
