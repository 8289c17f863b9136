// The store the worker and the CLI talk to. The domain says what a store must do; lib/aws/ holds the
// DynamoDB adapter behind it.
import type { Callback } from './callback.ts';
import type { FileRecord, FileTransition, Task, TaskStatus } from './task.ts';
import type { Service, SignatureMode, SignatureVerdict } from '../queue-message.ts';

/** A parsed callback with what the receiver knows about its delivery. */
export interface DeliveredCallback {
  callback: Callback;
  /** The body exactly as received. */
  raw: string;
  receivedAt: number;
  verdict: SignatureVerdict;
  mode: SignatureMode;
  requestId: string | null;
  messageId: string;
  signatureKey: string | null;
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
  /** The read units it takes are added to `capacity` when one is given; null when there is no task. */
  readTask(capacity?: Capacity): Promise<StoredWrite | null>;
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

export type QuarantineReason = 'invalid_callback' | 'invalid_signature' | 'replayed_signature' | 'service_mismatch';

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
  taskId: string | null;
}

export interface StoredEvent {
  key: string;
  type: number;
  timestamp: number;
  receivedAt: number;
  verdict: SignatureVerdict;
  requestId: string | null;
  raw: string;
  /** Epoch seconds after which DynamoDB's TTL may delete the raw callback. */
  expiresAt: number | null;
}

export interface TaskSummary {
  service: Service;
  id: string;
  appKey: string;
  roomId: string | null;
  sessionId: string | null;
  userId: string | null;
  status: TaskStatus;
  startedAt: number | null;
  endedAt: number | null;
  updatedAt: number;
  sortAt: number;
  eventCount: number;
  fileCount: number;
  pendingFiles: number;
  failedFiles: number;
}

export interface TaskQuery {
  roomId?: string;
  sessionId?: string;
  appKey?: string;
  status?: TaskStatus;
  /** Epoch ms, inclusive, on the task's sort time (its start callback's, else its earliest callback's). */
  since?: number;
  until?: number;
  limit?: number;
}

/** Two appKeys have a task with this id: which one is meant must be said. */
export class AmbiguousTaskError extends Error {
  override name = 'AmbiguousTaskError';
  readonly id: string;
  readonly appKeys: string[];

  constructor(id: string, appKeys: string[]) {
    super(`${appKeys.length} appKeys have a task ${id} (${appKeys.join(', ')}): say which one is meant`);
    this.id = id;
    this.appKeys = appKeys;
  }
}

export interface TaskStore {
  /** Applies one callback exactly once, whatever was applied before and in whatever order. */
  applyCallback(input: DeliveredCallback): Promise<ApplyResult>;
  /** Keeps a callback aside, never applied to a task. */
  quarantine(entry: QuarantineEntry): Promise<Capacity>;
  /**
   * The task with this id, of the given appKey; without one, of the only appKey that has such a task
   * (AmbiguousTaskError when several have).
   */
  getTask(id: string, appKey?: string): Promise<Task | null>;
  /** The raw callbacks of a task (found as by getTask), one per distinct callback, in timestamp order. */
  listEvents(id: string, appKey?: string): Promise<StoredEvent[]>;
  listTasks(query: TaskQuery): AsyncIterable<TaskSummary>;
  listQuarantine(opts?: { sinceDays?: number; limit?: number }): AsyncIterable<QuarantineEntry>;
}
