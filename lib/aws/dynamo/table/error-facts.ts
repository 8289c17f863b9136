// An error fact (a task's failure, the latest error of a task or a file) as an item keeps it: its time is its rank's,
// not kept twice, as the header is close to the 1 KB of a write unit.
import { type ErrorFact, timestampOfRank } from '../../../domain/task.ts';
import type { Item } from './table-client.ts';

/** An error fact as an item keeps it: its time is its rank's, not kept twice (the header is close to 1 KB). */
export function storedError(e: ErrorFact | null | undefined): Item | undefined {
  if (!e) return undefined;
  const { at: _inRank, ...kept } = e;
  return kept;
}

/** An error fact as read from its item. */
export function errorFromItem(stored: Item | null | undefined): ErrorFact | null {
  if (!stored) return null;
  return { ...(stored as ErrorFact), message: stored.message ?? null, at: timestampOfRank(stored.rank) };
}
