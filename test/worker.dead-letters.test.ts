// A record's last receive (ApproximateReceiveCount = the queue's maxReceiveCount), as SQS FIFO delivers it: with
// the later callbacks of its task in the same batch. One that keeps failing is given up alone (the dead-letter
// queue) and the others are applied, counted and published; a worker that dies at that receive leaves a record
// that `dlq redrive` brings back with a new sequence number. Either way the task's counts are right once the dead
// letters are redriven, with no manual recount. The oracle is reduceTask over the callbacks.
import { readFileSync } from 'node:fs';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSRecord } from 'aws-lambda';
import { TableReader } from '../lib/aws/dynamo/table/table-client.ts';
import { DynamoTaskStore } from '../lib/aws/dynamo/read/task-store.ts';
import { DynamoMessageNotes, readMessageNotes } from '../lib/aws/dynamo/write/message-notes.ts';
import { checkPublished, expectedEvents } from '../lib/domain/expected-events.ts';
import type { TaskEvent } from '../lib/domain/task-events.ts';
import { createLogger } from '../lib/log.ts';
import { processBatch } from '../lib/worker/process-batch.ts';
import { mustParse } from './support/lifecycles.ts';
import { dyingClient } from './support/faulty-client.ts';
import { useQuietDynamo } from './support/quiet-dynamo.ts';
import { expectStoredTask } from './support/expect-stored.ts';
import { receivedAgain, redriven, sqsEvent, sqsRecord } from './support/sqs-events.ts';

const local = useQuietDynamo();
const log = createLogger('test');
const MAX = 3;
const fixture = (name: string) =>
  JSON.parse(readFileSync(new URL(`fixtures/${name}.json`, import.meta.url), 'utf8')) as Record<string, any>;

let sequence = 10n ** 19n + 500n;
const next = () => String(++sequence);

/** A screenshot task: start, `images` uploads (the first failed), end. */
function screenshots(imageId: string, images: number) {
  const start: Record<string, any> = { ...fixture('screenshot-1-start'), imageId };
  const image = (i: number, name: string) => {
    const body = fixture(name);
    return {
      ...body,
      imageId,
      timestamp: start.timestamp + 10_000 * (i + 1),
      output: { ...body.output, fileName: `${imageId}-${i}.jpg` },
    };
  };
  const uploads = Array.from({ length: images }, (_, i) =>
    image(i, i === 0 ? 'screenshot-4-upload-failed' : 'screenshot-4-upload-ok'),
  );
  const end = { ...fixture('screenshot-3-end'), imageId, timestamp: start.timestamp + 10_000 * (images + 1) };
  return { start, uploads, end, all: [start, ...uploads, end] };
}

/** A client whose every write of an item whose sort key contains `part` is refused (throttled). */
function refusing(client: DynamoDBClient, part: string): DynamoDBClient {
  return new Proxy(client, {
    get(target, prop, receiver) {
      if (prop !== 'send') return Reflect.get(target, prop, receiver);
      const send = Reflect.get(target, prop, receiver) as (c: unknown) => Promise<unknown>;
      return async (command: { constructor: { name: string }; input: { Key?: any; Item?: any } }) => {
        const sk = String((command.input.Key ?? command.input.Item)?.sk?.S ?? '');
        if (command.constructor.name !== 'GetItemCommand' && sk.includes(part))
          throw Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), {
            name: 'ProvisionedThroughputExceededException',
          });
        return send.call(target, command);
      };
    },
  });
}

const expectStored = (id: string, bodies: object[]) => expectStoredTask(local.db, 'screenshot', id, bodies);

const atReceive = (record: SQSRecord, count: number) => ({
  ...record,
  attributes: { ...record.attributes, ApproximateReceiveCount: String(count) },
});

