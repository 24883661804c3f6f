/**
 * `fn` over `items` with at most `limit` calls in flight, results in the items' order: how rollcall asks an
 * upstream (Argo CD, Prometheus) about many apps without queueing hundreds of requests on one server at once.
 * The first rejection rejects the whole; calls already started still run to their end.
 */
export async function mapConcurrent<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i], i);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  return out;
}

/** Resolves on a later turn of the event loop, after the I/O already there is read (requests waiting for their ack). */
export function nextTurn(): Promise<void> {
  return new Promise<void>((resolve) => setImmediate(resolve));
}
