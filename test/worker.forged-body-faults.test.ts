// Forged bodies under a genuine signature's values, claimed at the ingest (handleCallbackRequest against a FIFO queue
// in fauxqs and a table in dynalite), then met by the worker in either order while DynamoDB refuses a write or loses
// its answer (the batch retried by the same warm worker), or keeps refusing until the last receive, after which the
// dead letter is redriven as `callbacks dlq redrive` sends it. docs/contract.md §6: of the bodies under one signature
// the first the ingest received is applied, whatever order the worker meets them in; another body is set aside as
// `replayed_signature` and applied to no task.
import type { APIGatewayProxyEventV2, SQSRecord } from 'aws-lambda';
import { httpApiEvent } from './reliability/support/http-events.ts';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { startFauxqs, type FauxqsServer } from 'fauxqs';
import { createActiveTable, type LocalDynamo, startDynamo } from '../devkit/local/dynamo.ts';
import { DynamoTaskStore } from '../lib/aws/dynamo/read/task-store.ts';
import { tableDefinition } from '../lib/aws/dynamo/table/table.ts';
import { buildIngestDependencies } from '../lib/ingest/config.ts';
import { createSqsClient } from '../lib/ingest/enqueue.ts';
import { handleCallbackRequest } from '../lib/ingest/handle-request.ts';
import type { Logger } from '../lib/log.ts';
import { computeSignature } from '../lib/platform/signing.ts';
import { processBatch } from '../lib/worker/process-batch.ts';
import { drainQueue, redriven } from './support/sqs-events.ts';

const APP = 'demo-app';
const SECRET = 'forged-secret-7a2c';
const MAX_RECEIVES = 3;
const credentials = { accessKeyId: 'test', secretAccessKey: 'test' };
const silent: Logger = { debug() {}, info() {}, warn() {}, error() {} };

let fauxqs: FauxqsServer;
let sqs: SQSClient;
let queueUrl: string;
let db: LocalDynamo;
let tableName: string;
let tables = 0;

beforeAll(async () => {
  fauxqs = await startFauxqs({ port: 0, logger: false });
  sqs = createSqsClient({ region: 'us-east-1', endpoint: `http://127.0.0.1:${fauxqs.port}`, credentials });
  db = await startDynamo('forged-0');
});

afterAll(async () => {
  sqs.destroy();
  await fauxqs.stop();
  await db.stop();
});

beforeEach(async () => {
  fauxqs.reset();
  queueUrl = fauxqs.createQueue('forged.fifo', { attributes: { FifoQueue: 'true' } }).queueUrl;
  tableName = `forged-${++tables}`;
  await createActiveTable(db.client, tableDefinition(tableName));
});

function ingest() {
  return buildIngestDependencies(
    {
      QUEUE_URL: queueUrl,
      SIGNATURE_MODE: 'enforce',
      DEVELOPMENT_STAGE: 'true',
      CALLBACK_SECRETS: JSON.stringify({ [APP]: [SECRET] }),
      TASKS_TABLE: tableName,
    },
    { sqs, dynamo: db.client, logger: silent },
  );
}

let requests = 0;
/** A request to the recording route, received now. */
function request(body: string, headers: Record<string, string>): APIGatewayProxyEventV2 {
  const received = { body, requestId: `forged-req-${++requests}`, now: Date.now() };
  return httpApiEvent({ ...received, headers: { 'content-type': 'application/json', ...headers } });
}

/** Every message the queue holds, in the order of its receives. */
const receiveAll = () => drainQueue(sqs, queueUrl, 'arn:aws:sqs:us-east-1:000000000000:forged.fifo');

type Fault = 'refused' | 'lost-answer';

/** The client, whose writes numbered in `failAt` (1-based, counted from now) fail as `fault` says. */
function failing(client: DynamoDBClient, failAt: ReadonlySet<number>, fault: Fault) {
  let writes = 0;
  return new Proxy(client, {
    get(target, prop, receiver) {
      if (prop !== 'send') return Reflect.get(target, prop, receiver);
      const send = Reflect.get(target, prop, receiver) as (c: unknown) => Promise<unknown>;
      return async (command: { constructor: { name: string } }) => {
        const name = command.constructor.name;
        if (name !== 'PutItemCommand' && name !== 'UpdateItemCommand' && name !== 'BatchWriteItemCommand')
          return send.call(target, command);
        writes += 1;
        if (!failAt.has(writes)) return send.call(target, command);
        if (fault === 'lost-answer') await send.call(target, command);
        throw Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), {
          name: 'ProvisionedThroughputExceededException',
        });
      };
    },
  }) as DynamoDBClient;
}

let tasks = 0;
function start(id: string, extra: Record<string, unknown> = {}) {
  return {
    timestamp: 1763798400000 + ++tasks,
    type: 1,
    appKey: APP,
    recordId: id,
    roomId: 'room-forged',
    sessionId: 'sess-forged',
    userId: '',
    mode: 3,
    extra: '',
    code: 200,
    errorMessage: 'success',
    config: { trigger: 0 },
    output: { fileName: `${id}.mp4` },
    ...extra,
  };
}

/**
 * The genuine start and, under its signature's values, a forged body (`sameTask`: a failed end of the same task;
 * else a failed start of another), both claimed at the ingest in that order.
 */
