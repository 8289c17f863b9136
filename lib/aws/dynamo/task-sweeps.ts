// What the sweeper reads and writes of a task (docs/task-store.md, Deadlines): its header, its failed files, and
// the conditional writes of a sweep: the claim (the task's transitions and the sweep's lease, on condition of
// the version read and of no live lease), a file's mark (on condition that its winning upload is the one read),
// and the re-arm that ends the sweep of the task. Every write grows the item's version, so that a worker's put
// over an older copy fails and reads it again.
import {
  bucketOf,
  nextDeadline,
  type FileMarks,
  type TaskClockView,
  type TimeSettings,
} from '../../domain/deadlines.ts';
import type { TaskParts } from '../../domain/task-parts.ts';
import { toSummary } from '../../domain/task-parts.ts';
import type { Capacity } from '../../domain/task-store.ts';
import type { FileRecord } from '../../domain/task.ts';
import { filesWithAttempts } from './file-attempts.ts';
import { headerParts } from './items.ts';
import { toItem, type Item, type Key, type TableClient } from './table-client.ts';
import { Keys } from './table.ts';
import { putBucketEntries, type TaskRef } from './time-buckets.ts';
import { TIME_ATTRS, failedFilesQuery, timeOf, toMinutes } from './time-items.ts';
import { READABLE } from './readable.ts';

const A = TIME_ATTRS;

/** A failed file as a sweep reads it: its record (attempts counted), its marks, its item's key and version. */
export interface SweptFile {
  record: FileRecord;
  marks: FileMarks;
  key: Key;
  ver: number | undefined;
}

const headerKeyOf = (t: TaskRef): Key => ({ pk: Keys.taskPk(t.id), sk: Keys.headerSk(t.appKey) });

/** What the rules of lib/domain/deadlines.ts read of a task: its header's parts, status, latest callback, time. */
export function clockViewOf(header: Item, parts: TaskParts): TaskClockView {
  return {
    header: parts.header,
    status: toSummary(parts).status,
    updatedAt: parts.tally.updatedAt,
    time: timeOf(header),
  };
}

/**
 * The bucket to arm a task at: its next deadline's, not before the current one (its header and failed files as
 * read); null when nothing of it can become due, or the header has no counts.
 */
export function nextArmBucket(
  header: Item,
  files: readonly Pick<SweptFile, 'record' | 'marks'>[],
  now: number,
  s: TimeSettings,
): number | null {
  const parts = headerParts(header);
  if (!parts) return null;
  const next = nextDeadline(
    clockViewOf(header, parts),
    files.map((f) => ({ file: f.record, marks: f.marks })),
    s,
  );
  return next === null ? null : Math.max(bucketOf(next), bucketOf(now));
}

export class TaskSweeps {
  readonly table: TableClient;

  constructor(table: TableClient) {
    this.table = table;
  }

  /** The task's header, strongly consistent (null: none). */
  header(t: TaskRef, cap: Capacity): Promise<Item | null> {
    return this.table.get(headerKeyOf(t), cap);
  }

  /**
   * The task's files whose winning upload failed: one Query of its files (the failed ones filtered), their
   * attempts counted as a file event shows them. Exported for the read side too (a task's purge countdown).
   */
  async failedFiles(t: TaskRef, cap: Capacity): Promise<SweptFile[]> {
    const items: Item[] = [];
    for await (const item of this.table.queryAll(failedFilesQuery(t.appKey, t.id, { consistent: true }), cap))
      items.push(item);
    const records = await filesWithAttempts(this.table, t.appKey, t.id, items, cap);
    return records.map((record, i) => ({
      record,
      marks: { warnedAt: record.warnedAt ?? null, lostAt: record.lostAt ?? null },
      key: { pk: items[i]!.pk, sk: items[i]!.sk },
      ver: items[i]!.ver,
    }));
  }

