// The worker's part of the deadlines (docs/task-store.md, Deadlines). A task is born armed: its header's first
// put carries `db` (no deadline of a new task can be earlier), and the batch's new tasks share one DUE entry,
// written once the batch's writes are done. A count update that applies a callback sets `ca` (the time of the
// change) and unsettles; once it has returned the header, a deadline of the batch that falls well before the
// armed bucket (a settle, a file's warning or loss, a lost file recovered) moves the arm there. No read: the
// returned header says it all.
import {
  DUE_BUCKET_MS,
  bucketOf,
  fileDeadline,
  purgeAtOf,
  resumesStall,
  settleDeadline,
  stallDeadline,
  type TimeSettings,
} from '../../../domain/deadlines.ts';
import type { Capacity } from '../../../domain/task-store.ts';
import type { UnarmedTask } from '../batch/steps.ts';
import { toSummary } from '../../../domain/task-parts.ts';
import type { FileRecord } from '../../../domain/task.ts';
import { randomUUID } from 'node:crypto';
import { appKeyOf, headerParts } from '../table/items.ts';
import { Keys } from '../table/table.ts';
import { putAll, toItem, type Item, type Key, type TableClient } from '../table/table-client.ts';
import { bucketEntryItems, putBucketEntries, type TaskRef } from './time-buckets.ts';
import type { CountClauses } from '../write/count-update.ts';
import { changeBucketOf, headerChangeBucket } from './listing-hours.ts';
import { TIME_ATTRS, minutesAfter, timeOf, toMinutes } from './time-items.ts';

const A = TIME_ATTRS;

/** What a count update adds for the deadlines: a batch that applied a callback (not just duplicates) changed it. */
export function armingClauses(changed: boolean, now: number): CountClauses {
  if (!changed) return { set: {}, remove: [] };
  // In whole minutes, rounded up: a settle is never early, and the header stays small.
  return { set: { [A.changedAt]: minutesAfter(now) }, remove: [A.settledAt] };
}

/** The bucket a new task is armed at: no deadline of it can be earlier (a stall takes longer than that). */
const firstArm = (now: number, s: TimeSettings): number => bucketOf(now + Math.min(s.settleAfterMs, s.stallMinMs));

/** Keeps a task's arm in its header item; `forget` when the put that would create it found the task there. */
export interface NewTaskArming {
  arm(header: Item): void;
  forget(header: Item): void;
}

/**
 * The arms of the tasks a batch creates: each header is created with `db` (a new task's bucket), and their DUE
 * entries are written together once the batch's writes are done (`flush`), one shared entry for every task armed
 * in one bucket: a batch that creates several tasks pays one write. Their first `CHG` entries (./listing-hours.ts)
 * go the same way (`deferChange`). A batch stopped before its flush comes again (its records fail); its tasks,
 * found created, have their entries written again then (`again`).
 */
export class NewTaskArms implements NewTaskArming {
  private readonly pending = new Map<string, { task: TaskRef; bucket: number; puts: Set<Item> | null }>();
  private readonly changes = new Map<string, { task: TaskRef; bucket: number }>();
  private readonly now: () => number;
  private readonly s: TimeSettings;

  constructor(now: () => number, s: TimeSettings) {
    this.now = now;
    this.s = s;
  }

  arm(header: Item): void {
    const bucket = firstArm(this.now(), this.s);
    header[A.armed] = toMinutes(bucket);
    const task = taskOfHeader(header);
    const key = `${task.appKey.length}:${task.appKey}#${task.id}`;
    const entry = this.pending.get(key);
    // Two writes of the batch may both try to create the task: the one that does keeps the arm.
    if (entry?.puts) entry.puts.add(header);
    else if (!entry) this.pending.set(key, { task, bucket, puts: new Set([header]) });
  }

  forget(header: Item): void {
    const task = taskOfHeader(header);
    const key = `${task.appKey.length}:${task.appKey}#${task.id}`;
    const entry = this.pending.get(key);
    if (!entry?.puts) return;
    entry.puts.delete(header);
    if (entry.puts.size === 0) this.pending.delete(key);
  }

  /**
   * The `CHG` entry of a change at `changedAt` of a task this batch creates, written with the batch's arms (true);
   * false for any other task, whose count writes its own.
   */
  deferChange(appKey: string, id: string, changedAt: number): boolean {
    const key = `${appKey.length}:${appKey}#${id}`;
    const entry = this.pending.get(key);
    if (!entry?.puts) return false;
    this.changes.set(key, { task: entry.task, bucket: changeBucketOf(minutesAfter(changedAt)) });
    return true;
  }

  /** A task of a batch that comes again: its entries, which the earlier delivery may not have written. */
  again(header: Item): void {
    const task = taskOfHeader(header);
    const key = `${task.appKey.length}:${task.appKey}#${task.id}`;
    const changed = headerChangeBucket(header);
    if (changed !== null) this.changes.set(key, { task, bucket: changed });
    const armed = timeOf(header).armed;
    if (armed === null) return;
    const bucket = Math.max(armed, bucketOf(this.now()));
    this.pending.set(key, { task, bucket, puts: null });
  }

