// A batch that comes back in pieces after its worker died: the end of a recording and a failed upload of the
// end's file were both written, the header was not. The end comes back first, alone: its file's mark is the
// upload's (a later message), so the header leaves that file for the upload's batch to charge. The task the
// count returns must still show the file as it stands (a failed upload): the header alone (an end, no file)
// is no state any subset of the callbacks reaches, and must not publish task.completed nor keep a `doneAt`.
// The oracles: expectedEvents (MUST..MAY) and reduceTask over the callbacks.
import { readFileSync } from 'node:fs';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { TaskQueries } from '../lib/aws/dynamo/read/queries.ts';
import { TableReader } from '../lib/aws/dynamo/table/table-client.ts';
import { DynamoTaskStore } from '../lib/aws/dynamo/read/task-store.ts';
import { checkPublished, expectedEvents } from '../lib/domain/expected-events.ts';
import { reduceTask } from '../lib/domain/reduce-task.ts';
import type { TaskEvent } from '../lib/domain/task-events.ts';
import { createLogger } from '../lib/log.ts';
import { processBatch } from '../lib/worker/process-batch.ts';
import { mustParse } from './support/lifecycles.ts';
import { useQuietDynamo } from './support/quiet-dynamo.ts';
import { receivedAgain, sqsEvent, sqsRecord } from './support/sqs-events.ts';

const local = useQuietDynamo();
const log = createLogger('test');
const fixture = (name: string) =>
  JSON.parse(readFileSync(new URL(`fixtures/${name}.json`, import.meta.url), 'utf8')) as Record<string, any>;

/** The client of a worker that dies at its count of a task's header (the write of `seq`): the writes before stand. */
function diesAtCount(client: DynamoDBClient): DynamoDBClient {
  let dead = false;
  return new Proxy(client, {
    get(target, prop, receiver) {
      if (prop !== 'send') return Reflect.get(target, prop, receiver);
      const send = Reflect.get(target, prop, receiver) as (c: unknown) => Promise<unknown>;
      return (command: { constructor: { name: string }; input: { Key?: any; Item?: any } }) => {
        const name = command.constructor.name;
        const sk = String((command.input.Key ?? command.input.Item)?.sk?.S ?? '');
        const counts = name === 'UpdateItemCommand' || (name === 'PutItemCommand' && command.input.Item?.seq);
        if (counts && sk.startsWith('H#')) dead = true;
        if (dead) return Promise.reject(Object.assign(new Error('the worker died'), { name: 'WorkerDied' }));
        return send.call(target, command);
      };
    },
  });
}

test('an end counted before the later upload of its file publishes no task.completed and keeps no doneAt', async () => {
  const id = 'deferred-mark-rec-1';
  const end = { ...fixture('recording-3-end'), recordId: id };
  const failed = { ...fixture('recording-4-upload-failed'), recordId: id };
  const [endRecord, failedRecord] = [end, failed].map((b, i) =>
    sqsRecord('recording', JSON.stringify(b), { sequenceNumber: String(10n ** 19n + BigInt(i * 10)) }),
  );
  const published: TaskEvent[] = [];
  const events = { publish: async (batch: readonly TaskEvent[]) => void published.push(...batch) };
  const store = (client: DynamoDBClient) => new DynamoTaskStore({ client, tableName: local.db.tableName });
  const deps = (client: DynamoDBClient) => ({ store: store(client), log, concurrency: 3, events, maxReceiveCount: 10 });

  // Both written, then the worker dies at the header: the whole batch comes back, the end first and alone.
  const first = await processBatch(sqsEvent([endRecord!, failedRecord!]), deps(diesAtCount(local.db.client)));
  expect(first.batchItemFailures).toHaveLength(2);
  expect(published).toEqual([]);
  const again = await processBatch(sqsEvent([receivedAgain(endRecord!)]), deps(local.db.client));
  expect(again.batchItemFailures).toEqual([]);
  // Between the two batches the header holds no completion.
  const queries = new TaskQueries(new TableReader(local.db.client, local.db.tableName), Date.now);
  const header = await queries.findHeader(id);
  expect(header?.doneAt).toBeUndefined();
  const last = await processBatch(sqsEvent([receivedAgain(failedRecord!)]), deps(local.db.client));
  expect(last.batchItemFailures).toEqual([]);

  const callbacks = [end, failed].map((b) => mustParse('recording', b));
  const check = checkPublished(expectedEvents(callbacks), published);
  expect(check.unexpected).toEqual([]);
  expect(check.missing).toEqual([]);
  expect(await store(local.db.client).getTask(id)).toEqual(reduceTask(callbacks));
  expect(published.some((e) => e.type === 'task.completed')).toBe(false);
});
