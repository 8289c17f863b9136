// What `callbacks status` says is wrong with the tasks now, each part a bounded read: the uploads failing in the tasks
// changed in the last hour, the lost files and stalled tasks of the last days, the next purge deadline, and the last
// callback the receiver applied, by its own clock. Each line names the command that lists what it counts.
import { lastChange } from '../lib/aws/dynamo/read/last-change.ts';
import { earliestPurge } from '../lib/aws/dynamo/read/purge-deadlines.ts';
import { TableReader } from '../lib/aws/dynamo/table/table-client.ts';
import { STORAGE_CHANGE_DELAY_MS } from '../lib/domain/deadlines.ts';
import type { Service } from '../lib/platform/services.ts';
import { inParallel } from '../lib/in-parallel.ts';
import type { Target } from '../devkit/local/target.ts';
import { isoTime, plural, relativeTime, styled, timeWithRelative, type Colors } from './format.ts';
import { durationText } from './commands/tasks.ts';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
/** The newest tasks of the window read for lost files, stalls and purge deadlines; beyond, lower bounds. */
const TASKS_READ_LIMIT = 5000;
/** The tasks changed in the last hour read for failing uploads. */
const CHANGED_READ_LIMIT = 1000;
/** Tasks whose failed files are read for the next purge deadline (the newest first). */
const PURGE_READ_LIMIT = 200;
/** Headers of the newest hour read for the last callback. */
const LAST_CHANGE_HEADERS = 1000;

/** The lost files, stalled tasks and next purge deadline among the tasks of the last `days` days. */
export interface TaskFacts {
  days: number;
  /** Tasks read (the newest first); `complete` false when TASKS_READ_LIMIT were: the counts are lower bounds. */
  read: number;
  complete: boolean;
  lost: { files: number; tasks: number };
  stalled: { tasks: number; longestSince: number | null };
  /** Tasks with a failed file not lost yet, and the earliest deadline among (the newest PURGE_READ_LIMIT of) them. */
  purge: {
    tasks: number;
    next: { purgeAt: number; fileName: string; service: Service; id: string; appKey: string } | null;
  };
}

/** The failed files not lost yet of the tasks a callback changed in the last hour: uploads failing now. */
export interface FailingUploads {
  files: number;
  tasks: number;
  complete: boolean;
}

export interface LastCallback {
  service: Service;
  id: string;
  appKey: string;
  /** The receiver's minute of the change that applied it, rounded up: received by then. */
  receivedBy: number;
  /** The platform's timestamp of the task's latest callback. */
  at: number;
  /** False when its hour held more tasks than were read: the latest of those read. */
  complete: boolean;
}

export async function readTaskFacts(target: Target, days: number, now: number): Promise<TaskFacts> {
  const facts: TaskFacts = {
    days,
    read: 0,
    complete: true,
    lost: { files: 0, tasks: 0 },
    stalled: { tasks: 0, longestSince: null },
    purge: { tasks: 0, next: null },
  };
  const failing: { service: Service; id: string; appKey: string }[] = [];
  for await (const t of target.tasks.listTasks({ since: now - days * DAY_MS, limit: TASKS_READ_LIMIT })) {
    facts.read += 1;
    if (t.lostFiles > 0) {
      facts.lost.files += t.lostFiles;
      facts.lost.tasks += 1;
    }
    if (t.stalledSince !== null) {
      facts.stalled.tasks += 1;
      if (facts.stalled.longestSince === null || t.stalledSince < facts.stalled.longestSince)
        facts.stalled.longestSince = t.stalledSince;
    }
    if (t.failedFiles > t.lostFiles) failing.push(t);
  }
  facts.complete = facts.read < TASKS_READ_LIMIT;
  facts.purge.tasks = failing.length;
  const table = new TableReader(target.dynamo, target.tableName);
  const deadlines = await inParallel(failing.slice(0, PURGE_READ_LIMIT), 8, (t) =>
    earliestPurge(table, t.appKey, t.id),
  );
  deadlines.forEach((d, i) => {
    if (d && (facts.purge.next === null || d.purgeAt < facts.purge.next.purgeAt)) {
      const t = failing[i]!;
      facts.purge.next = { ...d, service: t.service, id: t.id, appKey: t.appKey };
    }
  });
  return facts;
}

