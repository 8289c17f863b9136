// `putAll`: the time bucket entries of a batch's new tasks in BatchWriteItem requests. DynamoDB may leave some
// items of a request unprocessed (under throttling); dynalite never does, so a stub in front of it returns a part
// of each request as unprocessed, and what was not written must be sent again until every item is stored.
import { BatchWriteItemCommand, ScanCommand, type DynamoDBClient, type WriteRequest } from '@aws-sdk/client-dynamodb';
import { useQuietDynamo } from '../../../../test/support/quiet-dynamo.ts';
import { TableClient, fromItem, noCapacity, putAll } from './table-client.ts';

const local = useQuietDynamo();

/** A client that writes only the first item of each BatchWriteItem and reports the others unprocessed. */
function oneAtATime(client: DynamoDBClient): { client: DynamoDBClient; requests: number[] } {
  const requests: number[] = [];
  const send = async (command: unknown) => {
    if (!(command instanceof BatchWriteItemCommand)) return client.send(command as never);
    const [table, writes] = Object.entries(command.input.RequestItems ?? {})[0] as [string, WriteRequest[]];
    requests.push(writes.length);
    const res = await client.send(
      new BatchWriteItemCommand({ ...command.input, RequestItems: { [table]: [writes[0]!] } }),
    );
    return { ...res, UnprocessedItems: writes.length > 1 ? { [table]: writes.slice(1) } : {} };
  };
  return { client: { send } as unknown as DynamoDBClient, requests };
}

async function stored(prefix: string): Promise<string[]> {
  const res = await local.db.client.send(new ScanCommand({ TableName: local.db.tableName }));
  return (res.Items ?? [])
    .map((raw) => fromItem(raw))
    .filter((item) => String(item.pk).startsWith(prefix))
    .map((item) => `${item.pk} ${item.sk}`)
    .sort();
}

test('every item is stored when DynamoDB leaves some unprocessed, each sent again until it is written', async () => {
  const stub = oneAtATime(local.db.client);
  const table = new TableClient(stub.client, local.db.tableName);
  const items = [1, 2, 3, 4].map((i) => ({ pk: 'UNPROCESSED#a', sk: `s${i}`, v: i }));
  const cap = noCapacity();
  await putAll(table, items, cap);
  expect(await stored('UNPROCESSED#')).toEqual(items.map((i) => `${i.pk} ${i.sk}`));
  expect(stub.requests).toEqual([4, 3, 2, 1]);
  expect(cap.write).toBe(4);
});

test('more than 25 items go in requests of at most 25, a single item as a plain put', async () => {
  const sent: string[] = [];
  const client = {
    send: (command: { constructor: { name: string }; input: { RequestItems?: Record<string, unknown[]> } }) => {
      sent.push(`${command.constructor.name}:${Object.values(command.input.RequestItems ?? {}).flat().length || 1}`);
      return local.db.client.send(command as never);
    },
  } as unknown as DynamoDBClient;
  const table = new TableClient(client, local.db.tableName);
  const items = Array.from({ length: 30 }, (_, i) => ({ pk: 'MANY#b', sk: `s${String(i).padStart(2, '0')}` }));
  await putAll(table, items, noCapacity());
  await putAll(table, [{ pk: 'MANY#c', sk: 'one' }], noCapacity());
  await putAll(table, [], noCapacity());
  expect(sent).toEqual(['BatchWriteItemCommand:25', 'BatchWriteItemCommand:5', 'PutItemCommand:1']);
  expect(await stored('MANY#')).toHaveLength(31);
});
