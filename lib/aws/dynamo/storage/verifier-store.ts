// What the verifier reads of a task and writes (docs/verification.md): a file as it stands (its winning upload,
// the size its slice or end reported, its attempts), the task's header for the events it publishes, and its
// checks (./verifications.ts). It writes nothing the worker writes.
import type { Capacity } from '../../../domain/task-store.ts';
import type { TaskSummary } from '../../../domain/task-summary.ts';
import { toSummary } from '../../../domain/task-parts.ts';
import type { FileRecord } from '../../../domain/task.ts';
import { filesWithAttempts } from '../table/file-attempts.ts';
import { headerParts } from '../table/items.ts';
import { noCapacity, type TableReader } from '../table/table-client.ts';
import { Keys } from '../table/table.ts';
import { VerificationWrites } from './verifications.ts';

export class VerifierStore {
  readonly table: TableReader;
  readonly checks: VerificationWrites;

  constructor(table: TableReader) {
    this.table = table;
    this.checks = new VerificationWrites(table);
  }

  /** A task's file as it stands, read strongly consistent, its attempts counted; null when there is none. */
  async file(appKey: string, id: string, fileName: string, cap: Capacity = noCapacity()): Promise<FileRecord | null> {
    const item = await this.table.get({ pk: Keys.taskPk(id), sk: Keys.fileSk(appKey, fileName) }, cap);
    if (!item) return null;
    const [file] = await filesWithAttempts(this.table, appKey, id, [item], cap);
    return file ?? null;
  }

  /** The task as its header says it (its status and counts) and the header's version; null without counts. */
  async summary(
    appKey: string,
    id: string,
    cap: Capacity = noCapacity(),
  ): Promise<{ summary: TaskSummary; version: number } | null> {
    const header = await this.table.get({ pk: Keys.taskPk(id), sk: Keys.headerSk(appKey) }, cap, false);
    const parts = header ? headerParts(header) : null;
    return parts ? { summary: toSummary(parts), version: parts.version ?? 0 } : null;
  }
}
