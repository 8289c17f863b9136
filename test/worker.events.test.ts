// Task events through the real worker, the DynamoDB store (dynalite) and SNS with an SQS subscription
// (fauxqs), checked against the pure function: the distinct events published lie between MUST and MAY
// (and equal them where the two agree), for random lifecycles of both services, shuffled, duplicated and
// in random batches; and with the worker dying after each write and SNS refusing publishes for a while.
import { SNSClient } from '@aws-sdk/client-sns';
import { SQSClient } from '@aws-sdk/client-sqs';
import { readFileSync } from 'node:fs';
import type { SQSRecord } from 'aws-lambda';
import fc from 'fast-check';
import { startFauxqs, type FauxqsServer } from 'fauxqs';
import { DynamoTaskStore } from '../lib/aws/dynamo/read/task-store.ts';
import { snsEventPublisher } from '../lib/aws/sns/task-events.ts';
import type { EventPublisher } from '../lib/domain/event-publisher.ts';
import { EventQueueReader, ensureEventsTopicAndQueue, type ReceivedEvent } from '../lib/aws/sqs/event-queue.ts';
import type { TaskEvent } from '../lib/domain/task-events.ts';
import { checkPublished, expectedEvents, type ExpectedEvents } from '../lib/domain/expected-events.ts';
import type { TaskStore } from '../lib/domain/task-store.ts';
import type { BatchWriter } from '../lib/domain/batch.ts';
import {
  anyLifecycles,
  callbacksOf,
  interleavedDeliveries,
  recordingLifecycle,
  screenshotLifecycle,
  type Body,
  type Delivery,
  type Lifecycle,
} from './support/lifecycles.ts';
import { createLogger, setLogSink } from '../lib/log.ts';
import { processBatch } from '../lib/worker/process-batch.ts';
import { startDynamo, type LocalDynamo } from '../devkit/local/dynamo.ts';
import { dyingClient, faultyClient } from './support/faulty-client.ts';
import { receivedAgain, sqsEvent, sqsRecord } from './support/sqs-events.ts';
import { sized, writePositions } from './support/size.ts';

let db: LocalDynamo;
let fauxqs: FauxqsServer;
let sns: SNSClient;
let sqs: SQSClient;
let endpoint: string;
let restoreSink: ReturnType<typeof setLogSink>;
const log = createLogger('test');

beforeAll(async () => {
  db = await startDynamo();
  fauxqs = await startFauxqs({ port: 0, logger: false });
  endpoint = `http://127.0.0.1:${fauxqs.port}`;
  const config = { endpoint, region: 'us-east-1', credentials: { accessKeyId: 'l', secretAccessKey: 'l' } };
  sns = new SNSClient(config);
  sqs = new SQSClient(config);
  restoreSink = setLogSink(() => undefined);
});
afterAll(async () => {
  setLogSink(restoreSink);
  sns.destroy();
  sqs.destroy();
  await fauxqs.stop();
  await db.stop();
});

let run = 0;
/** Task ids, a topic and a subscribed queue of the run's own. */
async function isolate(lifecycles: Lifecycle[], deliveries: Delivery[]) {
  const prefix = `e${++run}-`;
  const rename = (service: string, body: Body): Body => {
    const idField = service === 'recording' ? 'recordId' : 'imageId';
    return { ...body, [idField]: prefix + String(body[idField]) };
  };
  const events = await ensureEventsTopicAndQueue(sns, sqs, endpoint, {
    topic: `events-${run}`,
    queue: `events-${run}-tail`,
  });
  const ls = lifecycles.map((l) => ({ ...l, id: prefix + l.id, bodies: l.bodies.map((b) => rename(l.service, b)) }));
  return {
    expected: expectedEvents(ls.flatMap(callbacksOf)),
    records: deliveries.map((d) => sqsRecord(d.service, rename(d.service, d.body))),
    publisher: snsEventPublisher(sns, events.topicArn),
    reader: new EventQueueReader(sqs, events.queueUrl),
  };
}

async function deliverUntilDone(
  records: SQSRecord[],
  store: TaskStore & BatchWriter,
  events: EventPublisher,
  batchSize: number,
) {
  let pending = records;
  for (let round = 0; pending.length && round < 30; round++) {
    const failed: SQSRecord[] = [];
    for (let i = 0; i < pending.length; i += batchSize) {
      const batch = pending.slice(i, i + batchSize);
      const res = await processBatch(sqsEvent(batch), { store, log, concurrency: 4, events });
      const ids = new Set(res.batchItemFailures.map((f) => f.itemIdentifier));
      failed.push(...batch.filter((r) => ids.has(r.messageId)).map(receivedAgain));
    }
    pending = failed;
  }
  return pending;
}

