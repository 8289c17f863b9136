// A task as a list shows it: its identity, status, times and counts, without its files. Made from the task's
// parts (task-parts.ts toSummary), listed by the store (task-store.ts), carried by every task event.
import type { Service } from '../platform/services.ts';
import type { TaskStatus } from './task.ts';

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
  /** The failed files that are lost (docs/contract.md §4, facts of time). */
  lostFiles: number;
  stalledSince: number | null;
  settledAt: number | null;
  /** endedAt − startedAt (platform time), when the task has both. */
  durationMs: number | null;
}
