// The DynamoDB calls the task store makes, each adding the capacity DynamoDB reports to a running total:
// reads by key, conditional and versioned puts, queries, with back-off where DynamoDB asks for it.
import {
  BatchGetItemCommand,
  type BatchGetItemCommandOutput,
  BatchWriteItemCommand,
  type BatchWriteItemCommandOutput,
  type WriteRequest,
  ConditionalCheckFailedException,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  UpdateItemCommand,
  type AttributeValue,
  type ConsumedCapacity,
  type DynamoDBClient,
  type QueryCommandInput,
} from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { UnstorableCallbackError, type Capacity } from '../../../domain/task-store.ts';
import { compositeKey, errorSentence } from '../../../text.ts';
import { chunks } from '../../../in-parallel.ts';

export type Item = Record<string, any>;
export type Key = { pk: string; sk: string };

/** A write whose condition fails is still billed (one unit for a small item); DynamoDB does not report it. */
const FAILED_CONDITION_WCU = 1;

/** Thrown when an item stays contended after every attempt: retryable, the message comes back later. */
export class ContentionError extends Error {
  override name = 'ContentionError';
}

export const noCapacity = (): Capacity => ({ read: 0, write: 0 });

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

function addCapacity(cap: Capacity, consumed: ConsumedCapacity | undefined, kind: 'read' | 'write'): void {
  if (!consumed) return;
  const units =
    consumed.CapacityUnits ?? (kind === 'read' ? consumed.ReadCapacityUnits : consumed.WriteCapacityUnits) ?? 0;
  if (kind === 'read') cap.read += units;
  else cap.write += units;
}

/** Exponential back-off with full jitter (5 ms doubling, capped at 400 ms): contenders spread out. */
export function backoff(attempt: number): Promise<void> {
  const ms = Math.random() * Math.min(400, 5 * 2 ** Math.min(attempt, 10));
  return new Promise((r) => setTimeout(r, ms));
}

const keyString = (k: Key) => compositeKey(k.pk, k.sk);

/**
 * A batch request, then what DynamoDB left unprocessed, sent again after a back-off until nothing is left; `send`
 * answers the part left unprocessed. Retryable when the table stays contended through 20 rounds.
 */
async function untilProcessed<R extends object>(
  first: R,
  what: string,
  send: (request: R) => Promise<R | undefined>,
): Promise<void> {
  let request: R | undefined = first;
  for (let round = 0; request && Object.keys(request).length; round++) {
    if (round > 0) await backoff(round + 1);
    request = await send(request);
    if (round > 20) throw new ContentionError(`${what} after 20 rounds`);
  }
}

/** The reads: all the read API and the CLI need (their bundles carry no write). */
export class TableReader {
  readonly client: DynamoDBClient;
  readonly table: string;

  constructor(client: DynamoDBClient, table: string) {
    this.client = client;
    this.table = table;
  }

  /** One item by key: strongly consistent unless `consistent` is false (half the read units). */
  async get(key: Key, cap: Capacity, consistent = true): Promise<Item | null> {
    const res = await this.client.send(
      new GetItemCommand({
        TableName: this.table,
        Key: marshall(key),
        ConsistentRead: consistent,
        ReturnConsumedCapacity: 'TOTAL',
      }),
    );
    addCapacity(cap, res.ConsumedCapacity, 'read');
    return res.Item ? fromItem(res.Item) : null;
  }

  /**
   * Several items by key, in the order of `keys` (null where absent). Keys are deduplicated before they
   * go out: DynamoDB refuses a BatchGetItem that names one key twice.
   */
  async getMany(keys: Key[], cap: Capacity, consistent = true): Promise<(Item | null)[]> {
    const found = new Map<string, Item>();
    const distinct = [...new Map(keys.map((k) => [keyString(k), k])).values()];
    for (const chunk of chunks(distinct, 100)) {
      const request: Record<string, any> = {
        [this.table]: {
          Keys: chunk.map((k) => marshall({ pk: k.pk, sk: k.sk })),
          ConsistentRead: consistent,
        },
      };
      await untilProcessed(request, 'BatchGetItem left keys unprocessed', async (RequestItems) => {
        const res: BatchGetItemCommandOutput = await this.client.send(
          new BatchGetItemCommand({ RequestItems, ReturnConsumedCapacity: 'TOTAL' }),
        );
        for (const c of res.ConsumedCapacity ?? []) addCapacity(cap, c, 'read');
        for (const raw of res.Responses?.[this.table] ?? []) {
          const item = fromItem(raw as Record<string, AttributeValue>);
          found.set(keyString(item as Key), item);
        }
        return res.UnprocessedKeys;
      });
    }
    return keys.map((k) => found.get(keyString(k)) ?? null);
  }

  async *queryAll(input: Omit<QueryCommandInput, 'TableName'>, cap: Capacity = noCapacity()): AsyncIterable<Item> {
    let start: Record<string, AttributeValue> | undefined;
    do {
      const res = await this.client.send(
        new QueryCommand({
          TableName: this.table,
          ...input,
          ExclusiveStartKey: start,
          ReturnConsumedCapacity: 'TOTAL',
        }),
      );
      addCapacity(cap, res.ConsumedCapacity, 'read');
      for (const raw of res.Items ?? []) yield fromItem(raw);
      start = res.LastEvaluatedKey;
    } while (start);
  }
}