/** The ids published with more than one time or error, and those. */
function republishedAtAnotherTime(published: readonly TaskEvent[]) {
  const byId = new Map<string, Set<string>>();
  for (const e of published) {
    const times = byId.get(e.id) ?? new Set<string>();
    times.add(JSON.stringify([e.occurredAt, e.error ?? null]));
    byId.set(e.id, times);
  }
  return [...byId].filter(([, times]) => times.size > 1).map(([id, times]) => ({ id, times: [...times] }));
}

async function expectBetweenMustAndMay(expected: ExpectedEvents, received: ReceivedEvent[]) {
  const published = received.map((m) => m.body);
  const check = checkPublished(expected, published);
  expect({ missing: check.missing, unexpected: check.unexpected }).toEqual({ missing: [], unexpected: [] });
  const must = new Set(expected.must.map((r) => r.id));
  if (must.size === new Set(expected.may.map((r) => r.id)).size) {
    expect(new Set(published.map((e) => e.id))).toEqual(must);
  }
  return check;
}

test(
  'any order, any duplicates, any batching: MUST ⊆ published ⊆ MAY, with attributes for filter policies; ' +
    'delivered again, each id is republished at its one time',
  async () => {
    // Generated runs: a few in npm test, as many as before with npm run soak -- --sized-tests.
    const RUNS = sized(8, 25);
    let judged = 0;
    await fc.assert(
      fc.asyncProperty(
        anyLifecycles({ maxLength: 3 }).chain((ls) =>
          fc.tuple(fc.constant(ls), interleavedDeliveries(ls, { maxExtra: 6 }), fc.integer({ min: 1, max: 10 })),
        ),
        async ([ls, ds, batchSize]) => {
          const { expected, records, publisher, reader } = await isolate(ls, ds);
          const store = new DynamoTaskStore({ client: db.client, tableName: db.tableName, inlineKeys: 1 });
          expect(await deliverUntilDone(records, store, publisher, batchSize)).toEqual([]);
          const published = await reader.poll();
          for (const m of published) {
            const body = m.body as unknown as {
              type: string;
              task: { service: string; appKey: string; status: string };
            };
            expect(m.attributes).toEqual({
              service: body.task.service,
              type: body.type,
              appKey: body.task.appKey,
              status: body.task.status,
            });
          }
          const check = await expectBetweenMustAndMay(expected, published);
          judged += check.distinct;
          // Every callback delivered again, now that all are in: each id is republished at one time.
          expect(await deliverUntilDone(records, store, publisher, batchSize)).toEqual([]);
          expect(republishedAtAnotherTime((await reader.poll()).map((m) => m.body as unknown as TaskEvent))).toEqual(
            [],
          );
        },
      ),
      { numRuns: RUNS },
    );
    expect(judged).toBeGreaterThan(RUNS);
  },
);

