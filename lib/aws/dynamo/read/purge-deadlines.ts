// When the platform deletes the first of a task's failed files that is not lost yet: its first failed upload +
// 24 h (docs/contract.md §4). One Query of the task's failed files, only their first failure read, as a listing's
// purge window reads them (./listing-filters.ts): `tasks list --purge-before` sorts by it, `status` names the next.
import type { Capacity } from '../../../domain/task-store.ts';
import { FILE_HOLD_MS } from '../../../platform/delivery.ts';
import { fileFromItem } from '../table/items.ts';
import { noCapacity, type TableReader } from '../table/table-client.ts';
import { failedFilesQuery } from '../time/time-items.ts';

export interface PurgeDeadline {
  /** Epoch ms. */
  purgeAt: number;
  fileName: string;
}

/** The task's earliest purge deadline among its failed files not lost yet; null when it has none. */
export async function earliestPurge(
  table: TableReader,
  appKey: string,
  id: string,
  cap: Capacity = noCapacity(),
): Promise<PurgeDeadline | null> {
  let earliest: PurgeDeadline | null = null;
  const query = failedFilesQuery(appKey, id, { notLost: true, projection: 'sk, firstFailureAt' });
  for await (const item of table.queryAll(query, cap)) {
    const file = fileFromItem(item);
    if (file.firstFailureAt === null) continue;
    const purgeAt = file.firstFailureAt + FILE_HOLD_MS;
    if (earliest === null || purgeAt < earliest.purgeAt) earliest = { purgeAt, fileName: file.fileName };
  }
  return earliest;
}