export async function readFailingUploads(target: Target, now: number): Promise<FailingUploads> {
  const out: FailingUploads = { files: 0, tasks: 0, complete: true };
  let read = 0;
  for await (const t of target.tasks.listTasks({ updatedSince: now - HOUR_MS, limit: CHANGED_READ_LIMIT })) {
    read += 1;
    if (t.failedFiles <= t.lostFiles) continue;
    out.files += t.failedFiles - t.lostFiles;
    out.tasks += 1;
  }
  out.complete = read < CHANGED_READ_LIMIT;
  return out;
}

/** The last callback the receiver applied, within `days` days. */
export async function readLastCallback(target: Target, days: number, now: number): Promise<LastCallback | null> {
  const table = new TableReader(target.dynamo, target.tableName);
  const found = await lastChange(table, now, { hours: days * 24, headerLimit: LAST_CHANGE_HEADERS });
  if (!found) return null;
  const { task } = found;
  return {
    service: task.service,
    id: task.id,
    appKey: task.appKey,
    receivedBy: found.receivedBy,
    at: task.updatedAt,
    complete: found.complete,
  };
}

const atLeast = (complete: boolean, text: string) => (complete ? text : `at least ${text}`);

export function failingUploadsLine(f: FailingUploads, c: Colors): string {
  if (f.tasks === 0) return c.green('none in the tasks changed in the last hour');
  return styled`${c.yellow(atLeast(f.complete, plural(f.files, 'file')))} failing in ${plural(
    f.tasks,
    'task',
  )} changed in the last hour: ${c.dim('callbacks tasks list --updated-since 1h --status upload_failed')}`;
}

export function lostFilesLine(f: TaskFacts, c: Colors): string {
  const window = `of the last ${plural(f.days, 'day')}`;
  if (f.lost.files === 0) return c.green(`none in the tasks ${window}`);
  return styled`${c.red(atLeast(f.complete, plural(f.lost.files, 'file')))} in ${plural(
    f.lost.tasks,
    'task',
  )} ${window}: ${c.dim('callbacks tasks list --lost')}`;
}

export function stalledTasksLine(f: TaskFacts, c: Colors, now: number): string {
  const window = `of the last ${plural(f.days, 'day')}`;
  if (f.stalled.tasks === 0) return c.green(`none ${window}`);
  const longest =
    f.stalled.longestSince === null ? '' : `, the longest since ${timeWithRelative(f.stalled.longestSince, now)}`;
  const count = c.yellow(atLeast(f.complete, plural(f.stalled.tasks, 'task')));
  const list = c.dim('callbacks tasks list --stalled');
  return styled`${count} ${window}${longest}; each waits for the platform's next callback: ${list}`;
}

export function nextPurgeLine(f: TaskFacts, c: Colors, now: number): string {
  const next = f.purge.next;
  if (!next) return c.green('no failed file waits for its purge');
  const left = next.purgeAt - now;
  const when = left > 0 ? `${isoTime(next.purgeAt)} (in ${durationText(left)})` : timeWithRelative(next.purgeAt, now);
  // Passed: the platform has deleted it, and the sweeper marks it lost when it comes to it.
  const late =
    left <= 0
      ? ', passed: deleted by the platform, lost once swept'
      : left < STORAGE_CHANGE_DELAY_MS
        ? ', sooner than a storage change applies'
        : '';
  const colour = left < STORAGE_CHANGE_DELAY_MS ? c.red : c.yellow;
  const list = c.dim('callbacks tasks list --purge-before 24h');
  const waiting = plural(f.purge.tasks, 'task');
  return styled`${colour(`${when}${late}`)}: ${next.fileName} of ${next.service} task ${next.id} of ${
    next.appKey
  }; ${waiting} with failed files not lost yet: ${list}`;
}

export function lastCallbackLine(l: LastCallback, c: Colors, now: number): string {
  const some = l.complete ? '' : ' (of the tasks read in its hour)';
  // The minute of the change, rounded up: it may lie ahead of now by less than a minute.
  const ago = relativeTime(Math.min(l.receivedBy, now), now);
  return styled`received by ${isoTime(l.receivedBy)} (${ago})${some}: ${l.service} task ${l.id} of ${
    l.appKey
  }, ${c.dim(`its latest callback stamped ${isoTime(l.at)} by the platform`)}`;
}
