// Where a task's raw callbacks are once the table no longer keeps them: the table keeps each one RAW_EVENT_TTL_DAYS
// after it was received (docs/task-store.md), the archive all of them (docs/archive.md). A page of a task's callbacks
// that began before the table's retention says so, with the SQL of the archive's table `raw` that lists the task's
// whole history, rather than answer short as if there were no more (docs/api.md, `archived`).
import type { Service } from '../platform/services.ts';

const DAY_MS = 86_400_000;
/**
 * How far before its first callback's timestamp a task's callbacks may have been received: a sender's clock ahead
 * of ours, within the signature's tolerance (300 s) and more.
 */
const CLOCK_MARGIN_MS = 3_600_000;

/** A task as the archive files its callbacks: its service, appKey, id, and its first callback's timestamp. */
export interface ArchivedTask {
  service: Service;
  appKey: string;
  id: string;
  /** Epoch ms: the timestamp of the task's identity callback (its start, else its earliest). */
  firstAt: number;
}

/** What a page of a task's callbacks says when the table no longer holds its oldest ones. */
export interface ArchivedCallbacks {
  /** ISO 8601: the callbacks received before this have left the table (or are leaving: TTL takes up to days). */
  before: string;
  /** The SQL of `raw` (`callbacks archive query`) that lists the task's whole history, from the archive. */
  query: string;
}

const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);
/** An SQL string literal (Athena's and DuckDB's alike: a quote is doubled). */
const literal = (text: string) => `'${text.replaceAll("'", "''")}'`;

/** The task's callbacks in the archive, oldest first: its service's days from its first callback's to `now`'s. */
export function taskHistorySql(task: ArchivedTask, now: number): string {
  return (
    'SELECT received_at, type, file_name, outcome, verdict, body FROM raw ' +
    `WHERE service = ${literal(task.service)} ` +
    `AND dt BETWEEN '${dayOf(task.firstAt - CLOCK_MARGIN_MS)}' AND '${dayOf(now)}' ` +
    `AND app_key = ${literal(task.appKey)} AND task_id = ${literal(task.id)} ORDER BY received_at`
  );
}

/**
 * Where the task's older callbacks are, when the table keeps raw callbacks `retentionDays` and the task began
 * before that; null when the table still holds every one of them.
 */
export function archivedCallbacks(task: ArchivedTask, now: number, retentionDays: number): ArchivedCallbacks | null {
  const before = now - retentionDays * DAY_MS;
  if (task.firstAt >= before) return null;
  return { before: new Date(before).toISOString(), query: taskHistorySql(task, now) };
}

/** The sentence the CLI and the console show of it. */
export function archivedSentence(archived: ArchivedCallbacks): string {
  return (
    `Callbacks received before ${archived.before} are no longer in the table, which keeps them for a while; the ` +
    `archive keeps them all. The task's whole history: callbacks archive query "${archived.query}"`
  );
}
