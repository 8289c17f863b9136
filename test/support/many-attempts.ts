// One image whose upload fails again and again through a storage outage: the platform retries it every 10 s
// and reports each failure, some twice, in any order, two writers at once on the one task. The task store's
// test runs it with a few hundred attempts (past the file item's inline keys), and at full size with the 8,640
// attempts of 24 hours (test/support/size.ts). What is checked: every attempt counted once, the task as the
// domain folds it, one event per callback, and no item growing with the attempts.
import {
  type AttributeValue,
  type DynamoDBClient,
  ScanCommand,
  type ScanCommandOutput,
} from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { isDeepStrictEqual } from 'node:util';
import { itemSize } from 'dynalite/db/index.js';
import fc from 'fast-check';
import { ContentionError, DynamoTaskStore } from '../../lib/aws/dynamo/read/task-store.ts';
import { Keys } from '../../lib/aws/dynamo/table/table.ts';
import { eventKey } from '../../lib/domain/canonical.ts';
import { reduceTask } from '../../lib/domain/reduce-task.ts';
import { mustParse } from './lifecycles.ts';

const T0 = 1_763_798_400_000;
/** The 24 hours of retries every 10 s the platform makes for one file. */
export const FULL_DAY_ATTEMPTS = 8640;
/** Items a task's record of one item can exceed: far below DynamoDB's 400 KB whatever the attempts. */
const SMALL_ITEM_BYTES = 1024;

async function itemsOf(
  client: DynamoDBClient,
  tableName: string,
  pk: string,
): Promise<{ sk: string; bytes: number }[]> {
  const items: { sk: string; bytes: number }[] = [];
  let start: Record<string, AttributeValue> | undefined;
  do {
    const page: ScanCommandOutput = await client.send(
      new ScanCommand({
        TableName: tableName,
        ExclusiveStartKey: start,
        FilterExpression: 'pk = :pk',
        ExpressionAttributeValues: marshall({ ':pk': pk }),
      }),
    );
    for (const item of page.Items ?? []) items.push({ sk: item.sk!.S!, bytes: itemSize(item) });
    start = page.LastEvaluatedKey;
  } while (start);
  return items;
}

/**
 * Delivers `attempts` failed uploads of one image (every 20th twice, shuffled with `seed`) to the table and
 * returns what differs from the expected state: empty when everything holds.
 */
export async function manyAttemptsProblems(o: {
  client: DynamoDBClient;
  tableName: string;
  attempts: number;
  imageId: string;
  seed?: number;
}): Promise<string[]> {
  const base = { appKey: 'demo-app', sessionId: 'sess', roomId: 'room', imageId: o.imageId, extra: '' };
  const fileName = 'sess_room_user_stream_1763798410000.jpg';
  const start = { ...base, type: 1, timestamp: T0, code: 200, errorMessage: 'success', config: { trigger: 1 } };
  const failure = (i: number) => ({
    ...base,
    type: 4,
    timestamp: T0 + 10_000 + i * 10_000,
    code: 10002,
    errorMessage: 'storage unreachable',
    output: { fileName, fileUrl: '', fileState: '10002', fileMsg: 'storage unreachable' },
  });
  const bodies = [start, ...Array.from({ length: o.attempts }, (_, i) => failure(i))];
  const deliveries = [...bodies, ...bodies.filter((_, i) => i % 20 === 7)];
  const shuffled = fc.sample(fc.shuffledSubarray(deliveries, { minLength: deliveries.length }), {
    numRuns: 1,
    seed: o.seed ?? 8640,
  })[0]!;
  const store = new DynamoTaskStore({ client: o.client, tableName: o.tableName });
  let next = 0;
  const outcomes: Record<string, number> = {};
  // Two at a time on the one image: a write that stays contended comes back, as SQS would bring it.
  await Promise.all(
    Array.from({ length: 2 }, async () => {
      while (next < shuffled.length) {
        const body = shuffled[next++]!;
        const delivery = {
          callback: mustParse('screenshot', body),
          raw: JSON.stringify(body),
          receivedAt: T0,
          verdict: 'not_checked' as const,
          mode: 'off' as const,
          requestId: null,
          messageId: `m-${next}`,
          replayKey: null,
        };
        for (;;) {
          const result = await store.applyCallback(delivery).catch((err: unknown) => {
            if (err instanceof ContentionError) return null;
            throw err;
          });
          if (!result) continue;
          outcomes[result.outcome] = (outcomes[result.outcome] ?? 0) + 1;
          break;
        }
      }
    }),
  );

  const problems: string[] = [];
  const check = (what: string, actual: unknown, expected: unknown) => {
    if (!isDeepStrictEqual(actual, expected))
      problems.push(
        `${what}: ${JSON.stringify(actual)?.slice(0, 400)}, expected ${JSON.stringify(expected)?.slice(0, 400)}`,
      );
  };
  check('outcomes', outcomes, { applied: bodies.length, duplicate: deliveries.length - bodies.length });
  const task = await store.getTask(o.imageId);
  check('task', task, reduceTask(bodies.map((b) => mustParse('screenshot', b))));
  check('event count', task?.eventCount, 1 + o.attempts);
  const file = task?.files[0];
  check(
    'file',
    file && { fileName: file.fileName, upload: file.upload, attempts: file.attempts, purgeAt: file.purgeAt },
    { fileName, upload: 'failed', attempts: o.attempts, purgeAt: T0 + 10_000 + 86_400_000 },
  );
  check(
    'event keys',
    (await store.listEvents(o.imageId)).map((e) => e.key).sort(),
    [...new Set(bodies.map((b) => eventKey(b)))].sort(),
  );
  // The header, the file, and one small item per attempt past the file's inline keys.
  const items = await itemsOf(o.client, o.tableName, Keys.taskPk(o.imageId));
  check('items', items.length, 2 + o.attempts - 4);
  const largest = Math.max(...items.map((i) => i.bytes));
  if (!(largest < SMALL_ITEM_BYTES))
    problems.push(`the largest item holds ${largest} bytes (${SMALL_ITEM_BYTES} at most)`);
  return problems;
}