describe('faults: the worker dies after each write, SNS refuses publishes for a while, then redelivery', () => {
  const sample = fc.sample(
    fc
      .tuple(recordingLifecycle(), screenshotLifecycle())
      .chain((ls) => fc.tuple(fc.constant(ls as Lifecycle[]), interleavedDeliveries(ls, { maxExtra: 3 })))
      // Big enough to hold failed uploads, retries and completion, small enough to fault every write.
      .filter(([ls, ds]) => ds.length >= 14 && ds.length <= 24 && ls.some((l) => l.bodies.some((b) => b.type === 4))),
    { numRuns: 1, seed: 15 },
  )[0]!;

  /** A publisher whose calls fail while `refusing()` says so, as SNS throttling or an outage would. */
  const refusingWhile = (real: EventPublisher, refusing: () => boolean): EventPublisher => ({
    publish: (events) =>
      refusing()
        ? Promise.reject(Object.assign(new Error('SNS refused the publish'), { name: 'ServiceUnavailable' }))
        : real.publish(events),
  });

  test('for write k across the run: every MUST event is published at least once, none outside MAY', async () => {
    // Counted as the dying run goes: the whole sample in one batch, one record at a time.
    const probe = await isolate(...sample);
    const counter = faultyClient(db.client, { failWrite: 0, when: 'after' });
    await processBatch(sqsEvent(probe.records), {
      store: new DynamoTaskStore({ client: counter.client, tableName: db.tableName, inlineKeys: 1 }),
      log,
      concurrency: 1,
      events: probe.publisher,
    });
    const total = counter.writes();
    expect(total).toBeGreaterThan(probe.records.length);
    // The sample holds the events a later callback can make false again, and a retried upload.
    expect(probe.expected.must.map((r) => r.type)).toEqual(
      expect.arrayContaining(['file.upload_failed', 'file.upload_recovered', 'file.uploaded']),
    );
    let refusedInAll = 0;
    const positions = writePositions(total, 4);

    for (const k of positions) {
      const { expected, records, publisher, reader } = await isolate(...sample);
      // Write k reaches the table, then the process is gone: nothing it sends afterwards arrives.
      const { client: dead, died } = dyingClient(db.client, { failWrite: k, when: 'after' });
      await processBatch(sqsEvent(records), {
        store: new DynamoTaskStore({ client: dead, tableName: db.tableName, inlineKeys: 1 }),
        log,
        concurrency: 1,
        events: refusingWhile(publisher, died),
      });
      expect(died()).toBe(true);

      // The whole batch comes back; SNS refuses the first few publishes of the redelivery (a different
      // number each time), so some records fail after their write and come back once more.
      let calls = 0;
      const refuseFirst = 1 + (k % 4);
      const flaky = refusingWhile(publisher, () => ++calls <= refuseFirst);
      const store = new DynamoTaskStore({ client: db.client, tableName: db.tableName, inlineKeys: 1 });
      expect(await deliverUntilDone(records.map(receivedAgain), store, flaky, 5)).toEqual([]);
      refusedInAll += Math.min(calls, refuseFirst);
      await expectBetweenMustAndMay(expected, await reader.poll());
    }
    expect(refusedInAll).toBeGreaterThan(positions.length);
  }, 300_000);
});

describe('no read of a task for its events', () => {
  test('uploads of one task in a batch read nothing back: their events carry the counts the update gave', async () => {
    const shot = JSON.parse(readFileSync(new URL('fixtures/screenshot-4-upload-ok.json', import.meta.url), 'utf8'));
    const start = JSON.parse(readFileSync(new URL('fixtures/screenshot-1-start.json', import.meta.url), 'utf8'));
    const imageId = `img-once-${++run}`;
    const images = Array.from({ length: 12 }, (_, i) => ({
      ...shot,
      imageId,
      timestamp: shot.timestamp + i * 1000,
      output: { ...shot.output, fileName: `image-${i}.jpg` },
    }));
    let queries = 0;
    let headerWrites = 0;
    const client = new Proxy(db.client, {
      get(target, prop, receiver) {
        if (prop !== 'send') return Reflect.get(target, prop, receiver);
        const send = Reflect.get(target, prop, receiver) as (c: unknown) => Promise<unknown>;
        return (command: { constructor: { name: string }; input: { Key?: any; Item?: any } }) => {
          const name = command.constructor.name;
          if (name === 'QueryCommand') queries += 1;
          const sk = String((command.input.Key ?? command.input.Item)?.sk?.S ?? '');
          if ((name === 'UpdateItemCommand' || name === 'PutItemCommand') && sk.startsWith('H#')) headerWrites += 1;
          return send.call(target, command);
        };
      },
    });
    const published: TaskEvent[] = [];
    // From a queue of ordered groups: each record has its sequence number.
    const records = [{ ...start, imageId }, ...images].map((b, i) =>
      sqsRecord('screenshot', JSON.stringify(b), { sequenceNumber: String(10n ** 19n + BigInt(i)) }),
    );
    const res = await processBatch(sqsEvent(records), {
      store: new DynamoTaskStore({ client, tableName: db.tableName }),
      log,
      concurrency: 4,
      events: { publish: async (events) => void published.push(...events) },
    });
    expect(res.batchItemFailures).toEqual([]);
    expect(queries).toBe(0);
    // One write of the header for the task's 13 records: the start's put, held, carries their counts (and
    // the time the task completes, when it does).
    expect(headerWrites).toBe(1);
    const uploaded = published.filter((e) => e.type === 'file.uploaded');
    expect(uploaded.map((e) => e.file!.fileName).sort()).toEqual(images.map((b) => b.output.fileName).sort());
    for (const e of published)
      expect(e.task.files).toEqual({ total: 12, pending: 0, uploaded: 12, failed: 0, lost: 0 });
    // Each event once: the ids of one batch are not published twice.
    expect(new Set(published.map((e) => e.id)).size).toBe(published.length);
  });
});

