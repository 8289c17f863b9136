// The store the worker and the CLI talk to. The domain says what a store must do; lib/aws/ holds the
// DynamoDB adapter behind it.
import type { ArchivedTask } from './archived-callbacks.ts';
import type { Callback } from './callback.ts';
import type { WriteCharge } from './task-counts.ts';
import type { FileRecord, FileTransition, Task, TaskStatus } from './task.ts';
import type { TaskParts } from './task-parts.ts';
import type { TaskSummary } from './task-summary.ts';
import type { HeldSignature, Sender } from '../signature/held.ts';
import type { LedgerVerdict, SignatureMode, SignatureVerdict } from '../signature/verdicts.ts';
import type { Service } from '../platform/services.ts';

/** A parsed callback with what the receiver knows about its delivery. */
export interface DeliveredCallback {
  callback: Callback;
  /** The body exactly as received. */
  raw: string;
  receivedAt: number;
  verdict: LedgerVerdict;
  mode: SignatureMode;
  requestId: string | null;
  messageId: string;
  /** The request's replay key (a hash of nonce, timestamp and signature), when it carried all three. */
  replayKey: string | null;
  /** The ingest stored its delivery with its replay claim (lib/domain/replay-claim.ts): not written again. */
  deliveryStored?: boolean;
  /** The signature values of a callback whose signature did not verify (kept if it is quarantined). */
  heldSignature?: HeldSignature | null;
  /** Who sent the request (kept if it is quarantined). */
  sender?: Sender | null;
  /**
   * Set when the callback is taken out of the quarantine (`callbacks quarantine apply`): it is recorded on
   * the ledger entry, and the store never quarantines such a callback a second time (its entry exists).
   */
  recovered?: Recovery | null;
  /** The SQS sequence number of its message (fixed-width, lib/domain/task-counts.ts); absent without one. */
  sequence?: string | null;
  /** The last sequence number its task's header had absorbed as its batch began (with `sequence` only). */
  absorbed?: string | null;
  /** Its message was received before (an earlier delivery may have written part of it, uncounted). */
  redelivered?: boolean;
  /**
   * Another record of its batch writes the same file next, one writer per task (sequence numbers): its
   * file put may be held for that write to carry (one write for both), or for `writeHeld`.
   */
  hold?: boolean;
}

/** How a callback came out of the quarantine. */
export interface Recovery {
  /** Why it had been quarantined, and the verdict it had then. */
  reason: QuarantineReason;
  verdict: SignatureVerdict;
  /** Epoch ms of the recovery. */
  at: number;
}

/**
 * Thrown by a store for a callback it can never hold (the database refuses the item, or the item cannot be
 * built): retrying cannot help, so the worker keeps the callback aside instead.
 */
export class UnstorableCallbackError extends Error {
  override name = 'UnstorableCallbackError';
}

export interface Capacity {
  /** Read and write capacity units consumed, as DynamoDB reported them. */
  read: number;
  write: number;
}

/**
 * What a delivery of a callback left in the store, from which the worker derives task events
 * (lib/domain/task-events.ts). A "before" is null when the item did not exist, or when this delivery
 * cannot know it (a duplicate; an earlier delivery of the same callback that wrote the item, then crashed).
 */
export interface StoredWrite {
  /** The task after the write. */
  task: TaskSummary;
  /** The task's status before the write; null when not known (the store does not read it). */
  statusBefore: TaskStatus | null;
  /** The file the callback names, before and after the write; null when it names none. */
  file: { before: FileRecord | null; after: FileRecord } | null;
  /** The task's parts as read after the write: the events' times are read off them. */
  parts: TaskParts;
}

/**
 * What the store knows right after applying (or finding) a callback, and a way to read the task. A task's
 * status and counts (and a file's attempts) are added up from all of its items, so they are read only when
 * asked: `readTask()` reads the whole task, strongly consistent, and gives what the events of this write
 * need (its status before the write as the write's own change implies: null for a duplicate, or when the
 * write created the task).
 */
