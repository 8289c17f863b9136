// A write DynamoDB refuses (ProvisionedThroughputExceededException, ordinary under a burst) or loses on the way,
// and the batch retried by the SAME warm worker, as Lambda most often does: nothing the worker remembers may come
// from a write that was not confirmed. The oracle is reduceTask over the callbacks and the events' MUST..MAY.
import { readFileSync } from 'node:fs';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoTaskStore } from '../lib/aws/dynamo/read/task-store.ts';
import { checkPublished, expectedEvents } from '../lib/domain/expected-events.ts';
import type { TaskEvent } from '../lib/domain/task-events.ts';
import { createLogger } from '../lib/log.ts';
import { processBatch } from '../lib/worker/process-batch.ts';
import type { Service } from '../lib/platform/services.ts';
import { mustParse } from './support/lifecycles.ts';
import { useQuietDynamo } from './support/quiet-dynamo.ts';
import { expectStoredTask } from './support/expect-stored.ts';
import { receivedAgain, sqsEvent, sqsRecord } from './support/sqs-events.ts';

const local = useQuietDynamo();
const log = createLogger('test');
const fixture = (name: string) =>
  JSON.parse(readFileSync(new URL(`fixtures/${name}.json`, import.meta.url), 'utf8')) as Record<string, any>;

let sequence = 10n ** 19n;

/**
 * The client, whose first write of an item whose sort key starts with `skPrefix` fails once: refused before it
 * reaches the table (throttled), or landed but answered with an error (a time-out on the way back).
 */
function failsOnce(client: DynamoDBClient, skPrefix: string, when: 'refused' | 'lost-answer') {
  let fired = false;
  const wrapped = new Proxy(client, {
    get(target, prop, receiver) {
      if (prop !== 'send') return Reflect.get(target, prop, receiver);
      const send = Reflect.get(target, prop, receiver) as (c: unknown) => Promise<unknown>;
      return async (command: { constructor: { name: string }; input: { Key?: any; Item?: any } }) => {
        const name = command.constructor.name;
        const sk = String((command.input.Key ?? command.input.Item)?.sk?.S ?? '');
        if (!fired && (name === 'PutItemCommand' || name === 'UpdateItemCommand') && sk.startsWith(skPrefix)) {
          fired = true;
          const throttled = Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), {
            name: 'ProvisionedThroughputExceededException',
            $retryable: { throttling: true },
          });
          if (when === 'lost-answer') await send.call(target, command);
          throw throttled;
        }
        return send.call(target, command);
      };
    },
  });
  return { client: wrapped, fired: () => fired };
}

const expectStored = (service: Service, id: string, bodies: object[]) =>
  expectStoredTask(local.db, service, id, bodies);

/** A screenshot task: its start, one image uploaded, its end. */
function screenshots(imageId: string) {
  const start: Record<string, any> = { ...fixture('screenshot-1-start'), imageId };
  const ok = fixture('screenshot-4-upload-ok');
  const upload = {
    ...ok,
    imageId,
    timestamp: start.timestamp + 10_000,
    output: { ...ok.output, fileName: `${imageId}-0.jpg` },
  };
  const end = { ...fixture('screenshot-3-end'), imageId, timestamp: start.timestamp + 20_000 };
  return { start, upload, end };
}

/** Runs each batch on one warm store (the header's first write failing once), retrying until none fails. */
async function runWarm(service: Service, batches: object[][], when: 'refused' | 'lost-answer') {
  const faulty = failsOnce(local.db.client, 'H#', when);
  const store = new DynamoTaskStore({ client: faulty.client, tableName: local.db.tableName });
  const published: TaskEvent[] = [];
  const events = { publish: async (batch: readonly TaskEvent[]) => void published.push(...batch) };
  for (const bodies of batches) {
    let records = bodies.map((b) => sqsRecord(service, b, { sequenceNumber: String(++sequence) }));
    for (let attempt = 0; attempt < 4 && records.length > 0; attempt++) {
      const res = await processBatch(sqsEvent(records), { store, log, events, concurrency: 3 });
      const failed = new Set(res.batchItemFailures.map((f) => f.itemIdentifier));
      records = records.filter((r) => failed.has(r.messageId)).map(receivedAgain);
    }
    expect(records).toEqual([]);
  }
  expect(faulty.fired()).toBe(true);
  return published;
}

describe.each(['refused', 'lost-answer'] as const)('a header write %s, retried on the same warm worker', (when) => {
  test('a screenshot end whose held header put failed is applied by its retry, and task.completed comes', async () => {
    const t = screenshots(`warm-end-${when}`);
    // The start and the image first; then the end alone, whose header put is held for its batch's count.
    const published: TaskEvent[] = [];
    const faulty = failsOnce(local.db.client, 'H#', when);
    const store = new DynamoTaskStore({ client: faulty.client, tableName: local.db.tableName });
    const events = { publish: async (batch: readonly TaskEvent[]) => void published.push(...batch) };
    const first = await processBatch(
      sqsEvent([t.start, t.upload].map((b) => sqsRecord('screenshot', b, { sequenceNumber: String(++sequence) }))),
      { store: new DynamoTaskStore({ client: local.db.client, tableName: local.db.tableName }), log, events },
    );
    expect(first.batchItemFailures).toEqual([]);
    let record = sqsRecord('screenshot', t.end, { sequenceNumber: String(++sequence) });
    const failedOnce = await processBatch(sqsEvent([record]), { store, log, events });
    expect(faulty.fired()).toBe(true);
    expect(failedOnce.batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
    record = receivedAgain(record);
    const retried = await processBatch(sqsEvent([record]), { store, log, events });
    expect(retried.batchItemFailures).toEqual([]);
    await expectStored('screenshot', t.start.imageId, [t.start, t.upload, t.end]);
    const stored = await new DynamoTaskStore({ client: local.db.client, tableName: local.db.tableName }).getTask(
      t.start.imageId,
    );
    expect(stored?.status).toBe('completed');
    const check = checkPublished(
      expectedEvents([t.start, t.upload, t.end].map((b) => mustParse('screenshot', b))),
      published,
    );
    expect(check.missing).toEqual([]);
    expect(check.unexpected).toEqual([]);
    expect(published.map((e) => e.type)).toContain('task.completed');
  });

  test('a start whose header put (the task created in its batch) failed is applied by its retry', async () => {
    const t = screenshots(`warm-start-${when}`);
    const published = await runWarm('screenshot', [[t.start, t.upload], [t.end]], when);
    await expectStored('screenshot', t.start.imageId, [t.start, t.upload, t.end]);
    const check = checkPublished(
      expectedEvents([t.start, t.upload, t.end].map((b) => mustParse('screenshot', b))),
      published,
    );
    expect(check).toMatchObject({ missing: [], unexpected: [] });
  });

  test('a recording end whose header put failed is applied by its retry on the same worker', async () => {
    const recordId = `warm-rec-${when}`;
    const start: Record<string, any> = { ...fixture('recording-1-start-mix'), recordId };
    const end: Record<string, any> = { ...fixture('recording-3-end'), recordId, timestamp: start.timestamp + 60_000 };
    const upload: Record<string, any> = {
      ...fixture('recording-4-upload-ok'),
      recordId,
      timestamp: start.timestamp + 70_000,
    };
    upload.output = { ...upload.output, fileName: end.output.fileName };
    const published = await runWarm('recording', [[start], [end, upload]], when);
    await expectStored('recording', recordId, [start, end, upload]);
    const check = checkPublished(expectedEvents([start, end, upload].map((b) => mustParse('recording', b))), published);
    expect(check).toMatchObject({ missing: [], unexpected: [] });
  });
});