test('a record failing at its last receive is given up alone: the later records of its task are applied', async () => {
  const t = screenshots('given-up-alone', 3);
  const published: TaskEvent[] = [];
  const events = { publish: async (batch: readonly TaskEvent[]) => void published.push(...batch) };
  const healthy = new DynamoTaskStore({ client: local.db.client, tableName: local.db.tableName });
  const first = await processBatch(sqsEvent([sqsRecord('screenshot', t.start, { sequenceNumber: next() })]), {
    store: healthy,
    log,
    events,
    maxReceiveCount: MAX,
  });
  expect(first.batchItemFailures).toEqual([]);
  // The failed image's file can never be written by this worker: its record fails at every receive.
  const store = new DynamoTaskStore({
    client: refusing(local.db.client, 'given-up-alone-0.jpg'),
    tableName: local.db.tableName,
  });
  const batch = [...t.uploads, t.end].map((b) => sqsRecord('screenshot', b, { sequenceNumber: next() }));
  const last = await processBatch(sqsEvent(batch.map((r) => atReceive(r, MAX))), {
    store,
    log,
    events,
    maxReceiveCount: MAX,
  });
  // Only the given-up record goes to the dead-letter queue; its task's later records are done.
  expect(last.batchItemFailures).toEqual([{ itemIdentifier: batch[0]!.messageId }]);
  await expectStored(t.start.imageId, [t.start, ...t.uploads.slice(1), t.end]);
  expect(published.map((e) => e.type)).toEqual(expect.arrayContaining(['task.ended', 'file.uploaded']));
  // The dead letter redriven: the task as all its callbacks make it, counts included, without a recount by hand.
  const again = await processBatch(sqsEvent([redriven(batch[0]!, next())]), {
    store: healthy,
    log,
    events,
    maxReceiveCount: MAX,
  });
  expect(again.batchItemFailures).toEqual([]);
  await expectStored(t.start.imageId, t.all);
  const check = checkPublished(expectedEvents(t.all.map((b) => mustParse('screenshot', b))), published);
  expect(check).toMatchObject({ missing: [], unexpected: [] });
});

test('a record whose worker died at its last receive after a partial write is counted once redriven', async () => {
  const t = screenshots('died-last', 2);
  const published: TaskEvent[] = [];
  const events = { publish: async (batch: readonly TaskEvent[]) => void published.push(...batch) };
  const healthy = new DynamoTaskStore({ client: local.db.client, tableName: local.db.tableName });
  const ok = await processBatch(sqsEvent([sqsRecord('screenshot', t.start, { sequenceNumber: next() })]), {
    store: healthy,
    log,
    events,
    maxReceiveCount: MAX,
  });
  expect(ok.batchItemFailures).toEqual([]);
  // The failed image: at every receive the worker dies once the image's file is written, before its count.
  let record = sqsRecord('screenshot', t.uploads[0]!, { sequenceNumber: next() });
  for (let receive = 1; receive <= MAX; receive++) {
    const dying = dyingClient(local.db.client, { failWrite: 2, when: 'after' });
    await processBatch(sqsEvent([record]), {
      store: new DynamoTaskStore({ client: dying.client, tableName: local.db.tableName }),
      log,
      events,
      maxReceiveCount: MAX,
    });
    expect(dying.died()).toBe(true);
    if (receive < MAX) record = receivedAgain(record);
  }
  // The dead letter waits in the dead-letter queue; the task's group moves on: the other image and the end.
  const rest = [t.uploads[1]!, t.end].map((b) => sqsRecord('screenshot', b, { sequenceNumber: next() }));
  const later = await processBatch(sqsEvent(rest), { store: healthy, log, events, maxReceiveCount: MAX });
  expect(later.batchItemFailures).toEqual([]);
  // Redriven: a new message, a new sequence number. Nothing else, no recount by hand.
  const again = await processBatch(sqsEvent([redriven(record, next())]), {
    store: healthy,
    log,
    events,
    maxReceiveCount: MAX,
  });
  expect(again.batchItemFailures).toEqual([]);
  await expectStored(t.start.imageId, t.all);
  const stored = await healthy.getTask(t.start.imageId);
  expect(stored?.status).toBe('upload_failed');
  const check = checkPublished(expectedEvents(t.all.map((b) => mustParse('screenshot', b))), published);
  expect(check.missing).toEqual([]);
});