async function claimedPair(label: string, sameTask: boolean) {
  const genuine = start(`forged-g-${label}`);
  const forged = sameTask
    ? { ...genuine, type: 3, timestamp: genuine.timestamp + 60_000, code: 500, errorMessage: 'forged failure' }
    : start(`forged-f-${label}`, { code: 500, errorMessage: 'forged failure' });
  const nonce = `forged-nonce-${label}`;
  const timestamp = String(Math.floor(Date.now() / 1000));
  const headers = {
    'RC-Nonce': nonce,
    'RC-Timestamp': timestamp,
    'RC-Signature': computeSignature(SECRET, nonce, timestamp),
  };
  const deps = ingest();
  for (const body of [genuine, forged])
    expect((await handleCallbackRequest(request(JSON.stringify(body), headers), deps)).statusCode).toBe(200);
  const records = await receiveAll();
  const g = records.find((r) => r.body === JSON.stringify(genuine))!;
  const f = records.find((r) => r.body === JSON.stringify(forged))!;
  expect([g, f].every(Boolean)).toBe(true);
  return { genuine, forged, g, f };
}

/**
 * Each record alone, in `order`, through a warm worker whose writes fail as planned; what fails comes again to the
 * same worker with its receive count grown, and after its last receive is redriven. Returns the redrives made.
 */
async function deliver(order: SQSRecord[], failAt: ReadonlySet<number>, fault: Fault) {
  const store = new DynamoTaskStore({ client: failing(db.client, failAt, fault), tableName });
  let redrives = 0;
  let sequence = 10n ** 19n + 9_300_000n;
  for (const first of order) {
    let record = first;
    for (let round = 0; round < 12; round++) {
      const res = await processBatch({ Records: [record] }, { store, log: silent, maxReceiveCount: MAX_RECEIVES });
      if (res.batchItemFailures.length === 0) break;
      const count = Number(record.attributes.ApproximateReceiveCount);
      if (count >= MAX_RECEIVES) {
        record = redriven(record, String(++sequence));
        redrives += 1;
      } else record = { ...record, attributes: { ...record.attributes, ApproximateReceiveCount: String(count + 1) } };
    }
  }
  return redrives;
}

async function expectFirstReceivedWins(genuine: ReturnType<typeof start>, forged: Record<string, any>) {
  const store = new DynamoTaskStore({ client: db.client, tableName });
  const task = await store.getTask(genuine.recordId);
  expect([task?.status, task?.eventCount, task?.lastError, task?.endedAt]).toEqual(['recording', 1, null, null]);
  if (forged.recordId !== genuine.recordId) expect(await store.getTask(forged.recordId)).toBeNull();
  const entries = [];
  for await (const e of store.listQuarantine({ sinceDays: 2 })) entries.push(e);
  expect([...new Set(entries.map((e) => `${e.reason} ${e.raw}`))]).toEqual([
    `replayed_signature ${JSON.stringify(forged)}`,
  ]);
}

const cases: [string, boolean, 'genuine-first' | 'forged-first', number[], Fault][] = [];
for (const sameTask of [false, true])
  for (const order of ['genuine-first', 'forged-first'] as const)
    for (const fault of ['refused', 'lost-answer'] as const)
      for (const failAt of [[], [1], [2], [3], [1, 2], [2, 3], [1, 2, 3, 4, 5, 6]])
        cases.push([sameTask ? 'same task' : 'another task', sameTask, order, failAt, fault]);

test.each(cases)(
  'forged body of %s, %s, writes %j %s: the genuine applied, the forged set aside',
  async (_what, sameTask, order, failAt, fault) => {
    const label = `${sameTask ? 's' : 'o'}-${order[0]}-${fault[0]}-${failAt.join('')}`;
    const { genuine, forged, g, f } = await claimedPair(label, sameTask);
    await deliver(order === 'genuine-first' ? [g, f] : [f, g], new Set(failAt), fault);
    await expectFirstReceivedWins(genuine, forged);
  },
);

test.each(['refused', 'lost-answer'] as const)(
  'every write %s until the last receive: both redriven as dlq redrive sends them, first received still wins',
  async (fault) => {
    const { genuine, forged, g, f } = await claimedPair(`dlq-${fault}`, true);
    // Every write of the first three receives of each fails: each record dies at its last receive and is redriven.
    const failAll = new Set(Array.from({ length: 40 }, (_, i) => i + 1));
    const store = new DynamoTaskStore({ client: failing(db.client, failAll, fault), tableName });
    const dead: SQSRecord[] = [];
    for (const first of [f, g]) {
      for (let count = 1; count <= MAX_RECEIVES; count++) {
        const record = { ...first, attributes: { ...first.attributes, ApproximateReceiveCount: String(count) } };
        const res = await processBatch({ Records: [record] }, { store, log: silent, maxReceiveCount: MAX_RECEIVES });
        expect(res.batchItemFailures).toHaveLength(1);
        if (count === MAX_RECEIVES) dead.push(record);
      }
    }
    // The dead letters back, the forged one first, on a worker whose writes land.
    let sequence = 10n ** 19n + 9_400_000n;
    const healthy = new DynamoTaskStore({ client: db.client, tableName });
    for (const record of dead) {
      const res = await processBatch(
        { Records: [redriven(record, String(++sequence))] },
        { store: healthy, log: silent, maxReceiveCount: MAX_RECEIVES },
      );
      expect(res.batchItemFailures).toEqual([]);
    }
    await expectFirstReceivedWins(genuine, forged);
  },
);
