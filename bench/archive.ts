// Part `archive`: the worker with the archive and without it, in one process (`npm run bench -- --only archive`).
// Each side is the deployed worker as lib/worker/config.ts builds it from its environment (its DynamoDB, SNS and
// Firehose clients): without ARCHIVE_STREAM; with it, through the Firehose stand-in (devkit/local/firehose.ts, which
// writes gzip objects into fauxqs' S3 before it answers); with it, through a Firehose that answers at once (as
// Firehose does, which buffers and delivers afterwards). They apply the same callbacks of part 3's mix, as the FIFO
// queue hands them out, each to a table of its own on one dynalite, publishing task events to fauxqs' SNS, and take
// turns at going first round by round: the ratios of their times are taken per round. Each side's DynamoDB units come
// from the worker's own log lines; its requests, and the archive's calls, records and bytes, from its clients.
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { gzipSync } from 'node:zlib';
import { ScanCommand, type AttributeValue, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { SNSClient } from '@aws-sdk/client-sns';
import { SQSClient } from '@aws-sdk/client-sqs';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { createActiveTable, startDynamo } from '../devkit/local/dynamo.ts';
import { startLocalSqs } from '../devkit/local/fauxqs.ts';
import { createFirehoseStandIn } from '../devkit/local/firehose.ts';
import { closeServer, listen } from '../devkit/local/server-lifecycle.ts';
import { archivedLines } from '../devkit/local/stack-archive.ts';
import type { MiddlewareClient } from '../devkit/local/sdk-middleware.ts';
import { setClientHook } from '../lib/aws/clients.ts';
// dynalite's own item-size rule (DynamoDB's documented one).
import { itemSize } from 'dynalite/db/index.js';
import { DELIVERY_PREFIX, tableDefinition } from '../lib/aws/dynamo/table/table.ts';
import { ensureEventsTopicAndQueue } from '../lib/aws/sqs/event-queue.ts';
import type { Logger } from '../lib/log.ts';
import { buildWorkerDependencies } from '../lib/worker/config.ts';
import type { WorkerDeps } from '../lib/worker/deps.ts';
import { processBatch } from '../lib/worker/process-batch.ts';
import { localStageSettings } from '../devkit/local/stack-template.ts';
import { generateMix } from './callbacks.ts';
import { fifoBatches, fifoRecords } from './fifo-batches.ts';
import { ratios, summarize, type Summary } from './stats.ts';

export interface ArchiveSizes {
  rounds: number;
  /** Batches of the event source mapping's batch size, per side per round. */
  batchesPerRound: number;
}

export const archiveSizes = {
  full: { rounds: 64, batchesPerRound: 8 },
  quick: { rounds: 2, batchesPerRound: 2 },
} satisfies Record<string, ArchiveSizes>;

/** One side's figures, per callback. */
export interface ArchiveSide {
  /** Milliseconds per callback, one value per round. */
  msPerCallback: Summary;
  /** Write and read units the worker logged. */
  wcu: number;
  rcu: number;
  /** DynamoDB requests, by operation. */
  dynamoRequests: Record<string, number>;
}

/** A worker with the archive: the ratio of its time to the plain worker's, per round. */
export interface ArchivedSide extends ArchiveSide {
  /** This side's time over the plain side's, per round. */
  ratio: Summary;
  /** The geometric mean of the rounds' ratios, and the ratio of the two sides' total times. */
  geometricMean: number;
  totalRatio: number;
}

export interface ArchiveBenchResult {
  batchSize: number;
  rounds: number;
  callbacksPerRound: number;
  plain: ArchiveSide;
  /** Through the stand-in, which writes each call's objects to S3 before it answers. */
  archived: ArchivedSide;
  /** Through a Firehose that answers at once, taking every record (what Firehose does before it buffers). */
  answered: ArchivedSide;
  /** What the archive took (the archived side's Firehose client and the stand-in's objects). */
  firehose: {
    /** PutRecordBatch calls per batch of the mapping. */
    callsPerBatch: number;
    recordsPerCallback: number;
    /** Mean bytes of a record (a JSON line), and of it rounded up to Firehose's 5 KB. */
    recordBytes: number;
    billedBytes: number;
    /** Lines read back from the bucket: every stored callback's, once. */
    linesArchived: number;
    /** The lines' bytes gzip-compressed as one stream (as Firehose's large objects compress), over their bytes. */
    gzipRatio: number;
    /** Lines of recording callbacks, over all lines. */
    recordingShare: number;
  };
  /** Mean bytes of a delivery item (the raw callback the table keeps), as DynamoDB sizes it. */
  deliveryItemBytes: number;
}

const noop = () => {};
const BILLING_INCREMENT = 5 * 1024;
const STREAM = 'bench-archive';
const BUCKET = 'bench-archive';
const TABLES = { plain: 'bench-archive-plain', archived: 'bench-archive-archived', answered: 'bench-archive-answered' };

/** Logs nothing; keeps the units the worker logs per callback and the callbacks that failed. */
function unitsLogger() {
  const totals = { wcu: 0, rcu: 0, failed: 0 };
  const take = (event: string, fields?: Record<string, unknown>) => {
    if (event === 'callback_applied' || event === 'callback_quarantined') {
      totals.wcu += Number(fields?.wcu ?? 0);
      totals.rcu += Number(fields?.rcu ?? 0);
    }
    if (event === 'callback_failed' || event === 'callback_archive_failed') totals.failed += 1;
  };
  const log: Logger = { debug: noop, info: take, warn: take, error: take };
  return { log, totals };
}

/** Counts each request of the clients built while it is set: by operation, and the Firehose records and bytes. */
function clientCounter() {
  const dynamo = new Map<string, number>();
  const firehose = { calls: 0, records: 0, bytes: 0, billed: 0 };
  const hook = (client: object) => {
    const name = client.constructor.name;
    (client as MiddlewareClient).middlewareStack.add(
      (next, context) => async (args) => {
        const operation = String(context.commandName ?? '').replace(/Command$/, '');
        if (name === 'DynamoDBClient') dynamo.set(operation, (dynamo.get(operation) ?? 0) + 1);
        if (name === 'FirehoseClient') {
          const records = (args.input as { Records?: { Data: Uint8Array }[] }).Records ?? [];
          firehose.calls += 1;
          firehose.records += records.length;
          for (const r of records) {
            firehose.bytes += r.Data.byteLength;
            firehose.billed += Math.ceil(r.Data.byteLength / BILLING_INCREMENT) * BILLING_INCREMENT;
          }
        }
        return next(args);
      },
      { step: 'initialize', name: 'benchArchiveCounter' },
    );
  };
  return { dynamo, firehose, hook };
}

/** The worker as deployed, from its environment, its clients counted by `counter`. */
function deployedWorker(env: Record<string, string>, clients: object, counter: ReturnType<typeof clientCounter>) {
  const { log, totals } = unitsLogger();
  const previous = setClientHook(counter.hook);
  try {
    return { deps: buildWorkerDependencies(env, log, clients) as WorkerDeps, totals };
  } finally {
    setClientHook(previous);
  }
}

/** The mean size of the table's delivery items (the raw callbacks). */
async function deliveryItemBytes(client: DynamoDBClient, tableName: string): Promise<number> {
  let count = 0;
  let bytes = 0;
  let start: Record<string, AttributeValue> | undefined;
  do {
    const page = await client.send(new ScanCommand({ TableName: tableName, ExclusiveStartKey: start }));
    for (const item of page.Items ?? []) {
      if (!item.pk?.S?.startsWith(DELIVERY_PREFIX)) continue;
      count += 1;
      bytes += itemSize(item) as number;
    }
    start = page.LastEvaluatedKey;
  } while (start);
  return bytes / count;
}

const perCallback = (counts: Map<string, number>, n: number) =>
  Object.fromEntries([...counts].map(([name, count]) => [name, count / n]));

/** Firehose's answer alone: every record of a PutRecordBatch taken, nothing written (it buffers, then delivers). */
function answeringFirehose(): Server {
  return createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const { Records = [] } = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as { Records?: unknown[] };
      const RequestResponses = Records.map(() => ({ RecordId: randomUUID() }));
      res.writeHead(200, { 'content-type': 'application/x-amz-json-1.1' });
      res.end(JSON.stringify({ FailedPutCount: 0, Encrypted: false, RequestResponses }));
    });
  });
}

