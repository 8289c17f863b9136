// What the sweeper reads and writes of a task (docs/task-store.md, Deadlines): its header, its failed files, and
// the conditional writes of a sweep: the claim (the task's transitions and the sweep's lease, on condition of
// the version read and of no live lease), a file's mark (on condition that its winning upload is the one read),
// and the re-arm that ends the sweep of the task. Every write grows the item's version, so that a worker's put
// over an older copy fails and reads it again.
import type { FileMarks } from '../../../domain/deadlines.ts';
import type { DueEntry, SweepClaim, SweepRef, SweptFile, SweptTask, TaskSweepsPort } from '../../../domain/sweeps.ts';
import { refusedByDynamo } from '../table/limits.ts';
import type { Capacity } from '../../../domain/task-store.ts';
import { filesWithAttempts } from '../table/file-attempts.ts';
import { headerParts } from '../table/items.ts';
import { toItem, type Item, type Key, type TableClient } from '../table/table-client.ts';
import { Keys } from '../table/table.ts';
import { moveSweepPosition, putBucketEntries, readBucketEntries, readSweepPosition } from './time-buckets.ts';
import { TIME_ATTRS, failedFilesQuery, timeOf, toMinutes } from './time-items.ts';
import { READABLE } from '../table/readable.ts';

const A = TIME_ATTRS;

/** The store's handle of a swept file: its item's key. */
interface SweptItem {
  key: Key;
}

const headerKeyOf = (t: SweepRef): Key => ({ pk: Keys.taskPk(t.id), sk: Keys.headerSk(t.appKey) });

/** A header as a sweep reads it. */
function sweptTask(ref: SweepRef, header: Item): SweptTask {
  const parts = headerParts(header);
  return {
    ref,
    parts,
    time: timeOf(header),
    version: header.ver as number,
    lease: (header[TIME_ATTRS.lease] as number | undefined) ?? null,
    changeKey: String(header.seq ?? header[TIME_ATTRS.changedAt]),
  };
}

export class TaskSweeps implements TaskSweepsPort {
  readonly table: TableClient;

  constructor(table: TableClient) {
    this.table = table;
  }

  position(cap: Capacity): Promise<number | null> {
    return readSweepPosition(this.table, 'DUE', cap);
  }

  dueEntries(from: number, to: number, cap: Capacity): AsyncIterable<DueEntry> {
    return readBucketEntries(this.table, 'DUE', from, to, cap);
  }

  async movePosition(through: number, cap: Capacity): Promise<void> {
    await moveSweepPosition(this.table, 'DUE', through, cap);
  }

  refuses(err: unknown): boolean {
    return refusedByDynamo(err);
  }

  /** The task's header, strongly consistent (null: none). */
  header(t: SweepRef, cap: Capacity): Promise<Item | null> {
    return this.table.get(headerKeyOf(t), cap);
  }

  /** The task as its header says it, strongly consistent (null: none). */
  async read(t: SweepRef, cap: Capacity): Promise<SweptTask | null> {
    const header = await this.header(t, cap);
    return header ? sweptTask(t, header) : null;
  }

  /**
   * The task's files whose winning upload failed: one Query of its files (the failed ones filtered), their
   * attempts counted as a file event shows them. Exported for the read side too (a task's purge countdown).
   */
  async failedFiles(t: SweepRef, cap: Capacity): Promise<SweptFile[]> {
    const items: Item[] = [];
    for await (const item of this.table.queryAll(failedFilesQuery(t.appKey, t.id, { consistent: true }), cap))
      items.push(item);
    const records = await filesWithAttempts(this.table, t.appKey, t.id, items, cap);
    return records.map((record, i) => ({
      record,
      marks: { warnedAt: record.warnedAt ?? null, lostAt: record.lostAt ?? null },
      item: { key: { pk: items[i]!.pk, sk: items[i]!.sk } } satisfies SweptItem,
    }));
  }

  /**
   * The sweep's claim on the task: its transitions (`st` with `sf`, `sa`) and its lease (`sl` = `lease`), on condition
   * that the header is the version read and no other sweep holds a live lease. Returns the header as written
   * (null: the condition failed).
   */
  async claim(
    task: SweptTask,
    set: SweepClaim,
    { until: lease, now }: { until: number; now: number },
    cap: Capacity,
  ): Promise<SweptTask | null> {
    const version = task.version;
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
      headerKeyOf(task.ref),
      {
        update: `SET ${sets.join(', ')}`,
        condition: `ver = :v AND (attribute_not_exists(${A.lease}) OR ${A.lease} < :now OR ${A.lease} = :sl)`,
        values: toItem(values),
      },
      cap,
    );
    return res.ok ? sweptTask(task.ref, res.item) : null;
  }

  /** Marks a file warned (`pw`) and/or lost (`lo`), on condition that its winning upload is still the one read. */
  async markFile(f: SweptFile, marks: Partial<FileMarks>, cap: Capacity): Promise<boolean> {
    const { key } = f.item as SweptItem;
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
      key,
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
   * False when it changed meanwhile: the caller reads it again.
   */
  async rearm(task: SweptTask, arm: { next: number | null; lost: number }, cap: Capacity): Promise<boolean> {
    const { ref: t, version } = task;
    const { next, lost } = arm;
    const armed = task.time.armed;
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
    return res.ok;
  }
}
