// Small helpers over async iterables.

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
