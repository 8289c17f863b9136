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
 * The items a delivery left behind, from which the worker derives task events (lib/domain/task-events.ts).
 * A "before" is null when the item did not exist, or when this delivery cannot know it: an earlier
 * delivery of the same callback wrote the item already (a crash in between), or this one is a duplicate.
 */
export interface StoredWrite {
  /** The task after the write. */
  task: TaskSummary;
  /** The task's status before the write. */
  statusBefore: TaskStatus | null;
  /** The file the callback names, before and after the write; null when it names none. */
  file: { before: FileRecord | null; after: FileRecord } | null;
}

export type ApplyResult =
  | {
      outcome: 'applied';
      transition: FileTransition | null;
      status: TaskStatus;
      stored: StoredWrite;
      capacity: Capacity;
    }
  /** `stored`: the items as found (the callback's effects included), or null when not read. */
  | { outcome: 'duplicate'; stored: StoredWrite | null; capacity: Capacity }
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
  /** Epoch ms, inclusive, on the task's first callback time. */
  since?: number;
  until?: number;
  limit?: number;
}

export interface TaskStore {
  /** Applies one callback exactly once, whatever was applied before and in whatever order. */
  applyCallback(input: DeliveredCallback): Promise<ApplyResult>;
  /** Keeps a callback aside, never applied to a task. */
  quarantine(entry: QuarantineEntry): Promise<Capacity>;
  getTask(id: string): Promise<Task | null>;
  listEvents(id: string): Promise<StoredEvent[]>;
  listTasks(query: TaskQuery): AsyncIterable<TaskSummary>;
  listQuarantine(opts?: { sinceDays?: number; limit?: number }): AsyncIterable<QuarantineEntry>;
}
