// The counts a task's header keeps: one update per task and batch that adds what the batch's writes changed
// (lib/domain/task-counts.ts) and, with sequence numbers, records the last message it absorbed on condition
// that the header holds an earlier one; and a recount from the task's items, for what no batch can charge
// (a message given up after a partial write, a write without sequence number that cannot tell).
import type { Callback } from '../../domain/callback.ts';
import {
  NONE_ABSORBED,
  addCounts,
  batchChange,
  changeOf,
  isZero,
  lastSequence,
  type TaskCounts,
  type WriteCharge,
} from '../../domain/task-counts.ts';
import { completedAt } from '../../domain/task-events.ts';
import { toSummary, type TaskParts } from '../../domain/task-parts.ts';
import type { Capacity } from '../../domain/task-store.ts';
import { emptyTally, fileState, joinTallies, tallyCallback, type FileRecord, type Tally } from '../../domain/task.ts';
import { assemble } from './assembled-task.ts';
import { COUNT_ATTRS, countsOf, fileFromItem, headerParts, markOf, tallyOf } from './items.ts';
import type { KnownItems } from './known-items.ts';
import { ListingHours, listingHoursUpdate } from './listing-hours.ts';
import { ContentionError, toItem, type Item, type Key, type TableClient } from './table-client.ts';
import { Keys } from './table.ts';

/** Attempts of a count update or a recount before giving up with a retryable error. */
const MAX_ATTEMPTS = 8;

/** The writes of one task in one batch, as its header update takes them. */
export interface TaskWrites {
  appKey: string;
  id: string;
  charges: readonly WriteCharge[];
  /** Their callbacks: the header's `updatedAt` and `lastError` join them. */
  callbacks: readonly Callback[];
  /** The files as the writes left them (for the time the task completed, when it completes now). */
  files: readonly FileRecord[];
  /** The last sequence number the header had absorbed as the batch began; null without sequence numbers. */
  absorbed: string | null;
}

export class HeaderCounts {
  private readonly table: TableClient;
  private readonly headers: KnownItems;
  private readonly hours: ListingHours;

  constructor(table: TableClient, headers: KnownItems, now: () => number = Date.now) {
    this.table = table;
    this.headers = headers;
    this.hours = new ListingHours(table, now);
  }

  /** The last sequence number a task's header absorbed (NONE_ABSORBED for none, or no header): one read. */
  async absorbed(appKey: string, id: string, cap: Capacity): Promise<string> {
    const header = await this.table.get(headerKey(appKey, id), cap);
    return header?.seq ?? NONE_ABSORBED;
  }

