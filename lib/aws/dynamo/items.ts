// Reading the table's items: the batched key reads every path needs, and the mapping from stored items
// to the domain's records. Shared by the task store's writes and by its paginated reads (read-pages.ts).
import {
  BatchGetItemCommand,
  type BatchGetItemCommandOutput,
  type AttributeValue,
  type ConsumedCapacity,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { toSummary, type FileRecord, type TaskHeader } from '../../domain/task.ts';
import type { Capacity, StoredEvent, TaskSummary } from '../../domain/task-store.ts';
import { UnstorableCallbackError } from '../../domain/task-store.ts';
import { errorSentence } from '../../text.ts';
import { SORT_AT } from './table.ts';

export type Item = Record<string, any>;
export type Key = { pk: string; sk: string };

/** Thrown when an item stays contended after every attempt: retryable, the message comes back later. */
export class ContentionError extends Error {
  override name = 'ContentionError';
}

/**
 * An item as DynamoDB takes it. Every finite number in DynamoDB's range is written as JavaScript prints it
 * (the SDK by default refuses integers beyond 2^53, which DynamoDB stores); anything the SDK cannot convert
 * makes the callback unstorable, not a retry.
 */
export function toItem(item: Item): Record<string, AttributeValue> {
  try {
    return marshall(item, { removeUndefinedValues: true, allowImpreciseNumbers: true });
  } catch (err) {
    throw new UnstorableCallbackError(`it cannot be turned into a DynamoDB item: ${errorSentence(err)}`, {
      cause: err,
    });
  }
}

/** An item as stored, numbers read back as the very doubles that were written (not BigInt, never a throw). */
export function fromItem(raw: Record<string, AttributeValue>): Item {
  return unmarshall(raw, { wrapNumbers: Number });
}

/** Exponential back-off with full jitter (5 ms doubling, capped at 400 ms): contenders spread out. */
export function backoff(attempt: number): Promise<void> {
  const ms = Math.random() * Math.min(400, 5 * 2 ** Math.min(attempt, 10));
  return new Promise((r) => setTimeout(r, ms));
}

export function addCapacity(cap: Capacity, consumed: ConsumedCapacity | undefined, kind: 'read' | 'write') {
  if (!consumed) return;
  const units =
    consumed.CapacityUnits ?? (kind === 'read' ? consumed.ReadCapacityUnits : consumed.WriteCapacityUnits) ?? 0;
  if (kind === 'read') cap.read += units;
  else cap.write += units;
}

/**
 * Strongly consistent reads of several items, in the order of `keys` (null where absent), 100 keys per
 * request, unprocessed keys asked again with back-off.
 */
export async function batchGetItems(
  client: DynamoDBClient,
  table: string,
  keys: readonly Key[],
  cap: Capacity,
  keysOnly = false,
): Promise<(Item | null)[]> {
  const found = new Map<string, Item>();
  // BatchGetItem refuses a request that names a key twice.
  const unique = [...new Map(keys.map((k) => [`${k.pk}\u0000${k.sk}`, k])).values()];
  for (let i = 0; i < unique.length; i += 100) {
    let request: Record<string, any> | undefined = {
      [table]: {
        Keys: unique.slice(i, i + 100).map((k) => marshall(k)),
        ConsistentRead: true,
        ...(keysOnly ? { ProjectionExpression: 'pk, sk' } : {}),
      },
    };
    for (let round = 0; request && Object.keys(request).length; round++) {
      if (round > 0) await backoff(round + 1);
      const res: BatchGetItemCommandOutput = await client.send(
        new BatchGetItemCommand({ RequestItems: request, ReturnConsumedCapacity: 'TOTAL' }),
      );
      for (const c of res.ConsumedCapacity ?? []) addCapacity(cap, c, 'read');
      for (const raw of res.Responses?.[table] ?? []) {
        const item = fromItem(raw as Record<string, AttributeValue>);
        found.set(`${item.pk}\u0000${item.sk}`, item);
      }
      request = res.UnprocessedKeys && Object.keys(res.UnprocessedKeys).length ? res.UnprocessedKeys : undefined;
      if (round > 20) throw new ContentionError('BatchGetItem left keys unprocessed after 20 rounds');
    }
  }
  return keys.map((k) => found.get(`${k.pk}\u0000${k.sk}`) ?? null);
}

// ---------------------------------------------------------------------------------------------------
// Item mapping

export function headerFromItem(item: Item): TaskHeader {
  return {
    service: item.service,
    id: item.id,
    identRank: item.identRank,
    appKey: item.appKey,
    roomId: item.roomId ?? null,
    sessionId: item.sessionId ?? null,
    userId: item.userId ?? null,
    mode: item.mode ?? null,
    extra: item.extra ?? null,
    configRank: item.configRank ?? null,
    config: item.config ?? null,
    startRank: item.startRank ?? null,
    startedAt: item.startedAt ?? null,
    startFileName: item.startFileName ?? null,
    endRank: item.endRank ?? null,
    endedAt: item.endedAt ?? null,
    endOk: item.endOk ?? false,
    startOrEndFailed: item.startOrEndFailed ?? false,
    lastError: item.lastError ?? null,
    firstAt: item.firstAt,
    updatedAt: item.updatedAt,
    eventCount: item.eventCount ?? 0,
    fileCount: item.fileCount ?? 0,
    pendingFiles: item.pendingFiles ?? 0,
    failedFiles: item.failedFiles ?? 0,
  };
}

export function fileFromItem(item: Item): FileRecord {
  return {
    fileName: item.fileName,
    sizeRank: item.sizeRank ?? null,
    size: item.size ?? null,
    upload: item.upload ?? null,
    firstFailureAt: item.firstFailureAt ?? null,
    attempts: item.attempts ?? 0,
  };
}

/** A listing's summary of a task header; `sortAt` as the item holds it (the key its index entries sort by). */
export function summaryFromItem(item: Item): TaskSummary {
  return { ...toSummary(headerFromItem(item)), sortAt: item[SORT_AT] };
}

export function eventFromItem(item: Item): StoredEvent {
  return {
    key: item.key,
    type: item.type,
    timestamp: item.timestamp,
    receivedAt: item.receivedAt,
    verdict: item.verdict,
    requestId: item.requestId ?? null,
    raw: item.raw,
    expiresAt: item.expiresAt ?? null,
    fileName: item.fileName ?? null,
    recovered: item.recovered ?? null,
  };
}