describe('a file whose keys are on items of their own', () => {
  test('a join written by a delivery that stopped before recording its key: the redelivery publishes', async () => {
    const read = (name: string) => JSON.parse(readFileSync(new URL(`fixtures/${name}`, import.meta.url), 'utf8'));
    const shot = read('screenshot-4-upload-ok.json');
    const imageId = `img-join-${++run}`;
    const failed = { ...shot, imageId, code: 500, output: { ...shot.output, fileState: '1', fileMsg: 'down' } };
    const ok = { ...shot, imageId, timestamp: shot.timestamp + 10_000 };
    // Key items refused once, before they reach the table: the join is written, the key is not.
    let refuse = true;
    const client = new Proxy(db.client, {
      get(target, prop, receiver) {
        if (prop !== 'send') return Reflect.get(target, prop, receiver);
        const send = Reflect.get(target, prop, receiver) as (c: unknown) => Promise<unknown>;
        return (command: { input: { Item?: { sk?: { S?: string } } } }) => {
          if (refuse && command.input.Item?.sk?.S?.includes('#K#')) {
            refuse = false;
            return Promise.reject(Object.assign(new Error('refused'), { name: 'InternalServerError' }));
          }
          return send.call(target, command);
        };
      },
    });
    const published: TaskEvent[] = [];
    const deps = {
      store: new DynamoTaskStore({ client, tableName: db.tableName, inlineKeys: 1 }),
      log,
      events: { publish: async (events: readonly TaskEvent[]) => void published.push(...events) },
    };
    const deliver = (body: object) => processBatch(sqsEvent([sqsRecord('screenshot', JSON.stringify(body))]), deps);
    expect((await deliver(failed)).batchItemFailures).toEqual([]);
    expect(published.map((e) => e.type)).toEqual(['file.upload_failed']);
    expect((await deliver(ok)).batchItemFailures).toHaveLength(1);
    expect(refuse).toBe(false);
    expect((await deliver(ok)).batchItemFailures).toEqual([]);
    expect(published.map((e) => e.type).sort()).toEqual([
      'file.upload_failed',
      'file.upload_recovered',
      'file.uploaded',
    ]);
  });
});

describe('a republished event carries the time of the callback that made it true', () => {
  test('a start delivered again republishes task.completed as first published: same id, same time', async () => {
    const read = (name: string) => JSON.parse(readFileSync(new URL(`fixtures/${name}`, import.meta.url), 'utf8'));
    const recordId = `rec-again-${++run}`;
    const start = { ...read('recording-1-start-mix.json'), recordId };
    const slice = { ...read('recording-2-slice.json'), recordId };
    const sliceUpload = { ...read('recording-4-upload-ok.json'), recordId };
    const end = { ...read('recording-3-end.json'), recordId };
    const endUpload = {
      ...sliceUpload,
      timestamp: end.timestamp + 30_000,
      output: { ...sliceUpload.output, fileName: end.output.fileName },
    };
    const published: TaskEvent[] = [];
    const deps = {
      store: new DynamoTaskStore({ client: db.client, tableName: db.tableName }),
      log,
      events: { publish: async (events: readonly TaskEvent[]) => void published.push(...events) },
    };
    for (const body of [start, slice, sliceUpload, end, endUpload, start]) {
      const res = await processBatch(sqsEvent([sqsRecord('recording', JSON.stringify(body))]), deps);
      expect(res.batchItemFailures).toEqual([]);
    }
    const completions = published.filter((e) => e.type === 'task.completed');
    expect(completions.map((e) => [e.id, e.occurredAt])).toEqual([
      [completions[0]!.id, endUpload.timestamp],
      [completions[0]!.id, endUpload.timestamp],
    ]);
    // The same event, read off a later version of the task: only its sequence has grown.
    const { sequence: first, ...firstBody } = completions[0]!;
    const { sequence: again, ...againBody } = completions[1]!;
    expect(againBody).toEqual(firstBody);
    expect(again).toBeGreaterThan(first);
  });
});
