// The hour buckets that list tasks by time of change and of end (`CHG`: docs/task-store.md, Time bucket entries).
// A change's hour is a function of the header's `ca` (the receiver's minute of its last change, which the count
// update writes anyway), so the header holds nothing more for them: before a count update that changes a task,
// its `CHG` entry is written unless the header as last known changed in the same hour, at most one entry per task
// and hour (and one more after a worker starts cold). A task is listed at the hour its `ca` names, whose bucket
// holds its entry. A task's end is a change: the listing by time of end reads the same buckets.
import type { Capacity } from '../../../domain/task-store.ts';
import type { Item, TableClient } from '../table/table-client.ts';
import { bucketStart, putBucketEntries } from './time-buckets.ts';
import { TIME_ATTRS, minutesAfter } from './time-items.ts';

const MINUTE = 60_000;

/** The `CHG` bucket of a change whose `ca` is `minutes`: the hour of the last millisecond it covers. */
export const changeBucketOf = (minutes: number): number => bucketStart('CHG', minutes * MINUTE - 1);

/** The `CHG` bucket a header is listed in (null: it records no change). */
export function headerChangeBucket(header: Item): number | null {
  const ca = header[TIME_ATTRS.changedAt];
  return typeof ca === 'number' ? changeBucketOf(ca) : null;
}

export class ListingHours {
  private readonly table: TableClient;

  constructor(table: TableClient) {
    this.table = table;
  }

  /**
   * Before a count update that changes a task at `changedAt` (the time its `ca` records): its `CHG` entry,
   * unless the header as known (`known`, possibly stale: an hour it names has its entry all the same) changed
   * in the same hour. (A task the batch creates has its first one written with the batch's arms, shared with the
   * batch's other new tasks: ./deadline-arming.ts.)
   */
  async recordChange(appKey: string, id: string, known: Item | undefined, changedAt: number, cap: Capacity) {
    const bucket = changeBucketOf(minutesAfter(changedAt));
    if (known && headerChangeBucket(known) === bucket) return;
    await putBucketEntries(this.table, 'CHG', bucket, [{ appKey, id }], cap);
  }
}