/** dynalite with a table per side, fauxqs (SNS, S3), the stand-in and the answering Firehose; all stopped by `stop`. */
async function startServices(resources: AsyncDisposableStack) {
  const dynamo = await startDynamo(TABLES.plain);
  resources.defer(() => dynamo.stop());
  for (const table of [TABLES.archived, TABLES.answered])
    await createActiveTable(dynamo.client, tableDefinition(table));
  const fauxqs = await startLocalSqs({ port: 0, logger: false });
  resources.defer(() => fauxqs.stop());
  const endpoint = `http://127.0.0.1:${fauxqs.port}`;
  const config = { endpoint, region: 'us-east-1', credentials: { accessKeyId: 'bench', secretAccessKey: 'bench' } };
  const s3 = new S3Client({ ...config, forcePathStyle: true });
  const sns = new SNSClient(config);
  const sqs = new SQSClient(config);
  resources.defer(() => {
    for (const client of [s3, sns, sqs]) client.destroy();
  });
  fauxqs.createBucket(BUCKET);
  const firehose: Record<'archived' | 'answered', string> = { archived: '', answered: '' };
  for (const [side, server] of [
    ['archived', createFirehoseStandIn(s3, [{ name: STREAM, bucket: BUCKET, prefix: 'raw/' }])],
    ['answered', answeringFirehose()],
  ] as const) {
    firehose[side] = `http://127.0.0.1:${await listen(server, 0, '127.0.0.1')}`;
    resources.defer(() => closeServer(server, 2000));
  }
  const topic = await ensureEventsTopicAndQueue(sns, sqs, endpoint, { topic: 'bench-events', queue: 'bench-q' });
  const clients = (firehoseEndpoint: string) => ({
    region: config.region,
    credentials: config.credentials,
    endpoints: { dynamodb: dynamo.endpoint, sns: endpoint, firehose: firehoseEndpoint },
  });
  return { dynamo, s3, topicArn: topic.topicArn, firehose, clients };
}