  /**
   * Writes the entries of the arms and changes made since the last flush: one shared entry per bucket, all of them
   * in one request. Returns the tasks whose entries could not be written, each with its error.
   */
  async flush(table: TableClient, cap: Capacity): Promise<UnarmedTask[]> {
    const token = randomUUID().slice(0, 8);
    const items: Item[] = [];
    const ownItems = new Map<string, { task: TaskRef; items: Item[] }>();
    for (const [kind, entries] of [
      ['DUE', this.pending],
      ['CHG', this.changes],
    ] as const) {
      const byBucket = new Map<number, TaskRef[]>();
      for (const [key, { task, bucket }] of entries) {
        byBucket.set(bucket, [...(byBucket.get(bucket) ?? []), task]);
        const own = ownItems.get(key) ?? { task, items: [] };
        own.items.push(...bucketEntryItems(kind, bucket, [task]));
        ownItems.set(key, own);
      }
      entries.clear();
      for (const [bucket, tasks] of byBucket) items.push(...bucketEntryItems(kind, bucket, tasks, token));
    }
    try {
      await putAll(table, items, cap);
      return [];
    } catch {
      // One entry DynamoDB refuses fails the whole request, and a shared entry names several tasks: each task's
      // entries are written again alone, so that only the tasks whose own entries fail have their records come again.
      const unarmed: UnarmedTask[] = [];
      for (const { task, items: own } of ownItems.values()) {
        try {
          await putAll(table, own, cap);
        } catch (error) {
          unarmed.push({ ...task, error });
        }
      }
      return unarmed;
    }
  }
}

/** The task a header item belongs to. */
/** The task a header is of. */
const taskOfHeader = (header: Item): TaskRef => ({
  appKey: appKeyOf(header),
  id: String(header.pk).slice(Keys.taskPk('').length),
});

/**
 * After a count update: the bucket to move the arm to, when a deadline of the batch (a settle, a stall made
 * shorter by a late start, a resumed task's next stall, a file's warning or loss, a lost file recovered) is before
 * the armed bucket and the armed one lies beyond a new task's (a deadline that close is found that late at most), or
 * when the task has no arm at all (written before tasks were armed, or disarmed by a sweep with nothing left, then
 * changed).
 */
export function armingMove(
  header: Item,
  files: readonly { before: FileRecord | null; after: FileRecord }[],
  now: number,
  s: TimeSettings,
): number | null {
  const parts = headerParts(header);
  if (!parts) return null;
  const time = timeOf(header);
  const updatedAt = parts.tally.updatedAt;
  const needs = [settleDeadline(toSummary(parts).status, updatedAt, time, s)];
  // A stalled task that a later callback reached is resuming (its stall is removed once the resume is out): it can
  // stall again, and its arm, left at its other deadlines while it was stalled, may lie well after that. One reached
  // by an older callback stays stalled. Otherwise callbacks only push a stall later, except a start arriving late
  // with the task's interval, which shortens its stall time (6 hours unknown, 15 minutes for a screenshot every
  // 30 s) to before the armed bucket.
  const resuming = resumesStall(parts.header, updatedAt, time, s);
  needs.push(stallDeadline(parts.header, updatedAt, resuming ? { ...time, stalledSince: null } : time, s));
  for (const { before, after } of files) {
    needs.push(fileDeadline(after, { warnedAt: after.warnedAt ?? null, lostAt: after.lostAt ?? null }, s));
    // A lost file whose success won: the sweeper counts the task's lost files again.
    if (before?.lostAt !== undefined && purgeAtOf(before) !== null && purgeAtOf(after) === null) needs.push(now);
  }
  const due = needs.filter((t): t is number => t !== null);
  if (due.length === 0) return null;
  const target = Math.max(bucketOf(Math.min(...due)), bucketOf(now));
  if (time.armed === null) return target;
  const horizon = firstArm(now, s) + DUE_BUCKET_MS;
  return target < time.armed && time.armed > horizon ? target : null;
}

/**
 * Moves the arm: the entry first, then `db` on condition that it is still later (or absent), the header's version
 * grown so that a put over an older copy
 * reads it again. A crash in between leaves an entry that the sweeper finds nothing in. Returns the header as
 * written (null: unchanged).
 */
export async function moveArm(
  table: TableClient,
  key: Key,
  task: TaskRef,
  bucket: number,
  cap: Capacity,
): Promise<Item | null> {
  await putBucketEntries(table, 'DUE', bucket, [task], cap);
  const res = await table.update(
    key,
    {
      update: `SET ${A.armed} = :b, ver = ver + :one`,
      condition: `attribute_exists(pk) AND (attribute_not_exists(${A.armed}) OR ${A.armed} > :b)`,
      values: toItem({ ':b': toMinutes(bucket), ':one': 1 }),
    },
    cap,
  );
  return res.ok ? res.item : null;
}
