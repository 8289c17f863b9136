// The filters of a listing of tasks: those a task's header answers by itself (its identity, its facts of time)
// and those its row answers (its status), and the check that a cursor belongs to the listing resumed.
import { InvalidCursorError, type TaskQuery, type TaskSummary } from '../../domain/task-store.ts';
import type { ResolvedQuery } from './cursors.ts';
import { appKeyOf, countsOf, headerFactsOf, timeOf } from './items.ts';
import type { Item } from './table-client.ts';

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
 * window `fp`, the earliest purgeAt of a failed file not lost (a lower bound until the sweeper next reads the
 * task's files), with a failed file not lost left (`nFailed` > `nLost`). A header that keeps no counts keeps none.
 */
function timeMatches(header: Item, q: ResolvedQuery): boolean {
  if (!hasTimeFilter(q)) return true;
  const time = timeOf(header);
  if (q.lo && time.lost <= 0) return false;
  if (q.sd && time.stalledSince === null) return false;
  if (q.pb !== undefined) {
    const failed = countsOf(header)?.failed ?? 0;
    if (failed - time.lost <= 0 || time.earliestPurge === null || time.earliestPurge > q.pb) return false;
  }
  return true;
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
