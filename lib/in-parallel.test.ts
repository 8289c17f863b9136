import { chunks, inParallel } from './in-parallel.ts';

const tick = () => new Promise((resolve) => setImmediate(resolve));

test('inParallel: every item once, at most `limit` at a time, results in the items order', async () => {
  let running = 0;
  let most = 0;
  const seen: number[] = [];
  const items = Array.from({ length: 20 }, (_, i) => i);
  const out = await inParallel(items, 3, async (n, i) => {
    running += 1;
    most = Math.max(most, running);
    seen.push(n);
    // Later items finish first: the results still come back in the items' order.
    for (let k = 0; k < 20 - n; k++) await tick();
    running -= 1;
    return n * 10 + i;
  });
  expect(out).toEqual(items.map((n) => n * 11));
  expect(seen.sort((a, b) => a - b)).toEqual(items);
  expect(most).toBe(3);
  expect(await inParallel([], 4, async () => 1)).toEqual([]);
});

test('inParallel: a failure rejects, and no item is started after it', async () => {
  const started: number[] = [];
  await expect(
    inParallel([0, 1, 2, 3, 4, 5], 2, async (n) => {
      started.push(n);
      await tick();
      if (n === 1) throw new Error('item 1 failed');
      return n;
    }),
  ).rejects.toThrow('item 1 failed');
  expect(started).toEqual([0, 1, 2]);
});

test('chunks: lists of the size, the last shorter, nothing lost or repeated', () => {
  expect(chunks([1, 2, 3, 4, 5], 2)).toEqual([[1, 2], [3, 4], [5]]);
  expect(chunks([1, 2], 10)).toEqual([[1, 2]]);
  expect(chunks([], 10)).toEqual([]);
  const many = Array.from({ length: 101 }, (_, i) => i);
  expect(chunks(many, 25).flat()).toEqual(many);
  expect(chunks(many, 25).map((c) => c.length)).toEqual([25, 25, 25, 25, 1]);
  expect(() => chunks([1], 0)).toThrow(RangeError);
});