  /**
   * The sweep's claim on the task: its transitions (`st` with `sf`, `sa`) and its lease (`sl` = `lease`), on condition
   * that the header is the version read and no other sweep holds a live lease. Returns the header as written
   * (null: the condition failed).
   */
  async claim(
    t: TaskRef,
    version: number,
    set: { stalledSince: number | null; stalledFrom: number | null; settledAt: number | null },
    lease: number,
    now: number,
    cap: Capacity,
  ): Promise<Item | null> {
    const sets = ['ver = ver + :one', `${A.lease} = :sl`];
    const values: Record<string, unknown> = { ':one': 1, ':sl': lease, ':v': version, ':now': now };
    if (set.stalledSince !== null) {
      sets.push(`${A.stalledSince} = :st`);
      values[':st'] = set.stalledSince;
      if (set.stalledFrom !== null) {
        sets.push(`${A.stalledFrom} = :sf`);
        values[':sf'] = set.stalledFrom;
      }
    }
    if (set.settledAt !== null) {
      sets.push(`${A.settledAt} = :sa`);
      values[':sa'] = set.settledAt;
    }
    const res = await this.table.update(
      headerKeyOf(t),
      {
        update: `SET ${sets.join(', ')}`,
        condition: `ver = :v AND (attribute_not_exists(${A.lease}) OR ${A.lease} < :now OR ${A.lease} = :sl)`,
        values: toItem(values),
      },
      cap,
    );
    return res.ok ? res.item : null;
  }

  /** Marks a file warned (`pw`) and/or lost (`lo`), on condition that its winning upload is still the one read. */
  async markFile(f: SweptFile, marks: Partial<FileMarks>, cap: Capacity): Promise<boolean> {
    const upload = f.record.upload;
    if (!upload) return false;
    const sets = ['ver = if_not_exists(ver, :zero) + :one'];
    const values: Record<string, unknown> = { ':one': 1, ':zero': 0, ':rank': upload.rank };
    // Each mark once: a file marked by another sweep is not this one's to publish.
    const conditions = ['attribute_exists(pk)', '#u.#r = :rank'];
    if (marks.warnedAt != null) {
      sets.push('pw = :pw');
      conditions.push('attribute_not_exists(pw)');
      values[':pw'] = marks.warnedAt;
    }
    if (marks.lostAt != null) {
      sets.push('lo = :lo', '#state = :lost');
      conditions.push('attribute_not_exists(lo)');
      values[':lo'] = marks.lostAt;
      values[':lost'] = 'lost';
    }
    const res = await this.table.update(
      f.key,
      {
        update: `SET ${sets.join(', ')}`,
        condition: conditions.join(' AND '),
        names: { '#u': 'upload', '#r': 'rank', ...(marks.lostAt != null ? { '#state': READABLE.fileState } : {}) },
        values: toItem(values),
      },
      cap,
    );
    return res.ok;
  }

  /**
   * Ends the sweep of a task: the entry of its next deadline (null: none left, the arm is removed), then one
   * update of the header with that arm and its lost files, its lease released, on condition of its version.
   * Returns the header as written (null: it changed meanwhile; the caller reads it again).
   */
  async rearm(
    t: TaskRef,
    version: number,
    next: number | null,
    lost: number,
    armed: number | null,
    cap: Capacity,
  ): Promise<Item | null> {
    if (next !== null && next !== armed) await putBucketEntries(this.table, 'DUE', next, [t], cap);
    const values: Record<string, unknown> = { ':one': 1, ':v': version, ':n': lost };
    const sets = ['ver = ver + :one', `${A.lost} = :n`];
    const removes = [A.lease as string];
    if (next === null) removes.push(A.armed);
    else {
      sets.push(`${A.armed} = :b`);
      values[':b'] = toMinutes(next);
    }
    const res = await this.table.update(
      headerKeyOf(t),
      { update: `SET ${sets.join(', ')} REMOVE ${removes.join(', ')}`, condition: 'ver = :v', values: toItem(values) },
      cap,
    );
    return res.ok ? res.item : null;
  }
}
