// The hour buckets that list tasks by time of change and of end (`CHG`: docs/task-store.md, Time bucket entries).
// A change's hour is a function of the header's `ca` (the receiver's minute of its last change, which the count
// update writes anyway), so the header holds nothing more for them: before a count update that changes a task,
// its `CHG` entry is written unless the header as last known changed in the same hour, at most one entry per task
// and hour (and one more after a worker starts cold). A task is listed at the hour its `ca` names, whose bucket
// holds its entry. A task's end is a change: the listing by time of end reads the same buckets.
import type { Capacity } from '../../domain/task-store.ts';
import { appKeyOf } from './items.ts';
import { toItem, type Item, type TableClient } from './table-client.ts';
import { Keys } from './table.ts';
import { BUCKET_KINDS, bucketStart, putBucketEntries } from './time-buckets.ts';
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

/** The change a header written before these entries is listed at: its latest callback, within the horizon. */
function missingChange(header: Item, now: number): number | null {
  const at = header.updatedAt;
  if (typeof at !== 'number' || header[TIME_ATTRS.changedAt] !== undefined) return null;
  return at >= now - BUCKET_KINDS.CHG.ttlMs ? at : null;
}

/** Whether a header lacks its entry of the listings by time (one written before them). */
export const lacksListingEntries = (header: Item, now: number): boolean => missingChange(header, now) !== null;

/**
 * For a header written before these entries (`callbacks migrate`): `ca` at its latest callback (`updatedAt`),
 * within the entries' horizon, and a `CHG` entry at that hour, where a worker has not set `ca` since. True when
 * it wrote anything.
 */
export async function giveListingEntries(
  table: TableClient,
  header: Item,
  now: number,
  cap: Capacity,
): Promise<boolean> {
  const at = missingChange(header, now);
  if (at === null) return false;
  const { appKey, id } = { appKey: appKeyOf(header), id: header.pk.slice(Keys.taskPk('').length) };
  const ca = minutesAfter(at);
  await putBucketEntries(table, 'CHG', changeBucketOf(ca), [{ appKey, id }], cap);
  const res = await table.update(
    { pk: header.pk, sk: header.sk },
    {
      update: 'SET #ca = :ca, ver = ver + :one',
      condition: 'attribute_exists(ver) AND attribute_not_exists(#ca)',
      names: { '#ca': TIME_ATTRS.changedAt },
      values: toItem({ ':ca': ca, ':one': 1 }),
    },
    cap,
  );
  return res.ok;
}