export interface WriteOutcome {
  /** The file the callback names, before and after the write, its attempts not yet counted; null when none. */
  file: StoredWrite['file'];
  /** What the write leaves its task's header to count (lib/domain/task-counts.ts). */
  charge: WriteCharge;
  /** The file as the write left or found it, its attempts counted; null when the callback names none. */
  fileAfter(capacity?: Capacity): Promise<FileRecord | null>;
  /** The read units it takes are added to `capacity` when one is given; null when there is no task. */
  readTask(capacity?: Capacity): Promise<StoredWrite | null>;
  /**
   * `readTask` in two steps, so that one read serves several writes to the same task: the task's parts read
   * strongly consistent (null when there is no task), then what this write left, from parts read after it.
   */
  readParts(capacity?: Capacity): Promise<TaskParts | null>;
  storedWith(parts: TaskParts | null): StoredWrite | null;
}

export type ApplyResult =
  | {
      outcome: 'applied';
      /** The state of the callback's file before and after it (null for a callback that names no file). */
      transition: FileTransition | null;
      write: WriteOutcome;
      capacity: Capacity;
    }
  /** `write`: the items as found (the callback's effects included), or null when they were not read. */
  | { outcome: 'duplicate'; write: WriteOutcome | null; capacity: Capacity }
  | { outcome: 'quarantined'; reason: QuarantineReason; detail: string; capacity: Capacity };

/** Why a callback was kept aside rather than applied. */
export const QUARANTINE_REASONS = [
  /** A body that is not a callback of its service, or that DynamoDB could never store. */
  'invalid_callback',
  // Signature verdicts other than valid (mode report): invalid, missing, stale, unknown_app_key, unverified.
  'invalid_signature',
  'missing_signature',
  'stale_timestamp',
  'unknown_app_key',
  'unverified',
  /** A nonce, timestamp and signature seen before with another body. */
  'replayed_signature',
  /** The task id belongs to a task of the other service. */
  'service_mismatch',
  /** The task id belongs to a task of another appKey. */
  'app_key_mismatch',
] as const;
export type QuarantineReason = (typeof QUARANTINE_REASONS)[number];

export interface QuarantineEntry {
  reason: QuarantineReason;
  detail: string;
  service: Service;
  raw: string;
  receivedAt: number;
  verdict: SignatureVerdict;
  requestId: string | null;
  messageId: string;
  appKey: string | null;
  /** The task the body names, whenever it names one (even when the body fails the full parse). */
  taskId: string | null;
  /** The signature mode the ingest ran in (absent on entries written before it was recorded). */
  mode?: SignatureMode;
  /** What checking the signature again needs, when the verdict was not `valid`; never a secret. */
  signature?: HeldSignature | null;
  /**
   * The request's source IP and user agent as API Gateway saw them; null when not known (entries written
   * before they were recorded read as null).
   */
  sourceIp?: string | null;
  userAgent?: string | null;
  /** Set once `callbacks quarantine apply` has applied the callback (or found it already applied). */
  applied?: QuarantineApplied | null;
}

export interface QuarantineApplied {
  at: number;
  outcome: 'applied' | 'duplicate';
  verdict: LedgerVerdict;
}

/** Filters of the quarantine listing; entries come newest first unless `oldestFirst`. */
export interface QuarantineQuery {
  /** Epoch ms, inclusive, on the receive time (default: 7 days back, or `sinceDays`). */
  since?: number;
  until?: number;
  sinceDays?: number;
  reason?: string;
  taskId?: string;
  appKey?: string;
  /** At most this many entries: the newest, or with `oldestFirst` the oldest. */
  limit?: number;
  /** Oldest first (by receive time), as `callbacks quarantine apply` takes them. */
  oldestFirst?: boolean;
}

export interface StoredEvent {
  key: string;
  type: number;
  timestamp: number;
  receivedAt: number;
  verdict: LedgerVerdict;
  requestId: string | null;
  raw: string;
  /** Epoch seconds after which DynamoDB's TTL may delete the raw callback. */
  expiresAt: number | null;
  /** The file the callback names, if any. */
  fileName?: string | null;
  /** Set when the callback was applied out of the quarantine. */
  recovered?: Recovery | null;
}

export interface TaskQuery {
  roomId?: string;
  sessionId?: string;
  appKey?: string;
  status?: TaskStatus;
  service?: Service;
  /** The task's userId (tasks of mixed recordings have none). */
  userId?: string;
  /** Epoch ms, inclusive, on the task's sort time (its start callback's, else its earliest callback's). */
  since?: number;
  until?: number;
  limit?: number;
  /** Only tasks with lost files (docs/contract.md §4, facts of time). */
  lost?: boolean;
  /** Only stalled tasks. */
  stalled?: boolean;
  /** Only tasks with a failed file, not lost yet, that the platform deletes within this many ms of now. */
  purgeWithinMs?: number;
  /** Epoch ms, inclusive: only tasks whose latest callback (`updatedAt`) is this late or later. */
  updatedSince?: number;
  /** Epoch ms, inclusive: only tasks that ended (`endedAt`) this late or later. */
  endedSince?: number;
}

