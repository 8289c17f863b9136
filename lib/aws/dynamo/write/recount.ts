// `callbacks recount`: a task's counts computed again from its items and written into its header (the
// worker recounts a task itself when a message is given up after a partial write; an operator recounts
// after restoring items, or to check). One task by id, or every task header of the table found by one Scan.
import { ScanCommand, type ScanCommandOutput, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { TaskCounts } from '../../../domain/task-counts.ts';
import { HeaderCounts } from './header-counts.ts';
import { appKeyOf, countsOf } from '../table/items.ts';
import { KnownItems } from './known-items.ts';
import { TaskQueries } from '../read/queries.ts';
import { TableClient, fromItem, noCapacity, type Item, type Key } from '../table/table-client.ts';
import { Keys } from '../table/table.ts';
import { TIME_ATTRS } from '../time/time-items.ts';
import { errorSentence } from '../../../text.ts';
import { inParallel } from '../../../in-parallel.ts';

export interface RecountResult {
  /** Task headers recounted. */
  recounted: number;
  failed: { taskId: string; appKey: string; error: string }[];
  /** The tasks whose counts the recount changed, with their counts before and after it; the others were right. */
  corrected: Correction[];
  /** For one task asked by id and counted right: its counts. */
  right?: { taskId: string; appKey: string; counts: HeaderCountsSeen };
}

/** What a header counts: its files by upload state (lost ones a part of the failed), and its distinct callbacks. */
export type HeaderCountsSeen = TaskCounts & { lost: number };

export interface Correction {
  taskId: string;
  appKey: string;
  /** As the header said just before the recount; null for a task whose header was not found. */
  before: HeaderCountsSeen | null;
  after: HeaderCountsSeen;
}

function countsSeen(header: Item | null): HeaderCountsSeen | null {
  return header ? { ...countsOf(header), lost: Number(header[TIME_ATTRS.lost] ?? 0) } : null;
}

const sameCounts = (a: HeaderCountsSeen | null, b: HeaderCountsSeen): boolean =>
  a !== null && (Object.keys(b) as (keyof HeaderCountsSeen)[]).every((k) => a[k] === b[k]);

export interface RecountOptions {
  client: DynamoDBClient;
  tableName: string;
  /** One task (its appKey when several have the id); absent, every task of the table. */
  task?: { id: string; appKey?: string | undefined };
  /** After each task. */
  onTask?: (done: number, total: number) => void;
  /** Tasks recounted at the same time (default 4). */
  concurrency?: number;
}

/** Recounts one task or all; a task id that names no task recounts nothing (`recounted` 0). */
export async function recountTasks(opts: RecountOptions): Promise<RecountResult> {
  const table = new TableClient(opts.client, opts.tableName);
  const counts = new HeaderCounts(table, new KnownItems(0));
  let headers: Key[];
  if (opts.task) {
    const found = await new TaskQueries(table, Date.now).findHeader(opts.task.id, opts.task.appKey);
    headers = found ? [{ pk: found.pk, sk: found.sk }] : [];
  } else headers = await allHeaders(opts.client, opts.tableName);
  const result: RecountResult = { recounted: 0, failed: [], corrected: [] };
  let done = 0;
  await inParallel(headers, opts.concurrency ?? 4, async (key) => {
    const appKey = appKeyOf(key as Item);
    const id = key.pk.slice(Keys.taskPk('').length);
    try {
      // The header as it stands just before (one read), to say what the recount changed.
      const before = countsSeen(await table.get(key, noCapacity()));
      const after = countsSeen(await counts.recount(appKey, id, null, noCapacity()));
      if (after) {
        result.recounted += 1;
        if (!sameCounts(before, after)) result.corrected.push({ taskId: id, appKey, before, after });
        else if (opts.task) result.right = { taskId: id, appKey, counts: after };
      }
    } catch (err) {
      result.failed.push({
        taskId: id,
        appKey,
        error: errorSentence(err),
      });
    }
    opts.onTask?.(++done, headers.length);
  });
  return result;
}

/** The keys of every task header of the table: one Scan, keys only. */
async function allHeaders(client: DynamoDBClient, tableName: string): Promise<Key[]> {
  const keys: Key[] = [];
  let start: Record<string, any> | undefined;
  do {
    const page: ScanCommandOutput = await client.send(
      new ScanCommand({
        TableName: tableName,
        FilterExpression: 'begins_with(pk, :t) AND begins_with(sk, :h)',
        ExpressionAttributeValues: marshall({ ':t': Keys.taskPk(''), ':h': Keys.headerPrefix }),
        ProjectionExpression: 'pk, sk',
        ExclusiveStartKey: start,
      }),
    );
    for (const raw of page.Items ?? []) {
      const item = fromItem(raw);
      keys.push({ pk: item.pk, sk: item.sk });
    }
    start = page.LastEvaluatedKey;
  } while (start);
  return keys;
}
