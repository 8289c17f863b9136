// The hour buckets that list tasks by time of change and of end (`CHG`, `END`: docs/task-store.md, Time bucket
// entries), kept by the count update. A task's `CHG` entry is written before the update that records its hour
// in `uh`, only when the header as last known is in another hour: at most one entry per task and hour (and one
// more after a worker starts cold). Its `END` entry is written once its `endedAt` is known, or when its hour
// moves, and `eh` recorded after it, in the same update when the worker knows the end (it wrote it), else in an
// update of its own: so a header's `uh` and `eh` always name a bucket that holds its entry.
import type { Capacity } from '../../domain/task-store.ts';
import { appKeyOf } from './items.ts';
import { toItem, type Item, type Key, type TableClient } from './table-client.ts';
import { Keys } from './table.ts';
import { BUCKET_KINDS, bucketStart, hourNumber, putBucketEntries, type BucketKind } from './time-buckets.ts';
import { TIME_ATTRS } from './time-items.ts';

export class ListingHours {
  private readonly table: TableClient;
  private readonly now: () => number;

  constructor(table: TableClient, now: () => number) {
    this.table = table;
    this.now = now;
  }

  /**
   * Before a count update that applies callbacks: the hour of this change, its `CHG` entry written unless the
   * header as known (`known`, possibly stale: an hour it names has its entry all the same) is already in it.
   * The update sets `uh` to the hour returned.
   */
  async changeHour(appKey: string, id: string, known: Item | undefined, cap: Capacity): Promise<number> {
    const hour = bucketStart('CHG', this.now());
    if (known?.[TIME_ATTRS.changeHour] !== hourNumber(hour))
      await putBucketEntries(this.table, 'CHG', hour, [{ appKey, id }], cap);
    return hour;
  }

  /**
   * Before a count update: when the header as known has ended in another hour than its `eh`, that hour's `END`
   * entry, and the hour for the update to set (null: nothing to set). What the known copy missed, the check
   * after the update (`recordEnd`) catches.
   */
  async endHour(appKey: string, id: string, known: Item | undefined, cap: Capacity): Promise<number | null> {
    if (typeof known?.endedAt !== 'number') return null;
    const hour = bucketStart('END', known.endedAt);
    if (known[TIME_ATTRS.endHour] === hourNumber(hour)) return null;
    await putBucketEntries(this.table, 'END', hour, [{ appKey, id }], cap);
    return hour;
  }

  /** After a count update: the `END` entry and `eh` when the task's end is in another hour than `eh` says. */
  async recordEnd(key: Key, appKey: string, id: string, header: Item, cap: Capacity): Promise<Item> {
    const endedAt = header.endedAt;
    if (typeof endedAt !== 'number') return header;
    const hour = bucketStart('END', endedAt);
    if (header[TIME_ATTRS.endHour] === hourNumber(hour)) return header;
    await putBucketEntries(this.table, 'END', hour, [{ appKey, id }], cap);
    const res = await this.table.update(
      key,
      {
        update: 'SET #eh = :h, ver = ver + :one',
        // A header whose end moved in between is recorded by the batch that moved it.
        condition: 'endedAt = :e',
        names: { '#eh': TIME_ATTRS.endHour },
        values: toItem({ ':h': hourNumber(hour), ':e': endedAt, ':one': 1 }),
      },
      cap,
    );
    return res.ok ? res.item : header;
  }
}

/** The hour entries a header lacks, by kind: those of its times within the entries' horizon. */
function missingHours(header: Item, now: number): [BucketKind, string, number][] {
  const out: [BucketKind, string, number][] = [];
  for (const [kind, attr, at] of [
    ['CHG', TIME_ATTRS.changeHour, header.updatedAt],
    ['END', TIME_ATTRS.endHour, header.endedAt],
  ] as const) {
    if (typeof at === 'number' && header[attr] === undefined && at >= now - BUCKET_KINDS[kind].ttlMs)
      out.push([kind, attr, at]);
  }
  return out;
}

/** Whether a header lacks an entry of the listings by time (one written before them). */
export const lacksListingEntries = (header: Item, now: number): boolean => missingHours(header, now).length > 0;

/**
 * For a header written before these entries (`callbacks migrate`): a `CHG` entry at the hour of its `updatedAt`
 * and an `END` entry at the hour of its `endedAt`, those it lacks, within the entries' horizon; then `uh` and
 * `eh` set where a worker has not set them since. True when it wrote anything.
 */
export async function giveListingEntries(
  table: TableClient,
  header: Item,
  now: number,
  cap: Capacity,
): Promise<boolean> {
  const { appKey, id } = { appKey: appKeyOf(header), id: header.pk.slice(Keys.taskPk('').length) };
  const sets: string[] = [];
  const conditions: string[] = [];
  const values: Item = {};
  const names: Record<string, string> = {};
  for (const [kind, attr, at] of missingHours(header, now)) {
    const hour = bucketStart(kind, at);
    await putBucketEntries(table, kind, hour, [{ appKey, id }], cap);
    sets.push(`#${attr} = :${attr}`);
    conditions.push(`attribute_not_exists(#${attr})`);
    names[`#${attr}`] = attr;
    values[`:${attr}`] = hourNumber(hour);
  }
  if (sets.length === 0) return false;
  const res = await table.update(
    { pk: header.pk, sk: header.sk },
    {
      update: `SET ${sets.join(', ')}, ver = ver + :one`,
      condition: `attribute_exists(ver) AND ${conditions.join(' AND ')}`,
      names,
      values: toItem({ ...values, ':one': 1 }),
    },
    cap,
  );
  return res.ok;
}

/** The part of a count update that records the hour of the change and, when known, of the end. */
export function listingHoursUpdate(
  change: number | null,
  end: number | null,
): { sets: string[]; values: Record<string, unknown> } {
  const out = { sets: [] as string[], values: {} as Record<string, unknown> };
  if (change !== null) {
    out.sets.push(`${TIME_ATTRS.changeHour} = :uh`);
    out.values[':uh'] = hourNumber(change);
  }
  if (end !== null) {
    out.sets.push(`${TIME_ATTRS.endHour} = :eh`);
    out.values[':eh'] = hourNumber(end);
  }
  return out;
}