  /**
   * Adds a batch's writes to their task's header and returns the header as it then stands (null: no header).
   * Already absorbed (a redelivery after the update), it changes nothing. A header written before headers
   * kept counts is recounted instead, its batch's writes included: from then on it keeps them.
   */
  async count(w: TaskWrites, cap: Capacity): Promise<Item | null> {
    const key = headerKey(w.appKey, w.id);
    const change = batchChange(w.charges, w.absorbed);
    const seq = w.absorbed === null ? null : lastSequence(w.charges);
    let tally = emptyTally();
    for (const cb of w.callbacks) tally = tallyCallback(tally, cb);
    // First as if the batch's tally were the newest (callbacks mostly come in time order); else once more
    // joined with the header as found, on condition of its version.
    let found: Item | null = null;
    // Listings by time of change (`CHG`): the entry of this hour first, then the update records it.
    const known = this.headers.get(key);
    const hour = w.callbacks.length ? await this.hours.changeHour(w.appKey, w.id, known, cap) : null;
    const endHour = await this.hours.endHour(w.appKey, w.id, known, cap);
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      const joined = found ? joinTallies(tally, tallyOf(found)) : tally;
      const res = await this.table.update(key, countUpdate(change, seq, joined, found, hour, endHour), cap);
      if (res.ok) {
        const done = await this.markDone(key, res.item, w.files, cap);
        const ended = await this.hours.recordEnd(key, w.appKey, w.id, done, cap);
        this.headers.remember(key, ended);
        return ended;
      }
      const old = res.old === undefined ? await this.table.get(key, cap) : res.old;
      // A write was applied, so the header exists: one not found is not found yet.
      if (!old) continue;
      if (countsOf(old) === null) return this.recount(w.appKey, w.id, null, cap);
      if (seq !== null && old.seq !== undefined && old.seq >= seq) return old;
      found = old;
    }
    throw new ContentionError(`the header of task ${w.id} stayed contended after ${MAX_ATTEMPTS} attempts`);
  }

  /**
   * Counts a task again from its items and writes the counts into its header, on condition that nothing
   * wrote it in between. `through`: a sequence number the header is to count as absorbed (a message given
   * up after a partial write); files whose last writer comes later are counted as their marks say, for
   * the batch that absorbs that writer to charge. Returns the header as written (null: no such task).
   */
  async recount(appKey: string, id: string, through: string | null, cap: Capacity): Promise<Item | null> {
    const key = headerKey(appKey, id);
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      const { header, parts } = await this.readTask(appKey, id, cap);
      if (!header) return null;
      const stored = header.seq ?? NONE_ABSORBED;
      const absorbed = through !== null && through > stored ? through : stored;
      const whole = assemble(header, parts);
      const counts = zeroSafe(countedItems(whole.parts, parts, absorbed));
      const done = header.doneAt ?? completionTime({ ...whole.parts, counts });
      const values: Record<string, unknown> = { ':v': header.ver ?? 0, ':one': 1 };
      const sets = ['ver = ver + :one'];
      for (const [k, attr] of Object.entries(COUNT_ATTRS) as [keyof TaskCounts, string][]) {
        sets.push(`${attr} = :${attr}`);
        values[`:${attr}`] = counts[k];
      }
      if (absorbed !== NONE_ABSORBED) {
        sets.push('seq = :s');
        values[':s'] = absorbed;
      }
      setTally(sets, values, whole.parts.tally);
      // Attempts counted without their keys (a table brought over from the earlier layout): readers add them.
      if (parts.some((p) => p.sk === Keys.legacySk(appKey) || p.sk.startsWith(`${Keys.legacySk(appKey)}#`)))
        sets.push('la = :one');
      if (done !== null) {
        sets.push('doneAt = :d');
        values[':d'] = done;
      }
      const res = await this.table.update(
        key,
        {
          update: `SET ${sets.join(', ')}`,
          condition: header.ver === undefined ? 'attribute_not_exists(ver)' : 'ver = :v',
          values: toItem(values),
        },
        cap,
      );
      if (res.ok) {
        this.headers.remember(key, res.item);
        return res.item;
      }
    }
    throw new ContentionError(`task ${id} stayed contended for a recount after ${MAX_ATTEMPTS} attempts`);
  }

  /** The header and every part of a task, read strongly consistent. */
  private async readTask(appKey: string, id: string, cap: Capacity): Promise<{ header: Item | null; parts: Item[] }> {
    const headerSk = Keys.headerSk(appKey);
    const prefix = Keys.partsPrefix(appKey);
    let header: Item | null = null;
    const parts: Item[] = [];
    for await (const item of this.table.queryAll(
      {
        KeyConditionExpression: 'pk = :pk AND sk BETWEEN :h AND :last',
        ExpressionAttributeValues: {
          ':pk': { S: Keys.taskPk(id) },
          ':h': { S: headerSk },
          ':last': { S: `${prefix}\u{10FFFF}` },
        },
        ConsistentRead: true,
      },
      cap,
    )) {
      if (item.sk === headerSk) header = item;
      else if (item.sk.startsWith(prefix)) parts.push(item);
    }
    return { header, parts };
  }

  /** Once the task completes, the header keeps when (the time `task.completed` reports, every time). */
  private async markDone(key: Key, header: Item, files: readonly FileRecord[], cap: Capacity): Promise<Item> {
    const parts = headerParts(header);
    if (!parts || header.doneAt !== undefined || toSummary(parts).status !== 'completed') return header;
    const at = completionTime({ ...parts, files });
    if (at === null) return header;
    const res = await this.table.update(
      key,
      {
        update: 'SET doneAt = if_not_exists(doneAt, :d), ver = ver + :one',
        condition: 'attribute_exists(pk)',
        values: toItem({ ':d': at, ':one': 1 }),
      },
      cap,
    );
    if (!res.ok) return header;
    this.headers.remember(key, res.item);
    return res.item;
  }
}

