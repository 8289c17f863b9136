// `callbacks migrate`, for tasks written before deliveries were keyed in the byTaskTime index: each raw body
// the task records gets its index keys, then the header is marked (`ev`), so that `tasks events` reads the
// task by time. Idempotent: a run stopped before the mark keys the same bodies again.
import { ConditionalCheckFailedException, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { EVENTS_INDEXED, appKeyOf, bodyKey, eventsIndexKeys } from './items.ts';
import type { TaskQueries } from './queries.ts';
import { noCapacity, type Item, type Key, type TableClient } from './table-client.ts';
import { Keys } from './table.ts';

/** A task's raw bodies keyed in the byTaskTime index, then its header marked as read by time. */
export async function indexEvents(table: TableClient, queries: TaskQueries, key: Key): Promise<void> {
  const header = await table.get(key, noCapacity());
  if (!header || header[EVENTS_INDEXED] === 1) return;
  const appKey = appKeyOf(header);
  const id = key.pk.slice(Keys.taskPk('').length);
  const { recorded } = await queries.assembled(header);
  for (const r of recorded)
    await setIfPresent(
      table,
      bodyKey(appKey, id, r.eventKey, r.ref),
      eventsIndexKeys(appKey, id, r.timestamp, r.eventKey),
    );
  await setIfPresent(table, key, { [EVENTS_INDEXED]: 1 });
}

/** Attributes set on an item if it is there (a raw body past its retention is gone, and stays so). */
export async function setIfPresent(table: TableClient, key: Key, values: Item): Promise<void> {
  const names = Object.keys(values);
  try {
    await table.client.send(
      new UpdateItemCommand({
        TableName: table.table,
        Key: marshall(key),
        UpdateExpression: `SET ${names.map((_, i) => `#a${i} = :v${i}`).join(', ')}`,
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeNames: Object.fromEntries(names.map((n, i) => [`#a${i}`, n])),
        ExpressionAttributeValues: marshall(Object.fromEntries(names.map((n, i) => [`:v${i}`, values[n]]))),
      }),
    );
  } catch (err) {
    if (!(err instanceof ConditionalCheckFailedException)) throw err;
  }
}
