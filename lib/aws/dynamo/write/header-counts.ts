// The counts a task's header keeps: one update per task and batch that adds what the batch's writes changed
// (lib/domain/task-counts.ts) and, with sequence numbers, records the last message it absorbed on condition
// that the header holds an earlier one; and a recount from the task's items, for what no batch can charge
// (a message given up after a partial write, a write without sequence number that cannot tell).
import type { Callback } from '../../../domain/callback.ts';
import {
  NONE_ABSORBED,
  addCounts,
  batchChange,
  laterMarksChange,
  lastSequence,
  type TaskCounts,
  type WriteCharge,
} from '../../../domain/task-counts.ts';
import { completedAt } from '../../../domain/task-events.ts';
import { toSummary, type TaskParts } from '../../../domain/task-parts.ts';
import type { Capacity } from '../../../domain/task-store.ts';
import { emptyTally, joinTallies, tallyCallback, type FileRecord, type Tally } from '../../../domain/task.ts';
import { storedError } from '../table/error-facts.ts';
import { COUNT_ATTRS, UNCOUNTED_END, headerParts, tallyOf, withReadable } from '../table/items.ts';
import { READABLE } from '../table/readable.ts';
import { HeldPuts, type HeldPut } from './held-puts.ts';
import type { KnownItems } from './known-items.ts';
import { countUpdate, setTally, withClauses, type CountClauses } from './count-update.ts';
import { ListingHours } from '../time/listing-hours.ts';
import { ContentionError, toItem, type Item, type Key, type TableClient } from '../table/table-client.ts';
import { Keys } from '../table/table.ts';
import { TIME_ATTRS } from '../time/time-items.ts';
import { recountTask } from './task-recount.ts';

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
  /** More for the update to set and remove (the deadlines: ../time/deadline-arming.ts). */
  extra?: CountClauses;
  /** The time of the change the update records in `ca` (null: the batch changed nothing): ../time/listing-hours.ts. */
  changedAt?: number | null;
  /** Its `CHG` entry is written with the batch's arms (a task the batch creates), not before the update. */
  changeDeferred?: boolean;
}

/** What a held header put is written with: the batch's change to the counts, its last sequence number, its tally. */
interface HeldCount {
  key: Key;
  change: TaskCounts;
  seq: string;
  tally: Tally;
  extra: TaskWrites['extra'];
}

export class HeaderCounts {
  private readonly table: TableClient;
  private readonly headers: KnownItems;
  private readonly held: HeldPuts;
  private readonly hours: ListingHours;

  /**
   * `held`: the header puts the batch's writes held for its count to carry (./held-puts.ts).
   */
  constructor(table: TableClient, headers: KnownItems, held = new HeldPuts()) {
    this.table = table;
    this.headers = headers;
    this.held = held;
    this.hours = new ListingHours(table);
  }

  /** Drops the header put held for a task, if its batch's count did not write it (its records failed). */
  dropHeld(appKey: string, id: string): void {
    this.held.drop(headerKey(appKey, id));
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
    const header = await this.countOnce(w, cap);
    // Counted now, or by an earlier delivery of the batch whose answer was lost: either way not confirmed yet.
    const behind = laterMarksChange(w.charges, w.absorbed);
    if (header && completesNow(header, behind, w.files)) {
      const seq = w.absorbed === null ? null : lastSequence(w.charges);
      return this.confirmCompletion(w, seq, cap);
    }
    return header;
  }

