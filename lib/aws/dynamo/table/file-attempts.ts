// A file's attempts (its distinct upload callbacks) from its item: the upload keys it holds inline, and those
// recorded on items of their own once it spilled (one Query of them). Bounded by the file's own callbacks, never by
// its task's.
import type { Capacity } from '../../../domain/task-store.ts';
import type { FileRecord } from '../../../domain/task.ts';
import { fileFromItem, inlineAttempts, isUploadRecord, keysOf } from './items.ts';
import type { Item, TableReader } from './table-client.ts';
import { Keys } from './table.ts';

/** Keys a file item holds inline by default: one holding as many may have spilled before it was marked. */
const DEFAULT_INLINE_KEYS = 4;

/** Whether a file's keys may go on beyond its item (marked `sp` when it spilled). */
const mayHaveSpilled = (file: Item): boolean =>
  file.sp === true || Object.keys(keysOf(file)).length >= DEFAULT_INLINE_KEYS;

/** The files of items of one task, their attempts counted. */
export async function filesWithAttempts(
  table: TableReader,
  appKey: string,
  id: string,
  items: readonly Item[],
  cap: Capacity,
): Promise<FileRecord[]> {
  const files = items.map((item) => ({ ...fileFromItem(item), attempts: inlineAttempts(item) }));
  await Promise.all(
    items.map(async (item, i) => {
      if (!mayHaveSpilled(item)) return;
      const file = files[i]!;
      for await (const spilled of table.queryAll(
        {
          KeyConditionExpression: 'pk = :pk AND begins_with(sk, :p)',
          ExpressionAttributeValues: {
            ':pk': { S: Keys.taskPk(id) },
            ':p': { S: Keys.recordedPrefix(appKey, file.fileName) },
          },
          ConsistentRead: true,
        },
        cap,
      ))
        if (isUploadRecord(spilled)) file.attempts += 1;
    }),
  );
  return files;
}
