// The steps of the batch protocol (./apply-batch.ts) as the DynamoDB task writer takes them: each callback applied
// uncounted, the file puts held for a later write of the same file, one count of each task's header, a recount
// of what no batch charges, the deadline entries of the tasks a batch created. Only ./apply-batch.ts calls them.
import type { Callback } from '../../../domain/callback.ts';
import type { TaskParts } from '../../../domain/task-parts.ts';
import type {
  ApplyResult,
  Capacity,
  DeliveredCallback,
  QuarantineEntry,
  WriteOutcome,
} from '../../../domain/task-store.ts';

/** A task whose deadline entries could not be written (BatchSteps.flushArms). */
export interface UnarmedTask {
  appKey: string;
  id: string;
  error: unknown;
}

/** The writes of one task in one batch, for its header to count at once. */
export interface TaskBatch {
  appKey: string;
  id: string;
  writes: readonly { callback: Callback; write: WriteOutcome }[];
  /** The last sequence number the header had absorbed as the batch began; null without sequence numbers. */
  absorbed: string | null;
  /** A write applied a callback (not only duplicates): the task changed (its deadlines, docs/task-store.md). */
  changed?: boolean;
  /** A record of the batch was received before: an arm its header holds may have no entry yet. */
  redelivered?: boolean;
  /**
   * After the count, the task is recounted from its items through this sequence number (null: without one), and
   * the task is read off the recounted header: a record of the batch may have written what no batch will charge
   * (one given up at its last receive, one kept aside after a write, a copy sent again with a new sequence number).
   */
  recountThrough?: string | null;
}

/** The writes of a batch: applied one by one, then counted into each task's header at once. */
export interface BatchSteps {
  /** Keeps a callback aside, never applied to a task. */
  quarantine(entry: QuarantineEntry): Promise<Capacity>;
  /** Applies a callback as applyCallback does, leaving its header's counts to countTask. */
  applyUncounted(input: DeliveredCallback): Promise<ApplyResult>;
  /**
   * Writes the file put a callback left held (`DeliveredCallback.hold`), if any is left: the next write of
   * the file writes it otherwise. Throws when the file was written by another meanwhile: the held callbacks
   * are then not stored, and their records fail.
   */
  writeHeld?(appKey: string, id: string, fileName: string, capacity?: Capacity): Promise<void>;
  /** Drops the header put a task's starts or ends held for its batch's count, when the count did not write it. */
  dropHeld?(appKey: string, id: string): void;
  /**
   * Forgets all this writer remembers of a task whose records failed (held puts, copies of its items): a failed
   * write may have been refused or lost, and a copy of it would answer the next delivery from a state never stored.
   */
  forgetTask?(appKey: string, id: string): void;
  /** Whether this writer knows the task's header (wrote or read it): its callbacks need not read it. */
  knowsHeader?(appKey: string, id: string): boolean;
  /** The last sequence number the task's header absorbed (a batch that comes again reads it first). */
  absorbedSequence(appKey: string, id: string, capacity?: Capacity): Promise<string>;
  /**
   * Adds a batch's writes to their task's header (recounting the task when a write without sequence number
   * cannot tell what an earlier delivery left): the task as its header then says, with the files the
   * writes left; null when there is no task.
   */
  countTask(batch: TaskBatch, capacity?: Capacity): Promise<TaskParts | null>;
  /**
   * Counts a task again from its items into its header; `through`, a sequence number to count as absorbed
   * (a message given up after a partial write). False when there is no such task.
   */
  recountTask(appKey: string, id: string, through: string | null): Promise<boolean>;
  /**
   * Writes the deadline entries of the tasks created since the last call (once a batch's writes are done); the
   * tasks whose entries could not be written, each with its error (their records fail, and come again).
   */
  flushArms?(): Promise<UnarmedTask[]>;
  /** Removes a task's stall once its resume is published, on condition that it is that stall. */
  clearStall?(appKey: string, id: string, stalledSince: number): Promise<void>;
}
