// The worker's part of the deadlines (docs/task-store.md, Deadlines). A task is born armed: its header's first
// put carries `db`, the bucket its DUE entry was written in just before (no deadline of a new task can be
// earlier). A count update that applies a callback sets `ca` (the time of the change) and unsettles; once it has
// returned the header, a deadline of the batch that falls well before the armed bucket (a settle, a file's
// warning or loss, a lost file recovered) moves the arm there. No read: the returned header says it all.
import {
  DUE_BUCKET_MS,
  bucketOf,
  fileDeadline,
  purgeAtOf,
  settleDeadline,
  stallDeadline,
  type TimeSettings,
} from '../../domain/deadlines.ts';
import type { Capacity } from '../../domain/task-store.ts';
import { toSummary } from '../../domain/task-parts.ts';
import type { FileRecord } from '../../domain/task.ts';
import { headerParts } from './items.ts';
import { toItem, type Item, type Key, type TableClient } from './table-client.ts';
import { putBucketEntries, type TaskRef } from './time-buckets.ts';
import { TIME_ATTRS, minutesAfter, timeOf, toMinutes } from './time-items.ts';

const A = TIME_ATTRS;

/** What a count update adds for the deadlines: SET and REMOVE clauses and their values. */
export interface ArmingClauses {
  sets: string[];
  removes: string[];
  values: Record<string, unknown>;
}

/** The clauses of a count update: a batch that applied a callback (not only duplicates) changed its task. */
export function armingClauses(changed: boolean, now: number): ArmingClauses {
  if (!changed) return { sets: [], removes: [], values: {} };
  // In whole minutes, rounded up: a settle is never early, and the header stays small.
  return { sets: [`${A.changedAt} = :ca`], removes: [A.settledAt], values: { ':ca': minutesAfter(now) } };
}

/** The bucket a new task is armed at: no deadline of it can be earlier (a stall takes longer than that). */
export const firstArm = (now: number, s: TimeSettings): number =>
  bucketOf(now + Math.min(s.settleAfterMs, s.stallMinMs));

/**
 * Arms a task about to be created: its DUE entry first, then the header item (its put follows) says the bucket.
 * A put that finds the task there after all leaves an entry that the sweeper finds nothing in.
 */
export async function armNewHeader(
  table: TableClient,
  header: Item,
  task: TaskRef,
  now: number,
  s: TimeSettings,
  cap: Capacity,
): Promise<void> {
  const bucket = await putBucketEntries(table, 'DUE', firstArm(now, s), [task], cap);
  header[A.armed] = toMinutes(bucket);
}

/**
 * After a count update: the bucket to move the arm to, when a deadline of the batch (a settle, a file's warning
 * or loss, a lost file recovered) is before the armed bucket and the armed one lies beyond a new task's (a
 * deadline that close is found that late at most), or when the task has no arm at all (written before tasks
 * were armed, or disarmed by a sweep with nothing left, then changed).
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
  // A stalled task that changed is resuming (its stall is removed once the resume is out): it can stall again.
  if (time.armed === null) needs.push(stallDeadline(parts.header, updatedAt, { ...time, stalledSince: null }, s));
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
 * Moves the arm: the entry first, then `db` on condition that it is still later (or absent), the header's
 * version grown so that a put over an older copy reads it again. A crash in between leaves an entry that the
 * sweeper finds nothing in. Returns the header as written (null: unchanged).
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
