// The replay claim, made by the ingest before SendMessage (docs/signatures-and-quarantine.md, "Replays"): the ingest's
// handler against a FIFO queue in fauxqs and a table in dynalite, the messages it enqueued read back as the event
// source mapping hands them over (group, sequence number, attributes), then the worker's processBatch on them in
// whatever order a test needs. Of the bodies sent under one signature, the first the ingest received is applied,
// whichever the worker meets first; the others are set aside as `replayed_signature`, in a message group apart.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { drainQueue, receiveOnce } from './support/sqs-events.ts';
import type { APIGatewayProxyEventV2, SQSRecord } from 'aws-lambda';
import { httpApiEvent } from './reliability/support/http-events.ts';
import { startFauxqs, type FauxqsServer } from 'fauxqs';
import { createActiveTable, dynamoClient, type LocalDynamo, startDynamo } from '../devkit/local/dynamo.ts';
import { bodyRefOf } from '../lib/aws/dynamo/table/items.ts';
import { DynamoTaskStore } from '../lib/aws/dynamo/read/task-store.ts';
import { Keys, tableDefinition } from '../lib/aws/dynamo/table/table.ts';
import { setAsideGroupId, taskGroupId } from '../lib/fifo-ids.ts';
import { buildIngestDependencies } from '../lib/ingest/config.ts';
import { createSqsClient } from '../lib/ingest/enqueue.ts';
import { handleCallbackRequest } from '../lib/ingest/handle-request.ts';
import type { IngestResponse } from '../lib/http-responses.ts';
import type { Logger } from '../lib/log.ts';
import { computeSignature } from '../lib/platform/signing.ts';
import type { Service } from '../lib/platform/services.ts';
import { Attr } from '../lib/queue-message.ts';
import type { SignatureMode } from '../lib/signature/verdicts.ts';
import { processBatch } from '../lib/worker/process-batch.ts';

const APP = 'demo-app';
const SECRET = 'claim-secret-5e1f';
const credentials = { accessKeyId: 'test', secretAccessKey: 'test' };
const silent: Logger = { debug() {}, info() {}, warn() {}, error() {} };

let fauxqs: FauxqsServer;
let sqs: SQSClient;
let queueUrl: string;
let db: LocalDynamo;
/** A table of its own for each test. */
let tableName: string;
let tables = 0;
let store: DynamoTaskStore;

beforeAll(async () => {
  fauxqs = await startFauxqs({ port: 0, logger: false });
  sqs = createSqsClient({ region: 'us-east-1', endpoint: `http://127.0.0.1:${fauxqs.port}`, credentials });
  queueUrl = fauxqs.createQueue('claims.fifo', { attributes: { FifoQueue: 'true' } }).queueUrl;
  db = await startDynamo('claims-0');
});

afterAll(async () => {
  sqs.destroy();
  await fauxqs.stop();
  await db.stop();
});

beforeEach(async () => {
  fauxqs.reset();
  queueUrl = fauxqs.createQueue('claims.fifo', { attributes: { FifoQueue: 'true' } }).queueUrl;
  tableName = `claims-${++tables}`;
  await createActiveTable(db.client, tableDefinition(tableName));
  store = new DynamoTaskStore({ client: db.client, tableName });
});

function ingest(options: { mode?: SignatureMode; dynamo?: DynamoDBClient; env?: Record<string, string> } = {}) {
  return buildIngestDependencies(
    {
      QUEUE_URL: queueUrl,
      SIGNATURE_MODE: options.mode ?? 'enforce',
      DEVELOPMENT_STAGE: 'true',
      CALLBACK_SECRETS: JSON.stringify({ [APP]: [SECRET] }),
      TASKS_TABLE: tableName,
      ...options.env,
    },
    { sqs, dynamo: options.dynamo ?? db.client, logger: silent },
  );
}

let requests = 0;

/** A request to the callback route of `service`, received now. */
function event(service: Service, body: string, headers: Record<string, string>): APIGatewayProxyEventV2 {
  const request = { path: `/callbacks/${service}`, body, requestId: `claim-req-${++requests}`, now: Date.now() };
  return httpApiEvent({ ...request, headers: { 'content-type': 'application/json', ...headers } });
}

let nonces = 0;

/** The headers of one signed request: a nonce of its own, now. */
function signed(secret = SECRET): Record<string, string> {
  const nonce = `claim-nonce-${++nonces}`;
  const timestamp = String(Math.floor(Date.now() / 1000));
  return { 'RC-Nonce': nonce, 'RC-Timestamp': timestamp, 'RC-Signature': computeSignature(secret, nonce, timestamp) };
}

