// The filters of a listing of tasks: those a task's header answers by itself (its identity, its facts of time)
// and those its row answers (its status), and the check that a cursor belongs to the listing resumed.
import { type Capacity, InvalidCursorError, type TaskQuery } from '../../../domain/task-store.ts';
import type { TaskSummary } from '../../../domain/task-summary.ts';
import { FILE_HOLD_MS } from '../../../platform/delivery.ts';
import type { ResolvedQuery } from '../table/cursors.ts';
import { appKeyOf, countsOf, headerFactsOf } from '../table/items.ts';
import { noCapacity, type Item, type TableReader } from '../table/table-client.ts';
import { Keys } from '../table/table.ts';
import { failedFilesQuery, timeOf } from '../time/time-items.ts';

/** The filters on the header's facts of time, the purge window made absolute (from the first page's now). */
export function timeFiltersOf(query: TaskQuery, now: number): Pick<ResolvedQuery, 'lo' | 'sd' | 'pb'> {
  const f: Pick<ResolvedQuery, 'lo' | 'sd' | 'pb'> = {};
  if (query.lost) f.lo = true;
  if (query.stalled) f.sd = true;
  if (query.purgeWithinMs !== undefined) f.pb = Math.max(0, Math.trunc(now + query.purgeWithinMs));
  return f;
}

export const hasTimeFilter = (q: ResolvedQuery): boolean =>
  q.lo !== undefined || q.sd !== undefined || q.pb !== undefined;

export function filtersOf(query: TaskQuery): Omit<ResolvedQuery, 'from' | 'to'> {
  const f: Omit<ResolvedQuery, 'from' | 'to'> = {};
  if (query.roomId) f.r = query.roomId;
  if (query.sessionId) f.s = query.sessionId;
  if (query.appKey) f.a = query.appKey;
  if (query.status) f.st = query.status;
  if (query.service) f.sv = query.service;
  if (query.userId) f.u = query.userId;
  if (query.verification) f.vf = query.verification;
  return f;
}

const FILTER_NAMES: Record<keyof Omit<ResolvedQuery, 'from' | 'to' | 'pb' | 'us' | 'es'>, string> = {
  r: 'roomId',
  s: 'sessionId',
  a: 'appKey',
  st: 'status',
  sv: 'service',
  u: 'userId',
  lo: 'lost',
  sd: 'stalled',
  vf: 'verification',
};

/** Refuses a cursor made for a listing with other filters than those given (absent ones are the cursor's). */
export function checkResumedFilters(query: TaskQuery, q: ResolvedQuery): void {
  const given = { ...filtersOf(query), ...(query.lost ? { lo: true } : {}), ...(query.stalled ? { sd: true } : {}) };
  for (const [short, value] of Object.entries(given) as [keyof typeof FILTER_NAMES, string | boolean][]) {
    if (q[short] !== value)
      throw new InvalidCursorError(`the cursor belongs to a listing with another ${FILTER_NAMES[short]} filter`);
  }
  // The purge window was made absolute on the first page: a cursor of a listing without one is refused.
  if (query.purgeWithinMs !== undefined && q.pb === undefined)
    throw new InvalidCursorError('the cursor belongs to a listing with another purgeBefore filter');
}

/** The filters a task header answers by itself: all but the status, which is added up from the task's items. */
export function headerMatches(header: Item, q: ResolvedQuery): boolean {
  const facts = headerFactsOf(header);
  return (
    (q.a === undefined || appKeyOf(header) === q.a) &&
    (q.r === undefined || facts.roomId === q.r) &&
    (q.s === undefined || facts.sessionId === q.s) &&
    (q.sv === undefined || facts.service === q.sv) &&
    (q.u === undefined || facts.userId === q.u) &&
    timeMatches(header, q)
  );
}

/**
 * The filters on the facts of time, read off the header (docs/task-store.md): `nLost`, `st`, and for a purge
 * window a failed file not lost left (`nFailed` > `nLost`), whose purgeAt `purgeWithin` then reads from the
 * task's failed files. A header that keeps no counts keeps none.
 */
function timeMatches(header: Item, q: ResolvedQuery): boolean {
  if (!hasTimeFilter(q)) return true;
  const time = timeOf(header);
  if (q.lo && time.lost <= 0) return false;
  if (q.sd && time.stalledSince === null) return false;
  if (q.pb !== undefined) {
    const failed = countsOf(header)?.failed ?? 0;
    if (failed - time.lost <= 0) return false;
  }
  return true;
}

/**
 * For a purge window (`q.pb`), whether a failed file of the task that is not lost is purged by then: one Query
 * of the task's files, the failed ones not lost filtered (only their first failure read). Without the filter,
 * true.
 */
export async function purgeWithin(
  table: TableReader,
  header: Item,
  q: ResolvedQuery,
  cap: Capacity = noCapacity(),
): Promise<boolean> {
  if (q.pb === undefined) return true;
  const appKey = appKeyOf(header);
  const id = String(header.pk).slice(Keys.taskPk('').length);
  const query = failedFilesQuery(appKey, id, { notLost: true, projection: 'firstFailureAt' });
  for await (const item of table.queryAll(query, cap)) {
    if (typeof item.firstFailureAt === 'number' && item.firstFailureAt + FILE_HOLD_MS <= q.pb) return true;
  }
  return false;
}

export function matches(s: TaskSummary, q: ResolvedQuery): boolean {
  return (
    (q.a === undefined || s.appKey === q.a) &&
    (q.st === undefined || s.status === q.st) &&
    (q.r === undefined || s.roomId === q.r) &&
    (q.s === undefined || s.sessionId === q.s) &&
    (q.sv === undefined || s.service === q.sv) &&
    (q.u === undefined || s.userId === q.u)
  );
}