/** The reads and the writes: the write path's. */
export class TableClient extends TableReader {
  /** Puts an item if its version is still the one read (or it is still absent). */
  putVersioned(item: Item, previousVersion: number | undefined, cap: Capacity): Promise<boolean> {
    const versioned = { ...item, ver: (previousVersion ?? 0) + 1 };
    return previousVersion === undefined
      ? this.putIf(versioned, 'attribute_not_exists(pk)', undefined, cap)
      : this.putIf(versioned, 'ver = :v', { ':v': { N: String(previousVersion) } }, cap);
  }

  /** A conditional PutItem: false when the condition does not hold. */
  async putIf(
    item: Item,
    condition: string,
    values: Record<string, AttributeValue> | undefined,
    cap: Capacity,
  ): Promise<boolean> {
    try {
      await this.put(item, cap, { ConditionExpression: condition, ExpressionAttributeValues: values });
      return true;
    } catch (err) {
      if (!(err instanceof ConditionalCheckFailedException)) throw err;
      cap.write += FAILED_CONDITION_WCU;
      return false;
    }
  }

  /** A conditional UpdateItem (updateIf). */
  update(
    key: Key,
    expression: UpdateExpression,
    cap: Capacity,
  ): Promise<{ ok: true; item: Item } | { ok: false; old: Item | null | undefined }> {
    return updateIf(this, key, expression, cap);
  }

  async put(
    item: Item,
    cap: Capacity,
    condition?: { ConditionExpression: string; ExpressionAttributeValues?: Record<string, AttributeValue> | undefined },
  ): Promise<void> {
    const res = await this.client.send(
      new PutItemCommand({
        TableName: this.table,
        Item: toItem(item),
        ...(condition?.ConditionExpression ? { ConditionExpression: condition.ConditionExpression } : {}),
        ...(condition?.ExpressionAttributeValues
          ? { ExpressionAttributeValues: condition.ExpressionAttributeValues }
          : {}),
        ReturnConsumedCapacity: 'TOTAL',
      }),
    );
    addCapacity(cap, res.ConsumedCapacity, 'write');
  }
}

export interface UpdateExpression {
  update: string;
  /** Absent: the update is made whatever the item holds (and creates it when absent). */
  condition?: string;
  names?: Record<string, string>;
  values: Record<string, AttributeValue>;
}

/**
 * A conditional UpdateItem that returns the item as it stands after it, or, when its condition fails, as
 * DynamoDB found it (`old`: null when absent; undefined when the service did not say, as emulators that
 * ignore ReturnValuesOnConditionCheckFailure do: the caller reads it then). A function, not only a method of
 * TableClient: a bundle that updates and puts nothing (the verifier's) carries no PutItem.
 */
export async function updateIf(
  table: TableReader,
  key: Key,
  expression: UpdateExpression,
  cap: Capacity,
): Promise<{ ok: true; item: Item } | { ok: false; old: Item | null | undefined }> {
  try {
    const res = await table.client.send(
      new UpdateItemCommand({
        TableName: table.table,
        Key: marshall(key),
        UpdateExpression: expression.update,
        ...(expression.condition ? { ConditionExpression: expression.condition } : {}),
        ...(expression.names ? { ExpressionAttributeNames: expression.names } : {}),
        ExpressionAttributeValues: expression.values,
        ReturnValues: 'ALL_NEW',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        ReturnConsumedCapacity: 'TOTAL',
      }),
    );
    addCapacity(cap, res.ConsumedCapacity, 'write');
    return { ok: true, item: fromItem(res.Attributes ?? {}) };
  } catch (err) {
    if (!(err instanceof ConditionalCheckFailedException)) throw err;
    cap.write += FAILED_CONDITION_WCU;
    // The item as found comes with the refusal where the service supports it (not every emulator does).
    const found = (err as { Item?: Record<string, AttributeValue> }).Item;
    return { ok: false, old: found ? fromItem(found) : undefined };
  }
}

/**
 * Unconditional puts of several items (written again, each is the same): one BatchWriteItem per 25, what DynamoDB
 * leaves unprocessed sent again after a back-off; a single item goes as a plain PutItem. A function, not a method:
 * only the bundles that call it carry BatchWriteItem (each role grants what its bundle sends).
 */
export async function putAll(table: TableClient, items: readonly Item[], cap: Capacity): Promise<void> {
  if (items.length <= 1) {
    for (const item of items) await table.put(item, cap);
    return;
  }
  for (const chunk of chunks(items, 25)) {
    const request: Record<string, WriteRequest[]> = {
      [table.table]: chunk.map((item) => ({ PutRequest: { Item: toItem(item) } })),
    };
    await untilProcessed(request, 'BatchWriteItem left items unprocessed', async (RequestItems) => {
      const res: BatchWriteItemCommandOutput = await table.client.send(
        new BatchWriteItemCommand({ RequestItems, ReturnConsumedCapacity: 'TOTAL' }),
      );
      for (const c of res.ConsumedCapacity ?? []) addCapacity(cap, c, 'write');
      return res.UnprocessedItems;
    });
  }
}
