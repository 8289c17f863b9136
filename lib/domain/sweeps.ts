// What the sweeper reads and writes of a task, as a port (docs/task-store.md, Deadlines; the DynamoDB one is
// lib/aws/dynamo/time/task-sweeps.ts): a task as its header says it, its failed files, and the conditional writes of a
// sweep. The claim takes what is due of the task itself and the sweep's lease, on condition of the version read and
// of no other live lease; a file's mark, on condition that its winning upload is the one read; the re-arm ends the
// sweep of the task. Each write answers whether it held: a callback in between makes the sweep read again.
import type { FileMarks, TaskTime } from './deadlines.ts';
import type { TaskParts } from './task-parts.ts';
import type { Capacity } from './task-store.ts';
import type { FileRecord } from './task.ts';

/** A task a deadline entry names. */
export interface SweepRef {
  appKey: string;
  id: string;
}

/** A task as a sweep reads it: its header's parts and time, its version and the lease a sweep holds on it. */
export interface SweptTask {
  ref: SweepRef;
  parts: TaskParts;
  time: TaskTime;
  version: number;
  /** Until when a sweep holds the task (null: none). */
  lease: number | null;
  /** What the task's change is known by, for a settle's event id: its last sequence number, else its time of change. */
  changeKey: string;
}

/** A failed file as a sweep reads it: its record (attempts counted) and marks; `item`, the store's own handle. */
export interface SweptFile {
  record: FileRecord;
  marks: FileMarks;
  readonly item: unknown;
}

/** What a sweep claims of the task itself (null: nothing of that kind). */
export interface SweepClaim {
  stalledSince: number | null;
  stalledFrom: number | null;
  settledAt: number | null;
}

/** A task a `DUE` entry names, with the entry's bucket. */
export interface DueEntry extends SweepRef {
  bucket: number;
}

export interface TaskSweepsPort {
  /** The last bucket the sweeps have gone through (null: never swept). */
  position(cap: Capacity): Promise<number | null>;
  /** The tasks the `DUE` entries of the buckets from `from` through `to` name, in bucket order. */
  dueEntries(from: number, to: number, cap: Capacity): AsyncIterable<DueEntry>;
  /** Moves the position on to `through`, on condition that it only grows. */
  movePosition(through: number, cap: Capacity): Promise<void>;
  /** Whether an error is the store refusing a write it can never take (a retry would fail the same way). */
  refuses(err: unknown): boolean;
  read(t: SweepRef, cap: Capacity): Promise<SweptTask | null>;
  failedFiles(t: SweepRef, cap: Capacity): Promise<SweptFile[]>;
  /** The claim, with the sweep's lease (`until`); the task as written, or null when the condition failed. */
  claim(
    task: SweptTask,
    set: SweepClaim,
    lease: { until: number; now: number },
    cap: Capacity,
  ): Promise<SweptTask | null>;
  markFile(f: SweptFile, marks: Partial<FileMarks>, cap: Capacity): Promise<boolean>;
  /** The task re-armed at `next` (null: disarmed), its lost files counted, its lease released; false on a conflict. */
  rearm(task: SweptTask, arm: { next: number | null; lost: number }, cap: Capacity): Promise<boolean>;
}