async function post(
  deps: ReturnType<typeof ingest>,
  body: object | string,
  headers: Record<string, string>,
  service: Service = 'recording',
): Promise<IngestResponse> {
  return handleCallbackRequest(event(service, typeof body === 'string' ? body : JSON.stringify(body), headers), deps);
}

const QUEUE_ARN = 'arn:aws:sqs:us-east-1:000000000000:claims.fifo';
/** One receive of the queue, as the event source mapping makes it. */
const receive = () => receiveOnce(sqs, queueUrl, QUEUE_ARN);
/** Every message the queue holds, in the order of its receives. */
const receiveAll = () => drainQueue(sqs, queueUrl, QUEUE_ARN);

const bodyOf = (records: readonly SQSRecord[], raw: string) => records.find((r) => r.body === raw)!;

async function apply(...records: SQSRecord[]) {
  const res = await processBatch({ Records: records }, { store, log: silent, concurrency: 5 });
  expect(res.batchItemFailures).toEqual([]);
  return res.outcomes;
}

async function quarantined() {
  const entries = [];
  for await (const e of store.listQuarantine({ sinceDays: 2 })) entries.push(e);
  return entries;
}

let tasks = 0;

function start(id = `rec-claim-${++tasks}`, extra: Record<string, unknown> = {}) {
  return {
    timestamp: Date.now(),
    type: 1,
    appKey: APP,
    recordId: id,
    roomId: 'room-claim',
    sessionId: 'sess-claim',
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

/** A failed start of another task, sent with a genuine signature's values (the forged body). */
const forgedFailedStart = () => start(undefined, { code: 500, errorMessage: 'forged failure' });

describe('replay claim, first received wins: a forged body with a genuine signature reaches the worker first', () => {
  test(
    'in a batch of its own, ahead of the genuine one (another group): the genuine one is applied, the forged ' +
      'one set aside as replayed_signature',
    async () => {
      const deps = ingest();
      const genuine = start();
      const forged = forgedFailedStart();
      const headers = signed();
      expect((await post(deps, genuine, headers)).statusCode).toBe(200);
      expect((await post(deps, forged, headers)).statusCode).toBe(200);
      const records = await receiveAll();
      const genuineRecord = bodyOf(records, JSON.stringify(genuine));
      const forgedRecord = bodyOf(records, JSON.stringify(forged));
      // The replay waits in a group of its own, never in either task's.
      expect(forgedRecord.attributes.MessageGroupId).toBe(setAsideGroupId(APP, forged.recordId));
      expect(genuineRecord.attributes.MessageGroupId).toBe(taskGroupId(APP, genuine.recordId));

      // The worker meets the forged body first, as when the genuine one waits behind its group's backlog.
      expect(await apply(forgedRecord)).toEqual(['quarantined']);
      expect(await apply(genuineRecord)).toEqual(['applied']);

      expect(await store.getTask(forged.recordId)).toBeNull();
      expect((await store.getTask(genuine.recordId))?.status).toBe('recording');
      const entries = await quarantined();
      expect(entries.map((e) => [e.reason, e.taskId, e.raw])).toEqual([
        ['replayed_signature', forged.recordId, JSON.stringify(forged)],
      ]);
    },
  );

  test('within one FIFO batch, the forged record first: the genuine one applied, the forged set aside', async () => {
    const deps = ingest();
    // A genuine slice of a task, and a forged failed start of another task under the slice's signature: records
    // of different items, which the worker applies side by side.
    const task = start();
    expect((await post(deps, task, signed())).statusCode).toBe(200);
    await apply(...(await receiveAll()));
    const genuine = { ...task, type: 2, timestamp: task.timestamp + 1000, output: { fileName: 'a.mp4', fileSize: 10 } };
    const forged = forgedFailedStart();
    const headers = signed();
    await post(deps, genuine, headers);
    await post(deps, forged, headers);
    const records = await receiveAll();
    expect(await apply(bodyOf(records, JSON.stringify(forged)), bodyOf(records, JSON.stringify(genuine)))).toEqual([
      'quarantined',
      'applied',
    ]);
    expect(await store.getTask(forged.recordId)).toBeNull();
    expect((await store.getTask(task.recordId))?.files.map((f) => f.fileName)).toEqual(['a.mp4']);
    expect((await quarantined()).map((e) => [e.reason, e.taskId])).toEqual([['replayed_signature', forged.recordId]]);
  });

  test('a body the full parse refuses, received first, holds the claim: a later forged body is set aside', async () => {
    const deps = ingest();
    const headers = signed();
    // The genuine body fails the full parse (a timestamp this version cannot read): set aside as invalid_callback,
    // it holds the claim all the same.
    const unparsed = start(undefined, { timestamp: 'at noon' });
    const forged = forgedFailedStart();
    expect((await post(deps, unparsed, headers)).statusCode).toBe(200);
    expect((await post(deps, forged, headers)).statusCode).toBe(200);
    const records = await receiveAll();
    expect(await apply(bodyOf(records, JSON.stringify(forged)), bodyOf(records, JSON.stringify(unparsed)))).toEqual([
      'quarantined',
      'quarantined',
    ]);
    expect(await store.getTask(forged.recordId)).toBeNull();
    expect((await quarantined()).map((e) => [e.reason, e.taskId]).sort()).toEqual(
      [
        ['invalid_callback', unparsed.recordId],
        ['replayed_signature', forged.recordId],
      ].sort(),
    );
  });
});

describe('the same body again', () => {
  test('the same body twice under one signature answers 200 twice and is applied once', async () => {
    const deps = ingest();
    const body = start();
    const headers = signed();
    // The signature spelled another way the second time: another deduplication id, so two messages.
    const again = { ...headers, 'RC-Signature': headers['RC-Signature']!.toUpperCase() };
    expect((await post(deps, body, headers)).statusCode).toBe(200);
    expect((await post(deps, body, again)).statusCode).toBe(200);
    const records = await receiveAll();
    expect(records.map((r) => r.messageAttributes[Attr.claim]?.stringValue)).toEqual(['stored', 'stored']);
    expect(records.map((r) => r.attributes.MessageGroupId)).toEqual([
      taskGroupId(APP, body.recordId),
      taskGroupId(APP, body.recordId),
    ]);
    expect(await apply(...records)).toEqual(['applied', 'duplicate']);
    expect((await store.getTask(body.recordId))?.eventCount).toBe(1);
    expect(await quarantined()).toEqual([]);
  });

  test('a resend as it was answers 200 again; SQS keeps one message', async () => {
    const deps = ingest();
    const body = start();
    const headers = signed();
    expect((await post(deps, body, headers)).statusCode).toBe(200);
    expect((await post(deps, body, headers)).statusCode).toBe(200);
    const records = await receiveAll();
    expect(records).toHaveLength(1);
    expect(await apply(...records)).toEqual(['applied']);
  });
});

describe('the delivery the ingest stored is the one the worker would have written', () => {
  test('a claimed callback costs the worker no delivery put; its raw body is listed once for its task', async () => {
    const deps = ingest();
    const body = start();
    const headers = signed();
    await post(deps, body, headers);
    const records = await receiveAll();
    const key = {
      pk: Keys.deliveryPk(APP, bodyRefOf({ replayKey: records[0]!.messageAttributes[Attr.replayKey]!.stringValue! })),
      sk: Keys.deliverySk,
    };
    const stored = await db.client.send(
      new GetItemCommand({ TableName: tableName, Key: { pk: { S: key.pk }, sk: { S: key.sk } } }),
    );
    expect(unmarshall(stored.Item!)).toMatchObject({
      raw: JSON.stringify(body),
      taskId: body.recordId,
      verdict: 'valid',
    });

    // The worker's puts, by the partition they write.
    const client = dynamoClient(db.endpoint, 3);
    const puts: string[] = [];
    client.middlewareStack.add(
      (next) => async (args) => {
        const input = args.input as { Item?: { pk?: { S?: string } } };
        if (input.Item?.pk?.S) puts.push(input.Item.pk.S);
        return next(args);
      },
      { step: 'initialize', name: 'countPuts' },
    );
    const worker = new DynamoTaskStore({ client, tableName });
    const res = await processBatch({ Records: records }, { store: worker, log: silent, concurrency: 5 });
    client.destroy();
    expect(res.outcomes).toEqual(['applied']);
    expect(puts.filter((pk) => pk.startsWith('DLV#'))).toEqual([]);
    expect((await store.listEvents(body.recordId)).map((e) => e.raw)).toEqual([JSON.stringify(body)]);
  });
});

describe('what the claim stores is set aside as the worker would set it aside', () => {
  test('a claimed callback the task refuses (another service) is taken out of its task callbacks', async () => {
    const deps = ingest();
    const task = start();
    await post(deps, task, signed());
    await apply(...(await receiveAll()));
    // A screenshot with the recording's id: claimed and listed by the ingest, refused by the task's service.
    const image = {
      timestamp: Date.now() + 1000,
      type: 1,
      appKey: APP,
      imageId: task.recordId,
      roomId: 'room-claim',
      sessionId: 'sess-claim',
      code: 200,
      config: {},
    };
    expect((await post(deps, image, signed(), 'screenshot')).statusCode).toBe(200);
    expect(await apply(...(await receiveAll()))).toEqual(['quarantined']);
    expect((await quarantined()).map((e) => e.reason)).toEqual(['service_mismatch']);
    expect((await store.listEvents(task.recordId)).map((e) => e.raw)).toEqual([JSON.stringify(task)]);
  });

  test('a signed body nested too deeply to read: 200, enqueued unclaimed, set aside as invalid_callback', async () => {
    const deps = ingest();
    const depth = 20_000;
    const nested = `${'['.repeat(depth)}${']'.repeat(depth)}`;
    const body = `{"timestamp":${Date.now()},"type":1,"appKey":"${APP}","recordId":"rec-deep","extra":${nested}}`;
    expect((await post(deps, body, signed())).statusCode).toBe(200);
    const records = await receiveAll();
    expect(records.map((r) => r.messageAttributes[Attr.claim])).toEqual([undefined]);
    expect(await apply(...records)).toEqual(['quarantined']);
    expect((await quarantined()).map((e) => e.reason)).toEqual(['invalid_callback']);
  });
});

describe('a claim that cannot be written', () => {
  test('DynamoDB unreachable: 503 queue_unavailable, and nothing enqueued', async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const closedPort = (probe.address() as AddressInfo).port;
    await new Promise((resolve) => probe.close(resolve));
    const unreachable = dynamoClient(`http://127.0.0.1:${closedPort}`, 1);
    const response = await post(ingest({ dynamo: unreachable }), start(), signed());
    unreachable.destroy();
    expect(response.statusCode).toBe(503);
    expect(JSON.parse(response.body).error.code).toBe('queue_unavailable');
    expect(await receiveAll()).toEqual([]);
  });

  test('TASKS_TABLE unset: 503 queue_unavailable, nothing enqueued; an unsigned one in report mode is', async () => {
    const deps = ingest({ mode: 'report', env: { TASKS_TABLE: '' } });
    expect((await post(deps, start(), signed())).statusCode).toBe(503);
    expect(await receiveAll()).toEqual([]);
    expect((await post(deps, start(), {})).statusCode).toBe(200);
    expect(await receiveAll()).toHaveLength(1);
  });
});

describe('report mode: what the worker will set aside has a message group of its own', () => {
  test('unsigned, badly signed, stale, unknown-appKey: a group of their own; a valid one its task group', async () => {
    const deps = ingest({ mode: 'report' });
    const id = `rec-claim-${++tasks}`;
    const stale: Record<string, string> = { ...signed(), 'RC-Timestamp': '1000000000' };
    stale['RC-Signature'] = computeSignature(SECRET, stale['RC-Nonce']!, stale['RC-Timestamp']!);
    const sends: [string, object, Record<string, string>][] = [
      ['missing', start(id), {}],
      ['invalid', start(id, { timestamp: Date.now() + 1 }), signed('not-the-secret')],
      ['stale', start(id, { timestamp: Date.now() + 2 }), stale],
      ['unknown_app_key', start(id, { appKey: 'stranger-app', timestamp: Date.now() + 3 }), signed()],
      ['valid', start(id, { timestamp: Date.now() + 4 }), signed()],
    ];
    for (const [, body, headers] of sends) expect((await post(deps, body, headers)).statusCode).toBe(200);
    const records = await receiveAll();
    const groups = Object.fromEntries(
      records.map((r) => [r.messageAttributes[Attr.verdict]!.stringValue, r.attributes.MessageGroupId]),
    );
    expect(groups).toEqual({
      missing: setAsideGroupId(APP, id),
      invalid: setAsideGroupId(APP, id),
      stale: setAsideGroupId(APP, id),
      unknown_app_key: setAsideGroupId('stranger-app', id),
      valid: taskGroupId(APP, id),
    });
    // Still set aside, each with its reason; the valid one applied.
    const outcomes = await apply(...records);
    expect(outcomes.filter((o) => o === 'quarantined')).toHaveLength(4);
    expect((await store.getTask(id, APP))?.eventCount).toBe(1);
  });

  test('a flood of badly signed callbacks naming a task never delays its genuine callback', async () => {
    const deps = ingest({ mode: 'report' });
    const id = `rec-claim-${++tasks}`;
    for (let i = 0; i < 20; i++)
      await post(deps, start(id, { timestamp: Date.now() + i, extra: `flood-${i}` }), signed('not-the-secret'));
    const genuine = start(id, { timestamp: Date.now() + 100 });
    await post(deps, genuine, signed());
    // The first receive hands out the genuine callback: it waits behind none of the flood.
    const first = await receive();
    expect(first.map((r) => r.body)).toContain(JSON.stringify(genuine));
  });
});
