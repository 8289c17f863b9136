// `callbacks migrate`, for tasks written before tasks were armed (docs/task-store.md, Deadlines): a header without
// `db` is found by no sweep until its next callback arms it, so a stall, a settle, a purge warning or a loss of it
// would wait for that callback, or for ever. Each such header whose facts of time can still become due is armed at
// its next deadline as the worker arms one (./deadline-arming.ts moveArm: the DUE entry, then `db`), on condition
// that it is still unarmed: a worker that armed the task meanwhile wins. Idempotent: an armed header is not found
// again.
import { nextDeadline, type TimeSettings } from '../../domain/deadlines.ts';
import { noCapacity, type Item, type Key, type TableClient } from './table-client.ts';
import { moveArm, taskOfHeader } from './deadline-arming.ts';
import { headerParts } from './items.ts';
import { TaskSweeps, clockViewOf, nextArmBucket } from './task-sweeps.ts';
import { TIME_ATTRS, timeOf } from './time-items.ts';

/** Failed files not lost yet, by the header's counts: their warnings and losses are still to come. */
function failedOpen(header: Item): number {
  return (headerParts(header)?.counts?.failed ?? 0) - timeOf(header).lost;
}

/**
 * Whether a header, as a scan read it whole, has no arm while a fact of time of it may still become due: a stall or
 * a settle by its header, or a failed file not lost yet (its warning and loss). A header without counts may: it is
 * counted first, and read again.
 */
export function mayNeedArm(header: Item, s: TimeSettings): boolean {
  if (header[TIME_ATTRS.armed] !== undefined) return false;
  const parts = headerParts(header);
  if (!parts) return true;
  return failedOpen(header) > 0 || nextDeadline(clockViewOf(header, parts), [], s) !== null;
}

/**
 * Arms one unarmed task at the bucket of its next deadline (not before the current one), its header and failed
 * files read again. True when armed (`dryRun`: when it would be); false when it is armed already, or nothing of it
 * can become due.
 */
export async function armUnarmed(
  table: TableClient,
  key: Key,
  now: number,
  s: TimeSettings,
  dryRun: boolean,
): Promise<boolean> {
  const cap = noCapacity();
  const header = await table.get(key, cap);
  if (!header || header[TIME_ATTRS.armed] !== undefined) return false;
  const task = taskOfHeader(header);
  const files = failedOpen(header) > 0 ? await new TaskSweeps(table).failedFiles(task, cap) : [];
  const bucket = nextArmBucket(header, files, now, s);
  if (bucket === null) return false;
  if (dryRun) return true;
  return (await moveArm(table, key, task, bucket, cap, { onlyUnarmed: true })) !== null;
}
