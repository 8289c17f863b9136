// The size a test runs at. `npm test` runs each case small enough to take seconds while it still meets every
// kind of input and failure the case is about (a write of each kind failing, callbacks past a file item's
// inline keys, duplicates, contention); `npm run soak -- --sized-tests` runs the very same tests at the size the
// platform reaches (CALLBACKS_FULL_SIZE=1, test/soak/sized-tests.ts): every write position, a day of retries,
// more generated runs.
export const fullSize = process.env.CALLBACKS_FULL_SIZE === '1';

/** `small` in `npm test`, `full` in the soak's sized tests (`--sized-tests`). */
export function sized<T>(small: T, full: T): T {
  return fullSize ? full : small;
}

/**
 * The write positions 1..total a test makes fail: all of them at full size; in `npm test` every `stride`-th
 * (from the first) and the last, so that every kind of write of a run that repeats its kinds is still met.
 */
export function writePositions(total: number, stride: number): number[] {
  const step = fullSize ? 1 : stride;
  const positions: number[] = [];
  for (let n = 1; n <= total; n += step) positions.push(n);
  if (positions.at(-1) !== total) positions.push(total);
  return positions;
}