type Services = Awaited<ReturnType<typeof startServices>>;
type Side = ReturnType<typeof deployedWorker> & { counter: ReturnType<typeof clientCounter>; ms: number[] };

/** The three workers, each on its table; two archive to their Firehose. */
function sidesOf(services: Services): Record<keyof typeof TABLES, Side> {
  const env = { TASK_EVENTS_TOPIC_ARN: services.topicArn, LOG_LEVEL: 'error' };
  const side = (table: string, firehose: string | null): Side => {
    const counter = clientCounter();
    const archive: Record<string, string> = firehose === null ? {} : { ARCHIVE_STREAM: STREAM };
    const worker = deployedWorker(
      { ...env, ...archive, TASKS_TABLE: table },
      services.clients(firehose ?? ''),
      counter,
    );
    return { ...worker, counter, ms: [] };
  };
  return {
    plain: side(TABLES.plain, null),
    archived: side(TABLES.archived, services.firehose.archived),
    answered: side(TABLES.answered, services.firehose.answered),
  };
}

/** Each round's callbacks through each side, as the FIFO queue hands them out; the sides take turns going first. */
async function runRounds(sides: Side[], records: SQSRecord[], sizes: ArchiveSizes, batchSize: number) {
  const perRound = sizes.batchesPerRound * batchSize;
  for (let round = 0; round < sizes.rounds; round++) {
    const slice = records.slice(round * perRound, (round + 1) * perRound);
    const batches = fifoBatches(slice, batchSize).map((Records): SQSEvent => ({ Records }));
    for (let k = 0; k < sides.length; k++) {
      const side = sides[(round + k) % sides.length]!;
      const started = performance.now();
      for (const event of batches) await processBatch(event, side.deps);
      side.ms.push((performance.now() - started) / slice.length);
    }
  }
}