/** Which task: its id, and its appKey where the id alone may name tasks of several appKeys. */
export interface TaskRef {
  id: string;
  /** Only the task of this appKey; without it, the one task the id names. */
  appKey?: string;
}

/** One page of a listing. */
export interface PageRequest {
  /** At most this many items. */
  limit: number;
  /** The `next` of the previous page; absent for the first page. */
  cursor?: string;
  /**
   * The page ends once its items' JSON reaches this many bytes, even short of `limit` (it always holds at
   * least one item): a page of large items stays within a response size limit.
   */
  maxBytes?: number;
}

export interface Page<T> {
  items: T[];
  /**
   * Opaque: where the next page starts, or null after the last one. A page may be short, even empty,
   * while this is set.
   */
  next: string | null;
}

/** One page of a task's stored callbacks, and the task as the archive files them (./archived-callbacks.ts). */
export interface EventsPage extends Page<StoredEvent> {
  task: ArchivedTask;
}

/** A task with one page of its files, in file-name order. */
export interface TaskPage {
  task: Task;
  nextFilesCursor: string | null;
}

/** A cursor that was not made by this store for this listing: the caller's input is wrong. */
export class InvalidCursorError extends Error {
  override name = 'InvalidCursorError';
}

/** The id names tasks of several appKeys and the request did not say which one. */
export class AmbiguousTaskError extends Error {
  override name = 'AmbiguousTaskError';
  readonly id: string;
  readonly appKeys: readonly string[];
  constructor(id: string, appKeys: readonly string[]) {
    super(`task id ${id} is used by several appKeys (${appKeys.join(', ')})`);
    this.id = id;
    this.appKeys = appKeys;
  }
}

/** What the read API needs of a store: pages, never whole listings. */
export interface TaskReader {
  /**
   * The task with one page of its files, or null when there is no such task. Throws AmbiguousTaskError
   * when the id names tasks of several appKeys and `ref.appKey` is absent, InvalidCursorError on a bad cursor.
   */
  getTaskPage(ref: TaskRef, page: PageRequest): Promise<TaskPage | null>;
  /**
   * One page of the tasks matching the query, newest first (by sort time). With a cursor, each filter
   * given must equal the one the cursor was made for (absent ones are taken from it), and the time window
   * is the one fixed by the first page.
   */
  listTasksPage(query: TaskQuery, page: PageRequest): Promise<Page<TaskSummary>>;
  /** One page of a task's stored callbacks in timestamp order, or null when there is no such task. */
  listEventsPage(ref: TaskRef, page: PageRequest): Promise<EventsPage | null>;
}

export interface TaskStore extends TaskReader {
  /** Applies one callback exactly once, whatever was applied before and in whatever order. */
  applyCallback(input: DeliveredCallback): Promise<ApplyResult>;
  /** Keeps a callback aside, never applied to a task. */
  quarantine(entry: QuarantineEntry): Promise<Capacity>;
  /**
   * Counts a task again from its items into its header (`callbacks recount`: repair); `through`, a sequence number
   * to count as absorbed. False when there is no such task.
   */
  recountTask(appKey: string, id: string, through: string | null): Promise<boolean>;
  /**
   * The task with this id, of the given appKey; without one, of the only appKey that has such a task
   * (AmbiguousTaskError when several have).
   */
  getTask(id: string, appKey?: string): Promise<Task | null>;
  /** The raw callbacks of a task (found as by getTask), one per distinct callback, in timestamp order. */
  listEvents(id: string, appKey?: string): Promise<StoredEvent[]>;
  listTasks(query: TaskQuery): AsyncIterable<TaskSummary>;
  listQuarantine(query?: QuarantineQuery): AsyncIterable<QuarantineEntry>;
  /** How many quarantined callbacks name this task (any age the table still holds). */
  countQuarantined(taskId: string): Promise<number>;
  /** Marks an entry as applied; false when it already was (the first mark is kept). */
  markQuarantineApplied(
    entry: Pick<QuarantineEntry, 'receivedAt' | 'messageId'>,
    applied: QuarantineApplied,
  ): Promise<boolean>;
}
