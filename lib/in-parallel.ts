// The two ways the code splits work: `inParallel` runs an async function over items a few at a time (a pool
// of workers taking the next item as each finishes, so one slow item holds back only its own worker), and
// `chunks` cuts a list into the batches an API takes at most at once (25 writes, 100 reads, 10 messages).

/**
 * Runs `fn` over `items`, at most `limit` at a time, taken in their order; resolves to the results in the
 * items' order. A rejection rejects the whole (the items already started run on; none is started after).
 */
export async function inParallel<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  let failed = false;
  const run = async () => {
    while (next < items.length && !failed) {
      const i = next++;
      try {
        out[i] = await fn(items[i]!, i);
      } catch (err) {
        failed = true;
        throw err;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(0, Math.min(Math.floor(limit), items.length)) }, run));
  return out;
}

/** `items` cut into lists of `size` (the last one shorter), in their order. */
export function chunks<T>(items: readonly T[], size: number): T[][] {
  if (!(Number.isInteger(size) && size >= 1))
    throw new RangeError(`a chunk size is a whole number of at least 1, not ${size}`);
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