const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);

function sideResult(s: Side, applied: number): ArchiveSide {
  return {
    msPerCallback: summarize(s.ms),
    wcu: s.totals.wcu / applied,
    rcu: s.totals.rcu / applied,
    dynamoRequests: perCallback(s.counter.dynamo, applied),
  };
}

function archivedResult(s: Side, plain: Side, applied: number): ArchivedSide {
  const roundRatios = ratios(s.ms, plain.ms);
  return {
    ...sideResult(s, applied),
    ratio: summarize(roundRatios),
    geometricMean: Math.exp(sum(roundRatios.map(Math.log)) / roundRatios.length),
    totalRatio: sum(s.ms) / sum(plain.ms),
  };
}

/** What the archived side's Firehose client sent, and the lines the stand-in wrote, per callback. */
function firehoseResult(s: Side, lines: Record<string, unknown>[], applied: number, batchSize: number) {
  const f = s.counter.firehose;
  const text = lines.map((l) => `${JSON.stringify(l)}\n`).join('');
  const recording = lines.filter((l) => (l.partition as { service?: string }).service === 'recording');
  return {
    callsPerBatch: f.calls / (applied / batchSize),
    recordsPerCallback: f.records / applied,
    recordBytes: f.bytes / f.records,
    billedBytes: f.billed / f.records,
    linesArchived: lines.length,
    gzipRatio: gzipSync(Buffer.from(text, 'utf8')).byteLength / Buffer.byteLength(text, 'utf8'),
    recordingShare: recording.length / lines.length,
  };
}

export async function benchArchive(
  sizes: ArchiveSizes,
  progress: (line: string) => void = () => {},
): Promise<ArchiveBenchResult> {
  const batchSize = localStageSettings().mappings[0]!.batchSize;
  await using resources = new AsyncDisposableStack();
  const services = await startServices(resources);
  const sides = sidesOf(services);
  const all = Object.values(sides);
  // Warm-up on a mix of its own: connections, JIT, the tables' first items, the stand-in's first objects; then the
  // counts start again and the bucket is emptied of its lines.
  const receivedAt = Date.now();
  const warm = fifoRecords(generateMix(batchSize * 2, 'bench-archive-warm'), 1_000_000, receivedAt);
  await runRounds(all, warm, { rounds: 1, batchesPerRound: 2 }, batchSize);
  for (const side of all) {
    side.counter.dynamo.clear();
    Object.assign(side.counter.firehose, { calls: 0, records: 0, bytes: 0, billed: 0 });
    Object.assign(side.totals, { wcu: 0, rcu: 0, failed: 0 });
    side.ms.length = 0;
  }
  const warmLines = new Set((await archivedLines(services.s3, BUCKET, 'raw/')).map((l) => l.delivery_id));

  const applied = sizes.rounds * sizes.batchesPerRound * batchSize;
  await runRounds(all, fifoRecords(generateMix(applied, 'bench-archive'), 0, receivedAt), sizes, batchSize);
  progress(`archive: ${sizes.rounds} rounds of ${applied / sizes.rounds} callbacks, three workers in turn`);
  const failed = sum(all.map((s) => s.totals.failed));
  if (failed > 0) throw new Error(`${failed} callback(s) failed in the archive part`);
  const lines = (await archivedLines(services.s3, BUCKET, 'raw/')).filter((l) => !warmLines.has(l.delivery_id));
  return {
    batchSize,
    rounds: sizes.rounds,
    callbacksPerRound: applied / sizes.rounds,
    plain: sideResult(sides.plain, applied),
    archived: archivedResult(sides.archived, sides.plain, applied),
    answered: archivedResult(sides.answered, sides.plain, applied),
    firehose: firehoseResult(sides.archived, lines, applied, batchSize),
    deliveryItemBytes: await deliveryItemBytes(services.dynamo.client, TABLES.plain),
  };
}
