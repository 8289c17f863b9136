// `tasks list` reads task keys from the indexes, then the tasks by BatchGetItem. A task's status is not in
// any index key (it is added up from the task's items when read), so a task whose status changes while it is
// being listed stays in its one index partition: DynamoDB refuses a BatchGetItem that names a key twice
// (dynalite does not), and the task must be listed once, as it stands when read.
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoTaskStore } from '../lib/aws/dynamo/read/task-store.ts';
import { parseCallback } from '../lib/domain/callback.ts';
import type { DeliveredCallback } from '../lib/domain/task-store.ts';
import { type LocalDynamo, startDynamo } from '../devkit/local/dynamo.ts';

let db: LocalDynamo;
beforeAll(async () => {
  db = await startDynamo();
});
afterAll(() => db.stop());

const T0 = Date.now() - 3_600_000;
let messages = 0;

function delivered(type: number, at: number, id: string): DeliveredCallback {
  const r = parseCallback(
    'recording',
    JSON.stringify({
      timestamp: at,
      type,
      appKey: 'app-list',
      recordId: id,
      roomId: 'room',
      sessionId: 's',
      code: 200,
      ...(type === 3 ? { output: { fileName: `${id}.mp4`, fileSize: 1 } } : {}),
    }),
  );
  if (!r.ok) throw new Error(r.errors.join());
  return {
    callback: r.callback,
    raw: JSON.stringify(r.callback.body),
    receivedAt: at,
    verdict: 'valid',
    mode: 'enforce',
    requestId: null,
    messageId: `msg-${++messages}`,
    replayKey: null,
  };
}

test('a task that moves from one index partition to another while listed: one BatchGetItem key, one row', async () => {
  const writer = new DynamoTaskStore({ client: db.client, tableName: db.tableName });
  for (const [i, id] of ['rec-list-a', 'rec-list-b', 'rec-list-moving'].entries()) {
    await writer.applyCallback(delivered(1, T0 + i * 1000, id));
  }

  // The listing by appKey reads the appKey's index partition; once it has answered, the moving task ends.
  const batchKeys: string[][] = [];
  const send = db.client.send.bind(db.client) as (command: any) => Promise<any>;
  const client = new Proxy(db.client, {
    get(target, prop, receiver) {
      if (prop !== 'send') return Reflect.get(target, prop, receiver);
      return async (command: any) => {
        const name = command?.constructor?.name;
        const partition: string | undefined = command?.input?.ExpressionAttributeValues?.[':v']?.S;
        if (name === 'QueryCommand' && partition === 'APP#app-list') {
          const answer = await send(command);
          await writer.applyCallback(delivered(3, T0 + 2500, 'rec-list-moving'));
          return answer;
        }
        if (name === 'BatchGetItemCommand') {
          const keys = Object.values(command.input.RequestItems as Record<string, { Keys: any[] }>).flatMap((r) =>
            r.Keys.map((k) => `${k.pk.S}|${k.sk.S}`),
          );
          batchKeys.push(keys);
          // What DynamoDB answers such a request.
          if (new Set(keys).size !== keys.length)
            throw Object.assign(new Error('Provided list of item keys contains duplicates'), {
              name: 'ValidationException',
            });
        }
        return send(command);
      };
    },
  }) as DynamoDBClient;
  const reader = new DynamoTaskStore({ client, tableName: db.tableName });

  const listed = [];
  for await (const summary of reader.listTasks({ appKey: 'app-list' })) listed.push([summary.id, summary.status]);
  expect(listed).toEqual([
    ['rec-list-moving', 'ended'],
    ['rec-list-b', 'recording'],
    ['rec-list-a', 'recording'],
  ]);
  expect(batchKeys.length).toBeGreaterThan(0);
  for (const keys of batchKeys) expect(keys).toHaveLength(new Set(keys).size);
});
