// What the task store's layout (docs/task-store.md) could get wrong, against dynalite: a task of one appKey
// changed by another appKey's callbacks; reads that answer with an older item; keys handed to BatchGetItem
// twice; overflow items of a file with many attempts.
import { BatchGetItemCommand, GetItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { readFileSync } from 'node:fs';
import type { SQSRecord } from 'aws-lambda';
import { itemSize } from 'dynalite/db/index.js';
import fc from 'fast-check';
import { DynamoTaskStore } from '../lib/aws/dynamo/read/task-store.ts';
import { TableClient, noCapacity } from '../lib/aws/dynamo/table/table-client.ts';
import { Keys } from '../lib/aws/dynamo/table/table.ts';
import { MAX_ITEM_BYTES, itemBytes } from '../lib/aws/dynamo/table/limits.ts';
import { eventKey } from '../lib/domain/canonical.ts';
import { reduceTask } from '../lib/domain/reduce-task.ts';
import { AmbiguousTaskError } from '../lib/domain/task-store.ts';
import { createLogger } from '../lib/log.ts';
import { processBatch } from '../lib/worker/process-batch.ts';
import { staleReads } from './support/stale-client.ts';
import { receivedAgain, sqsEvent, sqsRecord } from './support/sqs-events.ts';
import {
  anyLifecycles,
  callbacksOf,
  interleavedDeliveries,
  mustParse,
  type Body,
  type Delivery,
  type Lifecycle,
} from './support/lifecycles.ts';
import { FULL_DAY_ATTEMPTS, manyAttemptsProblems } from './support/many-attempts.ts';
import { sized } from './support/size.ts';
import { useQuietDynamo } from './support/quiet-dynamo.ts';

const local = useQuietDynamo();
const log = createLogger('test');

let run = 0;
const idField = (service: string) => (service === 'recording' ? 'recordId' : 'imageId');
/** Task ids of the run's own, and bodies under another appKey if asked. */
function renamed(body: Body, service: string, prefix: string, appKey?: string): Body {
  const field = idField(service);
  return { ...body, [field]: prefix + String(body[field]), ...(appKey ? { appKey } : {}) };
}

async function deliverUntilDone(records: SQSRecord[], store: DynamoTaskStore, batchSize: number) {
  let pending = records;
  for (let round = 0; pending.length && round < 30; round++) {
    const failed: SQSRecord[] = [];
    for (let i = 0; i < pending.length; i += batchSize) {
      const batch = pending.slice(i, i + batchSize);
      const res = await processBatch(sqsEvent(batch), { store, log, concurrency: 4 });
      const ids = new Set(res.batchItemFailures.map((f) => f.itemIdentifier));
      failed.push(...batch.filter((r) => ids.has(r.messageId)).map(receivedAgain));
    }
    pending = failed;
  }
  return pending;
}

// ---------------------------------------------------------------------------------------------------

describe('a task belongs to one appKey', () => {
  test(
    "another appKey's callbacks with the same ids make tasks of their own, each equal to the fold of its " + 'own',
    async () => {
      await fc.assert(
        fc.asyncProperty(
          anyLifecycles({ maxLength: 2 }).chain((ls) => fc.tuple(fc.constant(ls), interleavedDeliveries(ls))),
          fc.integer({ min: 1, max: 8 }),
          async ([lifecycles, deliveries], batchSize) => {
            const prefix = `iso${++run}-`;
            // The intruder sends every callback of each task again under its appKey, with an earlier
            // timestamp and another room: were tasks keyed by id alone, its start would win the identity.
            const intruder = (d: Delivery): Delivery => ({
              service: d.service,
              body: {
                ...renamed(d.body, d.service, prefix, 'intruder-app'),
                timestamp: Number(d.body.timestamp) - 60_000,
                roomId: 'room-of-the-intruder',
              },
            });
            const own = deliveries.map((d) => ({ service: d.service, body: renamed(d.body, d.service, prefix) }));
            const mixed = own.flatMap((d, i) => [d, intruder(deliveries[i]!)]);
            const store = new DynamoTaskStore({ client: local.db.client, tableName: local.db.tableName });
            const left = await deliverUntilDone(
              mixed.map((d) => sqsRecord(d.service, d.body)),
              store,
              batchSize,
            );
            expect(left).toEqual([]);
            for (const l of lifecycles) {
              const id = prefix + l.id;
              const mine = l.bodies.map((b) => mustParse(l.service, renamed(b, l.service, prefix)));
              const theirs = deliveries
                .filter((d) => d.body[idField(d.service)] === l.id)
                .map((d) => mustParse(d.service, intruder(d).body));
              const appKey = mine[0]!.appKey;
              expect(await store.getTask(id, appKey)).toEqual(reduceTask(mine));
              expect(await store.getTask(id, 'intruder-app')).toEqual(reduceTask(theirs));
              expect((await store.listEvents(id, appKey)).map((e) => e.key).sort()).toEqual(
                [...new Set(mine.map((c) => c.key))].sort(),
              );
              // By id alone, the store says which appKeys have a task with it rather than choosing one.
              const ambiguous = await store.getTask(id).catch((err: unknown) => err);
              expect(ambiguous).toBeInstanceOf(AmbiguousTaskError);
              expect((ambiguous as AmbiguousTaskError).appKeys).toEqual([appKey, 'intruder-app'].sort());
            }
            const listed = [];
            for await (const s of store.listTasks({ appKey: 'intruder-app', since: 0 })) listed.push(s);
            expect(
              listed.filter((s) => s.id.startsWith(prefix)).every((s) => s.roomId === 'room-of-the-intruder'),
            ).toBe(true);
          },
        ),
        { numRuns: 12 },
      );
    },
  );
});

// ---------------------------------------------------------------------------------------------------

describe('reads that answer with an older item', () => {
  /** A few lifecycles and their deliveries, shuffled and duplicated, drawn from a seed. */
  const sampleRun = (seed: number) =>
    fc.sample(
      anyLifecycles({ minLength: 2, maxLength: 3 }).chain((ls) =>
        fc.tuple(fc.constant(ls), interleavedDeliveries(ls, { maxExtra: 6 })),
      ),
      { numRuns: 1, seed },
    )[0]!;

  /** Read back through a fresh store: each task the fold of its callbacks, its raw callbacks each once. */
  async function expectFolded(lifecycles: readonly Lifecycle[], prefix: string) {
    const fresh = new DynamoTaskStore({ client: local.db.client, tableName: local.db.tableName });
    for (const l of lifecycles) {
      const callbacks = callbacksOf({ ...l, bodies: l.bodies.map((b) => renamed(b, l.service, prefix)) });
      expect(await fresh.getTask(prefix + l.id)).toEqual(reduceTask(callbacks));
      expect((await fresh.listEvents(prefix + l.id)).length).toBe(new Set(callbacks.map((c) => c.key)).size);
    }
  }

  /** Lifecycles delivered through a client whose reads are stale, then read back through a fresh one. */
  async function deliverThroughStaleReads(seed: number, strong: boolean) {
    const [lifecycles, deliveries] = sampleRun(seed);
    const prefix = `stale${++run}-`;
    let state = seed;
    // A seeded generator: a failure can be replayed.
    const random = () => {
      state = (state * 1103515245 + 12345) % 2147483648;
      return state / 2147483648;
    };
    const stale = staleReads(local.db.client, { chance: 0.4, strong, random });
    const store = new DynamoTaskStore({
      client: stale.client,
      tableName: local.db.tableName,
      inlineKeys: 2,
      knownHeaders: 0,
    });
    const records = deliveries.map((d) => sqsRecord(d.service, renamed(d.body, d.service, prefix)));
    expect(await deliverUntilDone(records, store, 5)).toEqual([]);
    await expectFolded(lifecycles, prefix);
    return stale.staleAnswers();
  }

  test.each([2, 3, 4, 9])(
    'eventually consistent reads answering with older items (seed %i): state equals the fold, counts exact',
    async (seed) => {
      expect(await deliverThroughStaleReads(seed, false)).toBeGreaterThan(0);
    },
  );

  test.each([5, 6, 7, 8])(
    'even strongly consistent reads answering with older items (seed %i): the versioned puts keep it exact',
    async (seed) => {
      expect(await deliverThroughStaleReads(seed, true)).toBeGreaterThan(0);
    },
  );

  test.each([11, 12, 13])(
    'workers whose copies of a file another worker has overtaken (seed %i): state equals the fold, counts exact',
    async (seed) => {
      const [lifecycles, deliveries] = sampleRun(seed);
      const prefix = `copies${++run}-`;
      // File puts refused because the version a worker expected was no longer the item's.
      let overtaken = 0;
      const client = Object.create(local.db.client) as typeof local.db.client;
      client.send = (async (command: { input: { Item?: { sk?: { S?: string } } } }) => {
        try {
          return await (local.db.client.send as (c: unknown) => Promise<unknown>)(command);
        } catch (err) {
          if ((err as Error).name === 'ConditionalCheckFailedException' && command.input.Item?.sk?.S?.startsWith('P#'))
            overtaken += 1;
          throw err;
        }
      }) as typeof local.db.client.send;
      // Three workers, each remembering the files it wrote; batches of two go to each in turn, and every
      // record is delivered again, to another worker, once all have been.
      const workers = [0, 1, 2].map(
        () => new DynamoTaskStore({ client, tableName: local.db.tableName, inlineKeys: 2 }),
      );
      const records = deliveries.map((d) => sqsRecord(d.service, renamed(d.body, d.service, prefix)));
      for (const pass of [0, 1]) {
        for (let i = 0; i < records.length; i += 2) {
          const worker = workers[(i / 2 + pass) % workers.length]!;
          expect(await deliverUntilDone(records.slice(i, i + 2), worker, 2)).toEqual([]);
        }
      }
      await expectFolded(lifecycles, prefix);
      expect(overtaken).toBeGreaterThan(0);
    },
  );
});

// ---------------------------------------------------------------------------------------------------

describe('BatchGetItem', () => {
  test('a key asked for twice goes out once: DynamoDB refuses a request that names one key twice', async () => {
    // dynalite accepts duplicates; DynamoDB answers ValidationException. This client answers as DynamoDB does.
    const strict = new Proxy(local.db.client, {
      get(target, prop, receiver) {
        if (prop !== 'send') return Reflect.get(target, prop, receiver);
        return (command: unknown) => {
          if (command instanceof BatchGetItemCommand) {
            for (const request of Object.values(command.input.RequestItems ?? {})) {
              const keys = (request.Keys ?? []).map((k) => JSON.stringify(k));
              if (new Set(keys).size !== keys.length)
                throw Object.assign(new Error('Provided list of item keys contains duplicates'), {
                  name: 'ValidationException',
                });
            }
          }
          return (target.send as (c: unknown) => Promise<unknown>)(command);
        };
      },
    }) as DynamoDBClient;
    const table = new TableClient(strict, local.db.tableName);
    const a = { pk: 'TEST#dup', sk: 'a' };
    const b = { pk: 'TEST#dup', sk: 'b' };
    await table.put({ ...a, v: 1 }, noCapacity());
    await table.put({ ...b, v: 2 }, noCapacity());
    const found = await table.getMany([a, b, a, { pk: 'TEST#dup', sk: 'none' }, b], noCapacity());
    expect(found.map((item) => item?.v ?? null)).toEqual([1, 2, 1, null, 2]);
  });
});

// ---------------------------------------------------------------------------------------------------

/** Every item under a task partition, with its size as DynamoDB counts it. */
describe('a file with many attempts', () => {
  // 300 attempts in npm test: well past the file item's inline keys, duplicates and two writers contending, in
  // seconds. The full day of 8,640 (the task then read over several pages) with npm run soak -- --sized-tests.
  const attempts = sized(300, FULL_DAY_ATTEMPTS);
  const title = `${attempts} failed uploads of one image, some twice, in any order: attempts exact, every item small`;
  test(title, async () => {
    const problems = await manyAttemptsProblems({
      client: local.db.client,
      tableName: local.db.tableName,
      attempts,
      imageId: 'img-outage',
    });
    expect(problems).toEqual([]);
  }, 1_800_000);
});

describe('a refused recording end leaves nothing behind', () => {
  const fixture = (name: string): Body =>
    JSON.parse(readFileSync(new URL(`fixtures/${name}`, import.meta.url), 'utf8')) as Body;
  const recordingEnd = fixture('recording-3-end.json');
  const screenshotStart = fixture('screenshot-1-start.json');
  const screenshotEnd = fixture('screenshot-3-end.json');
  const imageOk = fixture('screenshot-4-upload-ok.json');
  const table = () => new TableClient(local.db.client, local.db.tableName);
  const quarantined = async (store: DynamoTaskStore, id: string) => {
    const reasons: string[] = [];
    for await (const e of store.listQuarantine({ sinceDays: 3650, taskId: id })) reasons.push(e.reason);
    return reasons;
  };

  test('service_mismatch race: another service starts the id before the end writes: no file of the end', async () => {
    const id = `race${++run}`;
    const appKey = String(recordingEnd.appKey);
    const fileName = String((recordingEnd.output as Body).fileName);
    const other = new DynamoTaskStore({ client: local.db.client, tableName: local.db.tableName });
    const otherStart = { ...screenshotStart, imageId: id, appKey };
    // The screenshot start lands between the end's reads and its first write to the task.
    let raced = false;
    const send = local.db.client.send.bind(local.db.client) as (command: any) => Promise<any>;
    const client = new Proxy(local.db.client, {
      get(target, prop, receiver) {
        if (prop !== 'send') return Reflect.get(target, prop, receiver);
        return async (command: any) => {
          if (!raced && command?.constructor?.name === 'PutItemCommand' && command.input.Item?.pk?.S === `TASK#${id}`) {
            raced = true;
            const res = await processBatch(sqsEvent([sqsRecord('screenshot', otherStart)]), { store: other, log });
            expect(res.outcomes).toEqual(['applied']);
          }
          return send(command);
        };
      },
    }) as DynamoDBClient;
    const store = new DynamoTaskStore({ client, tableName: local.db.tableName });
    const res = await processBatch(sqsEvent([sqsRecord('recording', { ...recordingEnd, recordId: id })]), {
      store,
      log,
    });
    expect(raced).toBe(true);
    expect(res.outcomes).toEqual(['quarantined']);
    expect(await quarantined(store, id)).toEqual(['service_mismatch']);
    expect(await table().get({ pk: Keys.taskPk(id), sk: Keys.fileSk(appKey, fileName) }, noCapacity())).toBeNull();

    // The screenshot task's own end and image complete it: no file of the refused end holds it back.
    const image = { ...imageOk, imageId: id, appKey };
    const rest = [image, { ...screenshotEnd, imageId: id, appKey }].map((b) => sqsRecord('screenshot', b));
    expect((await processBatch(sqsEvent(rest), { store: other, log })).outcomes).toEqual(['applied', 'applied']);
    const task = await other.getTask(id, appKey);
    expect(task?.files.map((f) => f.fileName)).toEqual([String((imageOk.output as Body).fileName)]);
    expect(task?.status).toBe('completed');
    // The refused end's delivery is not among the task's callbacks: only the three it recorded are listed.
    const recordedKeys = [otherStart, image, { ...screenshotEnd, imageId: id, appKey }].map((b) => eventKey(b));
    expect((await other.listEvents(id, appKey)).map((e) => e.key).sort()).toEqual(recordedKeys.sort());
  });

  test('oversized header: an end that would make the header too big for DynamoDB leaves no file', async () => {
    const n = ++run;
    const appKey = String(recordingEnd.appKey);
    const store = new DynamoTaskStore({ client: local.db.client, tableName: local.db.tableName });
    // Its room and session are in the header twice (as fields and index keys), once in the body: the header
    // outgrows the delivery, which holds the raw body.
    const [roomId, sessionId] = ['r'.repeat(2000), 's'.repeat(2000)];
    // The header's extra and config are clipped (lib/domain/header-text.ts): a long userId grows it instead.
    const slice = (id: string, userId: string): Body => ({
      ...fixture('recording-2-slice.json'),
      recordId: id,
      roomId,
      sessionId,
      userId,
    });
    const deliver = async (bodies: Body[]) =>
      (await processBatch(sqsEvent(bodies.map((b) => sqsRecord('recording', b))), { store, log })).outcomes;
    // A task of the same id length measures the header a slice makes; the slice of the task under test
    // then brings a userId that leaves its header a few bytes short of DynamoDB's limit, which the end's own
    // facts (its rank, time and key) overflow.
    const probe = `bigP${n}`;
    expect(await deliver([slice(probe, 'x'.repeat(1000))])).toEqual(['applied']);
    const raw = await local.db.client.send(
      new GetItemCommand({
        TableName: local.db.tableName,
        Key: marshall({ pk: Keys.taskPk(probe), sk: Keys.headerSk(appKey) }),
      }),
    );
    const probeBytes = itemSize(raw.Item!);
    expect(itemBytes(raw.Item!)).toBeGreaterThanOrEqual(probeBytes);
    const id = `bigT${n}`;
    const bigSlice = slice(id, 'x'.repeat(1000 + MAX_ITEM_BYTES - probeBytes - 40));
    const sliceFile = String((bigSlice.output as Body).fileName);
    const t0 = Number(bigSlice.timestamp);
    const refusedEnd = {
      ...recordingEnd,
      recordId: id,
      timestamp: t0 + 1,
      output: { fileName: 'refused.mp4', fileSize: 1 },
    };
    const upload = (fileName: string, timestamp: number) => {
      const ok = fixture('recording-4-upload-ok.json');
      return { ...ok, recordId: id, timestamp, output: { ...(ok.output as Body), fileName } };
    };

    expect(await deliver([bigSlice])).toEqual(['applied']);
    expect(await deliver([refusedEnd])).toEqual(['quarantined']);
    expect(await quarantined(store, id)).toEqual(['invalid_callback']);
    const refusedFile = { pk: Keys.taskPk(id), sk: Keys.fileSk(appKey, 'refused.mp4') };
    expect(await table().get(refusedFile, noCapacity())).toBeNull();

    // The genuine end comes once the header is smaller again: the platform never sends such a userId, but
    // a later start (its identity wins) stands for whatever makes the task storable.
    const start = { ...fixture('recording-1-start-single.json'), recordId: id, timestamp: t0 - 60_000 };
    const genuineEnd: Body = { ...recordingEnd, recordId: id, timestamp: t0 + 2 };
    const genuineFile = String((genuineEnd.output as Body).fileName);
    expect(await deliver([start])).toEqual(['applied']);
    expect(await deliver([upload(sliceFile, t0 + 10), genuineEnd, upload(genuineFile, t0 + 20)])).toEqual([
      'applied',
      'applied',
      'applied',
    ]);
    const task = await store.getTask(id, appKey);
    expect(task?.files.map((f) => f.fileName).sort()).toEqual([genuineFile, sliceFile].sort());
    expect(task?.status).toBe('completed');
  });
});
