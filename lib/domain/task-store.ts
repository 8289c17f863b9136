// The store the worker and the CLI talk to. The domain says what a store must do; lib/aws/ holds the
// DynamoDB adapter behind it.
import type { Callback } from './callback.ts';
import type { FileTransition, Task, TaskStatus } from './task.ts';
import type { SignatureMode, SignatureVerdict } from '../queue-message.ts';
import type { Service } from './services.ts';

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
  /** The request's replay key (a hash of nonce, timestamp and signature), when it carried all three. */
  replayKey: string | null;
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

export type ApplyResult =
  | { outcome: 'applied'; transition: FileTransition | null; status: TaskStatus; capacity: Capacity }
  | { outcome: 'duplicate'; capacity: Capacity }
  | { outcome: 'quarantined'; reason: QuarantineReason; detail: string; capacity: Capacity };

/** Why a callback was kept aside rather than applied. */
export const quarantineReasons = [
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
export type QuarantineReason = (typeof quarantineReasons)[number];

export function isQuarantineReason(value: unknown): value is QuarantineReason {
  return quarantineReasons.includes(value as QuarantineReason);
}

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