test("a record given up whose failed put carried an earlier record's held put takes that record with it", async () => {
  // Two uploads of one image in one batch, at their last receive: the first holds its put for the second to
  // carry, and the second's put is refused. The first is not stored either: it goes to the dead-letter queue too.
  const t = screenshots('carried-given-up', 1);
  const retry = {
    ...t.uploads[0]!,
    code: 200,
    output: { ...fixture('screenshot-4-upload-ok').output, fileName: t.uploads[0]!.output.fileName },
    timestamp: t.uploads[0]!.timestamp + 5000,
  };
  const healthy = new DynamoTaskStore({ client: local.db.client, tableName: local.db.tableName });
  await processBatch(sqsEvent([sqsRecord('screenshot', t.start, { sequenceNumber: next() })]), {
    store: healthy,
    log,
    maxReceiveCount: MAX,
  });
  const refused = new DynamoTaskStore({
    client: refusing(local.db.client, 'carried-given-up-0.jpg'),
    tableName: local.db.tableName,
  });
  const batch = [t.uploads[0]!, retry].map((b) => sqsRecord('screenshot', b, { sequenceNumber: next() }));
  const last = await processBatch(sqsEvent(batch.map((r) => atReceive(r, MAX))), {
    store: refused,
    log,
    maxReceiveCount: MAX,
  });
  expect(last.batchItemFailures.map((f) => f.itemIdentifier).sort()).toEqual(batch.map((r) => r.messageId).sort());
  for (const record of batch) {
    const again = await processBatch(sqsEvent([redriven(record, next())]), {
      store: healthy,
      log,
      maxReceiveCount: MAX,
    });
    expect(again.batchItemFailures).toEqual([]);
  }
  await expectStored(t.start.imageId, [t.start, t.uploads[0]!, retry]);
});

test('dlq list gave no reason: a record given up notes its error; a redriven copy notes how it came out', async () => {
  const t = screenshots('noted', 2);
  const notes = new DynamoMessageNotes(local.db.client, local.db.tableName);
  const table = new TableReader(local.db.client, local.db.tableName);
  const healthy = new DynamoTaskStore({ client: local.db.client, tableName: local.db.tableName });
  const store = new DynamoTaskStore({
    client: refusing(local.db.client, 'noted-0.jpg'),
    tableName: local.db.tableName,
  });
  const [start, failing, ok] = [t.start, t.uploads[0]!, t.uploads[1]!].map((b) =>
    sqsRecord('screenshot', b, { sequenceNumber: next() }),
  ) as [SQSRecord, SQSRecord, SQSRecord];
  const deps = { store, log, notes, maxReceiveCount: MAX };
  // The normal path notes nothing: records applied, and one failing before its last receive (it comes again).
  await processBatch(sqsEvent([start, failing, ok]), deps);
  expect([
    ...(
      await readMessageNotes(
        table,
        [start, failing, ok].map((r) => r.messageId),
      )
    ).keys(),
  ]).toEqual([]);
  // At its last receive it is given up, and noted with the error it failed on.
  const last = await processBatch(sqsEvent([atReceive(failing, MAX)]), deps);
  expect(last.batchItemFailures).toEqual([{ itemIdentifier: failing.messageId }]);
  const given = (await readMessageNotes(table, [failing.messageId])).get(failing.messageId);
  expect(given).toMatchObject({
    outcome: 'given_up',
    receiveCount: MAX,
    service: 'screenshot',
    appKey: 'demo-app',
    taskId: t.start.imageId,
    type: 4,
  });
  expect(given!.error).toMatch(/Rate of requests exceeds the allowed throughput/);
  // Redriven (a copy with an id of its own), it is applied by a healthy worker: noted applied, and a later receive
  // of the same copy (a duplicate then) leaves that note as it is.
  const copy = redriven(failing, next());
  for (let receive = 1; receive <= 2; receive++)
    await processBatch(sqsEvent([atReceive(copy, receive)]), { store: healthy, log, notes, maxReceiveCount: MAX });
  expect((await readMessageNotes(table, [copy.messageId])).get(copy.messageId)).toMatchObject({
    outcome: 'applied',
    error: null,
    receiveCount: 1,
  });
});