  private async countOnce(w: TaskWrites, cap: Capacity): Promise<Item | null> {
    const key = headerKey(w.appKey, w.id);
    const change = batchChange(w.charges, w.absorbed);
    const seq = w.absorbed === null ? null : lastSequence(w.charges);
    let tally = emptyTally();
    for (const cb of w.callbacks) tally = tallyCallback(tally, cb);
    // Listings by time of change and of end (`CHG`): its entry first, at the hour of the `ca` the count then
    // records with the deadlines' clauses (../time/listing-hours.ts, ../time/deadline-arming.ts).
    const known = this.headers.get(key);
    if (w.changedAt !== undefined && w.changedAt !== null && !w.changeDeferred)
      await this.hours.recordChange(w.appKey, w.id, known, w.changedAt, cap);
    // A header put the batch's starts or ends held (or the one that created the task): one put writes it
    // with the counts.
    const held = seq === null ? undefined : this.held.take(key);
    if (held) {
      return this.putHeld(held, { key, change, seq: seq!, tally, extra: w.extra }, cap);
    }
    // The header as this worker last wrote or read it: with one writer per task (sequence numbers), the one
    // stored. The update is then made on condition of its version, its tally joined and its completion known
    // before it goes out (one write). Without a copy, or without sequence numbers (several workers may count
    // one task at once), first as if the batch's tally were the newest (callbacks mostly come in time order).
    // Either way, when the condition fails, once more from the header as found.
    const copy = seq === null ? undefined : known;
    let found: Item | null = copy ?? null;
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      const joined = found ? joinTallies(tally, tallyOf(found)) : tally;
      const res = await this.table.update(key, countUpdate(change, seq, joined, found, w.extra), cap);
      if (res.ok) return this.keepStatus(key, res.item, cap);
      const old = res.old === undefined ? await this.table.get(key, cap) : res.old;
      // A write was applied, so the header exists: one not found is not found yet.
      if (!old) continue;
      if (seq !== null && old.seq !== undefined && old.seq >= seq) return this.republished(key, cap);
      found = old;
    }
    throw new ContentionError(`the header of task ${w.id} stayed contended after ${MAX_ATTEMPTS} attempts`);
  }

  /**
   * The held header put, written with the batch's counts, tally, sequence number and completion, on condition
   * of the version it replaces. Failing, it loses what was held (another writer came in between): it throws,
   * and the task's records come again.
   */
  private async putHeld(held: HeldPut, count: HeldCount, cap: Capacity): Promise<Item> {
    const { key, change, seq, tally, extra } = count;
    let base = held.previous;
    let built = held.item;
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      const item: Item = withClauses({ ...built, seq }, extra);
      // The end this put records ahead of its count is absorbed by it.
      if (typeof item[UNCOUNTED_END] === 'string' && item[UNCOUNTED_END] <= seq) delete item[UNCOUNTED_END];
      for (const [k, attr] of Object.entries(COUNT_ATTRS) as [keyof TaskCounts, string][])
        item[attr] = (item[attr] ?? 0) + change[k];
      const joined = joinTallies(tally, tallyOf(item));
      item.lastError = storedError(joined.lastError);
      item.updatedAt = joined.updatedAt ?? undefined;
      Object.assign(item, withReadable(item));
      if (await this.table.putVersioned(item, base?.ver, cap)) {
        const written = { ...item, ver: (base?.ver ?? 0) + 1 };
        this.headers.remember(key, written);
        return written;
      }
      // Written by another meanwhile (a copy kept from an earlier batch of the task, applied elsewhere since):
      // the held callbacks joined again into the header as stored.
      const stored = await this.table.get(key, cap);
      if (!held.rebuild) break;
      base = stored;
      built = held.rebuild(stored);
    }
    this.headers.remember(key, null);
    throw new ContentionError(`the header of task ${key.pk} stayed contended while its put was held`);
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
      // Read a page at a time (./task-recount.ts); the completion off the files as they stand, not as counted.
      const task = await recountTask(this.table, { appKey, id, through }, cap);
      if (!task) return null;
      const { header, absorbed, counts, done } = task;
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
      setTally(sets, values, task.tally);
      // The lost files, as the sweeper counts them (lib/domain/deadlines.ts).
      sets.push(`${TIME_ATTRS.lost} = :nLost`);
      values[':nLost'] = task.lost;
      if (done !== null) {
        sets.push('doneAt = :d');
        values[':d'] = done;
      }
      // The status a person reads, as the header it writes will say it.
      const after = withReadable({
        ...header,
        ...countsAsAttributes(counts),
        ...(done !== null ? { doneAt: done } : {}),
      });
      if (absorbed !== NONE_ABSORBED) after.seq = absorbed;
      if (after[READABLE.status] !== undefined) {
        sets.push(`#status = :status`);
        values[':status'] = after[READABLE.status];
      }
      const res = await this.table.update(
        key,
        {
          update: `SET ${sets.join(', ')}`,
          names: { '#status': READABLE.status },
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

  /**
   * The header after a count update, its `status` (what a person reads: ../table/readable.ts) written again when the
   * update changed it (an update adds to counts it does not read, so the status it leaves is known only after).
   * A status changes a few times in a task's life: one small write each time.
   */
  private async keepStatus(key: Key, header: Item, cap: Capacity): Promise<Item> {
    const status = withReadable(header)[READABLE.status];
    if (status === undefined || header[READABLE.status] === status) {
      this.headers.remember(key, header);
      return header;
    }
    const res = await this.table.update(
      key,
      {
        update: 'SET #status = :status, ver = ver + :one',
        names: { '#status': READABLE.status },
        condition: 'ver = :v',
        values: toItem({ ':status': status, ':one': 1, ':v': header.ver }),
      },
      cap,
    );
    // Written by another meanwhile: that writer wrote the status it left.
    const item = res.ok ? res.item : header;
    this.headers.remember(key, res.ok ? item : null);
    return item;
  }

  /**
   * The header of a batch counted before (a delivery that stopped after its count): nothing to add, but the events
   * its records publish again are read off it, with the files as this delivery finds them, which may differ from
   * what the earlier delivery published under the header's version. A version of their own keeps one task per
   * `sequence` (one small write, on a redelivery only).
   */
  private async republished(key: Key, cap: Capacity): Promise<Item | null> {
    const res = await this.table.update(
      key,
      { update: 'SET ver = ver + :one', condition: 'attribute_exists(pk)', values: toItem({ ':one': 1 }) },
      cap,
    );
    if (!res.ok) return null;
    this.headers.remember(key, res.item);
    return res.item;
  }

  /**
   * A task that its counts say completes now is recounted from its items before `doneAt` is set (the recount sets
   * it, off its files as they stand): `task.completed` is a fact no later callback takes back, and counts can miss a
   * file a message wrote before it went to the dead-letter queue with its worker, until that message is redriven.
   * Once per task: a header with `doneAt` never comes here again.
   */
  private async confirmCompletion(w: TaskWrites, seq: string | null, cap: Capacity): Promise<Item | null> {
    return this.recount(w.appKey, w.id, seq, cap);
  }
}

/** Whether a header its update left without `doneAt` completes with the batch's files (`behind`: laterMarksChange). */
function completesNow(header: Item, behind: TaskCounts, files: readonly FileRecord[]): boolean {
  const parts = headerParts(header, header.seq, true);
  if (!parts || header.doneAt !== undefined) return false;
  return completionTime({ ...parts, counts: addCounts(parts.counts!, behind), files }) !== null;
}

const headerKey = (appKey: string, id: string): Key => ({ pk: Keys.taskPk(id), sk: Keys.headerSk(appKey) });

/** Counts as the header's attributes. */
function countsAsAttributes(c: TaskCounts): Item {
  const out: Item = {};
  for (const [k, attr] of Object.entries(COUNT_ATTRS) as [keyof TaskCounts, string][]) out[attr] = c[k];
  return out;
}

/** When a completed task completed (null: it is not). */
function completionTime(parts: TaskParts): number | null {
  if (toSummary(parts).status !== 'completed') return null;
  return completedAt(parts);
}