const headerKey = (appKey: string, id: string): Key => ({ pk: Keys.taskPk(id), sk: Keys.headerSk(appKey) });

/** Keeps a recount from writing a negative count should items disagree with their marks. */
function zeroSafe(c: TaskCounts): TaskCounts {
  return {
    files: Math.max(0, c.files),
    pending: Math.max(0, c.pending),
    uploaded: Math.max(0, c.uploaded),
    failed: Math.max(0, c.failed),
    events: Math.max(0, c.events),
  };
}

/**
 * What the header is to count given the items: every file's state and every recorded key, except what the
 * marks of writers after `absorbed` leave for their batch to charge (their files' counted state, their
 * uncounted keys).
 */
function countedItems(parts: TaskParts, items: readonly Item[], absorbed: string): TaskCounts {
  let counts: TaskCounts = { files: 0, pending: 0, uploaded: 0, failed: 0, events: parts.eventCount };
  for (const f of parts.files) counts = addCounts(counts, changeOf(null, fileState(f)));
  for (const item of items) {
    const mark = markOf(item);
    if (mark && mark.seq > absorbed) {
      // A file item: the batch of its last writer charges what its mark says the header does not count.
      counts = addCounts(counts, changeOf(fileState(fileFromItem(item)), mark.counted, -mark.events));
    } else if (typeof item.q === 'string' && item.q > absorbed) {
      // A key recorded on an item of its own by a writer not absorbed yet.
      counts.events -= 1;
    }
  }
  return counts;
}

/** When a completed task completed (null: it is not). */
function completionTime(parts: TaskParts): number | null {
  if (toSummary(parts).status !== 'completed') return null;
  return completedAt(parts);
}

/** The update of one batch: `found`, the header as found when the first attempt's condition failed. */
function countUpdate(
  change: TaskCounts,
  seq: string | null,
  tally: Tally,
  found: Item | null,
  hour: number | null,
  endHour: number | null,
) {
  // The hours of the listings by time of change and end (./listing-hours.ts), in the same write.
  const hours = listingHoursUpdate(hour, endHour);
  const values: Record<string, unknown> = { ':one': 1, ...hours.values };
  const sets = ['ver = ver + :one', ...hours.sets];
  const names: Record<string, string> = { ...hours.names };
  if (!isZero(change)) {
    for (const [k, attr] of Object.entries(COUNT_ATTRS) as [keyof TaskCounts, string][]) {
      if (change[k] === 0) continue;
      sets.push(`${attr} = ${attr} + :${attr}`);
      values[`:${attr}`] = change[k];
    }
  }
  const conditions = ['attribute_exists(nEvents)'];
  if (seq !== null) {
    sets.push('seq = :s');
    values[':s'] = seq;
    conditions.push('(attribute_not_exists(seq) OR seq < :s)');
  }
  setTally(sets, values, tally);
  if (found) {
    conditions.push('ver = :v');
    values[':v'] = found.ver;
  } else {
    if (tally.updatedAt !== null) conditions.push('(attribute_not_exists(updatedAt) OR updatedAt <= :u)');
    if (tally.lastError) {
      conditions.push('(attribute_not_exists(lastError) OR lastError.#rank <= :r)');
      names['#rank'] = 'rank';
      values[':r'] = tally.lastError.rank;
    }
  }
  return {
    update: `SET ${sets.join(', ')}`,
    condition: conditions.join(' AND '),
    ...(Object.keys(names).length ? { names } : {}),
    values: toItem(values),
  };
}

function setTally(sets: string[], values: Record<string, unknown>, tally: Tally): void {
  if (tally.updatedAt !== null) {
    sets.push('updatedAt = :u');
    values[':u'] = tally.updatedAt;
  }
  if (tally.lastError) {
    sets.push('lastError = :e');
    values[':e'] = tally.lastError;
  }
}
