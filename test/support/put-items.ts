// Items written as a test's starting table, 25 to a BatchWriteItem rather than one PutItem each: a test about
// what is read (or migrated) spends its time there, not on seeding. Unprocessed items are sent again.
import { BatchWriteItemCommand, type AttributeValue, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { chunks } from '../../lib/in-parallel.ts';

export async function putItems(
  client: DynamoDBClient,
  tableName: string,
  items: readonly Record<string, AttributeValue>[],
): Promise<void> {
  for (const chunk of chunks(items, 25)) {
    let requests = chunk.map((Item) => ({ PutRequest: { Item } }));
    for (let round = 0; requests.length > 0; round++) {
      if (round === 10) throw new Error(`${requests.length} items of ${tableName} left unprocessed`);
      const res = await client.send(new BatchWriteItemCommand({ RequestItems: { [tableName]: requests } }));
      requests = (res.UnprocessedItems?.[tableName] ?? []) as typeof requests;
    }
  }
}
