// Small helpers over async iterables, for reading pages of results as one stream.

/** Groups a stream into arrays of at most `size`. */
export async function* batched<T>(source: AsyncIterable<T>, size: number): AsyncIterable<T[]> {
  let batch: T[] = [];
  for await (const x of source) {
    batch.push(x);
    if (batch.length >= size) {
      yield batch;
      batch = [];
    }
  }
  if (batch.length) yield batch;
}

/** Merges streams that are each sorted newest first into one stream sorted newest first. */
export async function* mergeNewestFirst<T extends { sortAt: number }>(streams: AsyncIterable<T>[]): AsyncIterable<T> {
  if (streams.length === 1) {
    yield* streams[0]!;
    return;
  }
  const iters = streams.map((s) => s[Symbol.asyncIterator]());
  const heads = await Promise.all(iters.map((it) => it.next()));
  for (;;) {
    let best = -1;
    heads.forEach((h, i) => {
      if (h.done) return;
      if (best === -1 || h.value.sortAt > (heads[best]!.value as T).sortAt) best = i;
    });
    if (best === -1) return;
    yield heads[best]!.value as T;
    heads[best] = await iters[best]!.next();
  }
}
