// The task the receiver changed last, by its own clock: the header with the latest `ca` (the minute, rounded up, of
// the count update that last applied a callback to it), found through the `CHG` hour buckets newest first
// (../time/listing-hours.ts) rather than by the callbacks' platform timestamps: during an outage the platform's retries
// carry the times of tasks long started, and the tasks started last are not those receiving callbacks.
import type { Capacity } from '../../../domain/task-store.ts';
import type { TaskSummary } from '../../../domain/task-summary.ts';
import { toSummary } from '../../../domain/task-parts.ts';
import { headerParts } from '../table/items.ts';
import { headerChangeBucket } from '../time/listing-hours.ts';
import { noCapacity, type Item, type TableReader } from '../table/table-client.ts';
import { Keys } from '../table/table.ts';
import { BUCKET_KINDS, bucketStart, readBucketPage, tasksOfEntry } from '../time/time-buckets.ts';
import { TIME_ATTRS } from '../time/time-items.ts';

const MINUTE = 60_000;
/** Entry items one Query reads. */
const ENTRIES_PER_READ = 100;

export interface LastChange {
  task: TaskSummary;
  /** The receiver's minute of the change, rounded up (epoch ms): the change was received by then. */
  receivedBy: number;
  /** False when the hour held more tasks than `headerLimit`: the latest of those read. */
  complete: boolean;
}

/**
 * The task changed last within `hours` back from `now`: the newest hour bucket that names a task listed at it, every
 * header it names read (at most `headerLimit`), the latest `ca` kept. Null when none changed in that time.
 */
export async function lastChange(
  table: TableReader,
  now: number,
  opts: { hours: number; headerLimit: number },
  cap: Capacity = noCapacity(),
): Promise<LastChange | null> {
  const width = BUCKET_KINDS.CHG.width;
  const oldest = bucketStart('CHG', now - opts.hours * width);
  for (let bucket = bucketStart('CHG', now); bucket >= oldest; bucket -= width) {
    let best: { header: Item; ca: number } | null = null;
    let read = 0;
    let after: string | null = null;
    let complete = true;
    for (;;) {
      const page = await readBucketPage(table, { kind: 'CHG', bucket, after }, ENTRIES_PER_READ, cap);
      const named = page.items.flatMap((item) => tasksOfEntry(item, bucket));
      const room = Math.max(0, opts.headerLimit - read);
      if (named.length > room) complete = false;
      const keys = named.slice(0, room).map((t) => ({ pk: Keys.taskPk(t.id), sk: Keys.headerSk(t.appKey) }));
      read += keys.length;
      for (const header of keys.length ? await table.getMany(keys, cap, false) : []) {
        const ca = header?.[TIME_ATTRS.changedAt];
        // Listed at the hour its header names: an entry of an hour it changed in since is not its latest change.
        if (!header || typeof ca !== 'number' || headerChangeBucket(header) !== bucket) continue;
        // Within one minute, the task whose latest callback is latest by the platform's time.
        if (!best || ca > best.ca || (ca === best.ca && (header.updatedAt ?? 0) > (best.header.updatedAt ?? 0)))
          best = { header, ca };
      }
      after = page.last;
      if (!page.more || read >= opts.headerLimit) {
        complete &&= !page.more;
        break;
      }
    }
    const parts = best ? headerParts(best.header) : null;
    if (best && parts) return { task: toSummary(parts), receivedBy: best.ca * MINUTE, complete };
  }
  return null;
}
