// Part 3, worker cost, against dynalite in-process. (a) Throughput: batches (the mapping's size) of SQS records of a
// realistic mix through `processBatch` with the DynamoDB task store, with task events and without, over
// bare PutItem calls of the same raw bodies (same client, the worker's own as lib/worker/config.ts builds it, same
// table, same batches and concurrency), taking turns round by round.
// (b) Capacity: every callback of another mix applied one at a time through `store.applyCallback`,
// summing the write and read units DynamoDB reports, per kind of callback and for the mix, over one bare
// PutItem of the same body. dynalite reports the table's units only: the writes to the four keys-only
// indexes, which DynamoDB bills too, are worked out from each task header before and after the callback, and
// those to the byTaskTime index (which projects the whole delivery) from its delivery before and after.
// The throughput run publishes the task events to SNS (fauxqs) as the deployed worker does. Its records are
// those of the FIFO queue (a message group per task, sequence numbers), in the batches it hands out.
// (c) Capacity at full FIFO batches: the mix of (b) through `processBatch` (./fifo-batches.ts).
import {
  GetItemCommand,
  PutItemCommand,
  ScanCommand,
  type AttributeValue,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import * as dynamodbCommands from '@aws-sdk/client-dynamodb';
import { SNSClient } from '@aws-sdk/client-sns';
import { SQSClient } from '@aws-sdk/client-sqs';
import { eventPublisherTo } from '../lib/aws/sns/task-events.ts';
import { clientConfigOf } from '../lib/aws/clients.ts';
import { workerDynamoClient } from '../lib/worker/config.ts';
import { ensureEventsTopicAndQueue } from '../lib/aws/sqs/event-queue.ts';
import { startLocalSqs } from '../devkit/local/fauxqs.ts';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
// dynalite's own item-size rule (DynamoDB's documented one), the rule its capacity units follow.
import { itemSize } from 'dynalite/db/index.js';
import type { SQSEvent } from 'aws-lambda';
import { createActiveTable, startDynamo } from '../devkit/local/dynamo.ts';
import { DynamoTaskStore } from '../lib/aws/dynamo/read/task-store.ts';
import { EventsIndex, Index, Keys, SORT_AT, tableDefinition } from '../lib/aws/dynamo/table/table.ts';
import { bodyKey, bodyRefOf } from '../lib/aws/dynamo/table/items.ts';
import { itemBytes } from '../lib/aws/dynamo/table/limits.ts';
import { parseCallback } from '../lib/domain/callback.ts';
import { eventsOfWrite, writeMayPublish, type TaskEvent } from '../lib/domain/task-events.ts';
import type { Capacity } from '../lib/domain/task-store.ts';
import { createLogger, setLogSink, type Logger } from '../lib/log.ts';
import { readRecord } from '../lib/queue-message.ts';
import { toDelivered } from '../lib/worker/prepare-record.ts';
import { processBatch } from '../lib/worker/process-batch.ts';
import { localStageSettings } from '../devkit/local/stack-template.ts';
import { MIX_FAULTS, STRESS_FAULTS, generateMix, kindOf, type MixFaults } from './callbacks.ts';
import { toSqsRecord } from '../devkit/seeds/sqs-record.ts';
import { fifoBatches, fifoRecords, measureBatchCapacity, type BatchCapacityResult } from './fifo-batches.ts';
import { ratios, summarize, type Summary } from './stats.ts';
import { inParallel } from '../lib/in-parallel.ts';
import { benchRoundTrips, type RoundTripsResult } from './round-trips.ts';

export interface WorkerSizes {
  rounds: number;
  /** Batches of the event source mapping's batch size, per side per round. */
  batchesPerRound: number;
  /** Callbacks applied one by one for the capacity figures. */
  capacityCallbacks: number;
  /** Rounds of the measure with a round trip added to every request (./round-trips.ts). */
  roundTripRounds: number;
}

export const workerSizes = {
  full: { rounds: 12, batchesPerRound: 8, capacityCallbacks: 2000, roundTripRounds: 6 },
  quick: { rounds: 2, batchesPerRound: 2, capacityCallbacks: 150, roundTripRounds: 1 },
} satisfies Record<string, WorkerSizes>;

/** Batch sizes of the low-traffic figures (a callback or a few at a time, not a backlog). */
export const LOW_TRAFFIC_BATCHES = [1, 2, 3] as const;

/** Records applied at once within a batch: the worker's default (functions/worker.ts). */
export const RECORD_CONCURRENCY = 5;

export interface KindCapacity {
  kind: string;
  count: number;
  /** Means per callback. */
  tableWcu: number;
  /** Index writes DynamoDB would bill on top (worked out, not reported by dynalite). */
  indexWcu: number;
  rcu: number;
  /**
   * Read units of the task read that task events need (the status and counts after the write, added up
   * from the task's items), once per callback that is not quarantined.
   */
  eventRcu: number;
  /** Write units of one bare PutItem of the same body. */
  bareWcu: number;
  /** (tableWcu + indexWcu) / bareWcu. */
  ratio: number;
  /** Task events the worker publishes per callback (lib/domain/task-events.ts). */
  publishes: number;
}

export interface CapacityResult {
  callbacks: number;
  faults: MixFaults;
  outcomes: Record<string, number>;
  kinds: KindCapacity[];
  /** The whole mix, per callback. */
  mix: Omit<KindCapacity, 'kind'>;
  /** Items in the table afterwards, by kind: how many, the largest and the mean, in bytes as DynamoDB sizes them. */
  items: { kind: string; count: number; largestBytes: number; meanBytes: number; over1KB: number }[];
}

export interface WorkerResult {
  batchSize: number;
  concurrency: number;
  rounds: number;
  callbacksPerRound: number;
  /** Callbacks per second, one value per round. */
  workerPerSecond: Summary;
  barePutPerSecond: Summary;
  /** worker / bare PutItem, per round. */
  ratio: Summary;
  /** The same worker with no task events to publish (a stack without their topic), on a mix of its own. */
  withoutEvents?: { workerPerSecond: Summary; ratio: Summary; workerBatchMs: Summary };
  /** Milliseconds per batch of `batchSize` records (what the worker Lambda is billed for). */
  workerBatchMs: Summary;
  barePutBatchMs: Summary;
  /** DynamoDB requests per callback in the throughput run, by operation (bare PutItem: exactly 1). */
  requestsPerCallback: Record<string, number>;
  /** Where the worker's time goes: its DynamoDB requests sent again alone (`replayRequests`), means per callback. */
  requestsAlone?: RequestsAlone;
  /** The worker against bare PutItem when every request waits a round trip more (./round-trips.ts). */
  roundTrips?: RoundTripsResult;
  /** Units the worker logged (wcu/rcu per callback) in the throughput run, conflicts and retries included. */
  loggedWcuPerCallback: number;
  loggedRcuPerCallback: number;
  /** Task events published to SNS per callback in the throughput run. */
  publishedPerCallback?: number;
  outcomes: Record<string, number>;
  /** Bytes of log lines the worker wrote per callback in the throughput run (CloudWatch Logs ingests these). */
  logBytesPerCallback: number;
  /** The realistic mix: platform reordering within seconds. */
  capacity: CapacityResult;
  /** The stress case: reordering within 200 ms of a 3,600x compressed schedule. */
  stressCapacity: CapacityResult;
  /** The realistic mix through `processBatch` in full FIFO batches (./fifo-batches.ts). */
  batchCapacity?: BatchCapacityResult;
  /** The same mix at low traffic: batches of 1, of at most 2 and of at most 3 (`LOW_TRAFFIC_BATCHES`). */
  smallBatchCapacity?: (BatchCapacityResult & { batchSize: number })[];
}

export interface RequestsAlone {
  /** The requests the worker (with task events) sent in the throughput run. */
  requests: number;
  /** Those requests sent again alone, in order, at the worker's concurrency, to a fresh table: ms per callback. */
  msPerCallback: number;
  /**
   * Its delivery puts alone, sent again the same way: the one conditional write per callback that the replay rule
   * makes (no batch request can carry its condition), ms per callback.
   */
  claimsMsPerCallback?: number;
  /** The worker's own time per callback in that run (all its batches over all its callbacks), and the baseline's. */
  workerMsPerCallback: number;
  bareMsPerCallback: number;
}

const noop = () => {};

/**
 * The worker's own logger, its lines captured rather than printed: keeps the units the worker logs per
 * callback (`wcu`, `rcu`), the failures, and the bytes of every line.
 */
function capacityLogger() {
  const totals = { wcu: 0, rcu: 0, failed: 0, bytes: 0 };
  const real = createLogger('worker', 'info');
  const take =
    (level: keyof Logger) =>
    (event: string, fields?: Record<string, unknown>): void => {
      if (event === 'callback_applied' || event === 'callback_quarantined') {
        totals.wcu += Number(fields?.wcu ?? 0);
        totals.rcu += Number(fields?.rcu ?? 0);
      }
      if (event === 'callback_failed') totals.failed += 1;
      const restore = setLogSink((line) => {
        totals.bytes += Buffer.byteLength(line, 'utf8') + 1;
      });
      try {
        real[level](event, fields);
      } finally {
        setLogSink(restore);
      }
    };
  const log: Logger = { debug: noop, info: take('info'), warn: take('warn'), error: take('error') };
  return { log, totals };
}

const DELIVERY_KIND = 'delivery (claim and raw body)';

/** Which kind of item a table item is, from its keys (table.ts). */
function itemKind(item: Record<string, AttributeValue>): string {
  const pk = item.pk?.S ?? '';
  const sk = item.sk?.S ?? '';
  if (pk.startsWith('BARE#')) return 'bare';
  if (pk.startsWith('DLV#')) return DELIVERY_KIND;
  if (pk.startsWith('QUARANTINE#')) return 'quarantined callback';
  if (/^(DUE|CHG)#/.test(pk)) return 'time bucket entry';
  if (sk.startsWith('H#')) return 'task header';
  if (/^P#\d+:/.test(sk)) return /#K#[0-9a-f]{32}$/.test(sk) ? 'recorded key (overflow)' : 'file';
  return 'other';
}

async function measureItems(client: DynamoDBClient, tableName: string): Promise<CapacityResult['items']> {
  const byKind = new Map<string, { count: number; largestBytes: number; totalBytes: number; over1KB: number }>();
  let start: Record<string, AttributeValue> | undefined;
  do {
    const page = await client.send(new ScanCommand({ TableName: tableName, ExclusiveStartKey: start }));
    for (const item of page.Items ?? []) {
      const kind = itemKind(item);
      if (kind === 'bare') continue;
      const bytes = itemSize(item) as number;
      const k = byKind.get(kind) ?? { count: 0, largestBytes: 0, totalBytes: 0, over1KB: 0 };
      k.count += 1;
      k.totalBytes += bytes;
      k.largestBytes = Math.max(k.largestBytes, bytes);
      if (bytes > 1024) k.over1KB += 1;
      byKind.set(kind, k);
    }
    start = page.LastEvaluatedKey;
  } while (start);
  return [...byKind.entries()]
    .map(([kind, { totalBytes, ...k }]) => ({ kind, ...k, meanBytes: Math.round(totalBytes / k.count) }))
    .sort((a, b) => a.kind.localeCompare(b.kind));
}

/** Counts every request the client sends, by operation (an SDK middleware, before retries). */
export function countRequests(client: DynamoDBClient): Map<string, number> {
  const counts = new Map<string, number>();
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const name = String(context.commandName ?? 'unknown').replace(/Command$/, '');
      counts.set(name, (counts.get(name) ?? 0) + 1);
      return next(args);
    },
    { step: 'initialize', name: 'benchRequestCounter' },
  );
  return counts;
}

/** Keeps a copy of each request the client sends while `on` (a middleware, before retries). */
function captureRequests(client: DynamoDBClient): { on: boolean; sent: { command: string; input: any }[] } {
  const capture = { on: false, sent: [] as { command: string; input: any }[] };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (capture.on) capture.sent.push({ command: String(context.commandName), input: structuredClone(args.input) });
      return next(args);
    },
    { step: 'initialize', name: 'benchRequestCapture' },
  );
  return capture;
}

/**
 * Sends `sent` again, in order, `concurrency` at a time, to the table `tableName` (created here), with the same
 * client: the time the requests alone take, without the code that decided them. A condition that failed then fails
 * again (the items are written in the same order); every error is ignored. Returns milliseconds.
 */
async function replayRequests(
  client: DynamoDBClient,
  sent: readonly { command: string; input: any }[],
  tableName: string,
  concurrency: number,
): Promise<number> {
  await createActiveTable(client, tableDefinition(tableName));
  const commands = dynamodbCommands as unknown as Record<string, new (input: unknown) => PutItemCommand>;
  const retarget = (input: any) => {
    const out = { ...input };
    if (out.TableName) out.TableName = tableName;
    if (out.RequestItems) out.RequestItems = { [tableName]: Object.values(out.RequestItems)[0] };
    return out;
  };
  const started = performance.now();
  await inParallel(sent, concurrency, async ({ command, input }) => {
    await client.send(new commands[command]!(retarget(input))).catch(() => undefined);
  });
  return performance.now() - started;
}

function barePut(client: DynamoDBClient, tableName: string, id: string, raw: string) {
  return client.send(
    new PutItemCommand({
      TableName: tableName,
      Item: { pk: { S: `BARE#${id}` }, sk: { S: '#' }, raw: { S: raw } },
      ReturnConsumedCapacity: 'TOTAL',
    }),
  );
}

/** Index entries of a header item: one per index, present when both its keys are. */
function indexEntries(item: Record<string, unknown> | null): (string | null)[] {
  return Object.values(Index).map((index) => {
    if (!item) return null;
    const pk = item[index.pk];
    const sortAt = item[SORT_AT];
    return pk === undefined || pk === null || sortAt === undefined || sortAt === null
      ? null
      : `${String(pk)}\u0000${String(sortAt)}`;
  });
}

/**
 * Index writes of one item change, as DynamoDB bills keys-only indexes: an entry added or removed is
 * one write, an entry whose keys changed is two (delete and put), an unchanged entry none. Entries hold
 * keys only, far below 1 KB, so each write is one unit.
 */
export function indexWrites(before: Record<string, unknown> | null, after: Record<string, unknown> | null): number {
  const a = indexEntries(before);
  const b = indexEntries(after);
  let writes = 0;
  a.forEach((entry, i) => {
    const next = b[i] ?? null;
    if (entry === next) return;
    writes += entry !== null && next !== null ? 2 : 1;
  });
  return writes;
}

async function readHeader(
  client: DynamoDBClient,
  tableName: string,
  appKey: string,
  taskId: string,
): Promise<Record<string, unknown> | null> {
  return readItem(client, tableName, { pk: Keys.taskPk(taskId), sk: Keys.headerSk(appKey) });
}

async function readItem(
  client: DynamoDBClient,
  tableName: string,
  key: { pk: string; sk: string },
): Promise<Record<string, unknown> | null> {
  const out = await client.send(new GetItemCommand({ TableName: tableName, Key: marshall(key), ConsistentRead: true }));
  return out.Item ? unmarshall(out.Item) : null;
}

/**
 * Writes to the byTaskTime index of one delivery's change, as DynamoDB bills an index that projects the whole
 * item: an entry put costs a unit per KB of the item, a removed one a unit, an entry whose keys changed both;
 * an entry whose item changed is put again, an unchanged one costs nothing.
 */
export function eventsIndexWrites(
  before: Record<string, unknown> | null,
  after: Record<string, unknown> | null,
): number {
  const keyOf = (item: Record<string, unknown> | null) =>
    item && item[EventsIndex.pk] !== undefined ? `${item[EventsIndex.pk]}\u0000${item[EventsIndex.sk]}` : null;
  const [a, b] = [keyOf(before), keyOf(after)];
  const put = () => Math.max(1, Math.ceil(itemBytes(marshall(after!, { removeUndefinedValues: true })) / 1024));
  if (a === null) return b === null ? 0 : put();
  if (b === null) return 1;
  if (a !== b) return 1 + put();
  return JSON.stringify(before) === JSON.stringify(after) ? 0 : put();
}

/**
 * Every callback of a mix applied one at a time. The store remembers no task header and no file item
 * between callbacks (`knownHeaders: 0`, `knownFiles: 0`), as a worker that meets each task for the first
 * time: the read units are the most a callback costs.
 */
async function measureCapacity(
  client: DynamoDBClient,
  callbacks: number,
  faults: MixFaults,
  tableName: string,
): Promise<CapacityResult> {
  await createActiveTable(client, tableDefinition(tableName));
  const store = new DynamoTaskStore({ client, tableName, knownHeaders: 0, knownFiles: 0 });
  const sends = generateMix(callbacks, 'bench-capacity', faults);
  const receivedAt = Date.now();
  /** A kind's sums, before they are divided into means. */
  type Sums = Omit<KindCapacity, 'kind' | 'ratio'>;
  const kinds = new Map<string, Sums>();
  const outcomes: Record<string, number> = {};
  const add = (kind: string, v: Omit<Sums, 'count'>) => {
    const k = kinds.get(kind) ?? { count: 0, tableWcu: 0, indexWcu: 0, rcu: 0, eventRcu: 0, bareWcu: 0, publishes: 0 };
    k.count += 1;
    k.tableWcu += v.tableWcu;
    k.indexWcu += v.indexWcu;
    k.rcu += v.rcu;
    k.bareWcu += v.bareWcu;
    k.publishes += v.publishes;
    k.eventRcu += v.eventRcu;
    kinds.set(kind, k);
  };
  for (let i = 0; i < sends.length; i++) {
    const send = sends[i]!;
    const read = readRecord(toSqsRecord(send, i, receivedAt));
    if (!read.ok) throw new Error(`bench record ${i} is unreadable: ${read.reason}`);
    const msg = read.message;
    const parsed = parseCallback(msg.service, msg.body);
    if (!parsed.ok) throw new Error(`bench callback ${i} does not parse: ${parsed.errors.join('; ')}`);
    const { appKey, id } = parsed.callback;
    const before = await readHeader(client, tableName, appKey, id);
    const delivered = toDelivered(msg, parsed.callback);
    const deliveryKey = bodyKey(appKey, id, parsed.callback.key, bodyRefOf(delivered));
    const deliveryBefore = await readItem(client, tableName, deliveryKey);
    // As the worker applies it: the write, then its task's header update (here a batch of one), whose units
    // count with the write's.
    const result = await store.applyUncounted(delivered);
    const write = result.outcome === 'quarantined' ? null : result.write;
    const counted = write
      ? await store.countTask(
          { appKey, id, writes: [{ callback: parsed.callback, write }], absorbed: null },
          result.capacity,
        )
      : null;
    const after = await readHeader(client, tableName, appKey, id);
    const deliveryAfter = await readItem(client, tableName, deliveryKey);
    const bare = await barePut(client, tableName, `cap-${i}`, msg.body);
    outcomes[result.outcome] = (outcomes[result.outcome] ?? 0) + 1;
    const kind =
      result.outcome === 'duplicate'
        ? 'duplicate (any kind)'
        : result.outcome === 'quarantined'
          ? 'quarantined'
          : kindOf(send);
    // The events the worker would publish for this delivery, read off the header update as the worker does;
    // the reads are those of a file event's attempts (its spilled keys), none otherwise.
    const eventReads: Capacity = { read: 0, write: 0 };
    let events: TaskEvent[] = [];
    if (write && writeMayPublish(parsed.callback, result.outcome === 'applied', write.file)) {
      const file = parsed.callback.upload ? await write.fileAfter(eventReads) : null;
      const parts = counted && file ? { ...counted, files: [file] } : counted;
      const stored = write.storedWith(parts);
      if (stored) events = eventsOfWrite(parsed.callback, stored);
    }
    add(kind, {
      tableWcu: result.capacity.write,
      indexWcu: indexWrites(before, after) + eventsIndexWrites(deliveryBefore, deliveryAfter),
      rcu: result.capacity.read,
      eventRcu: eventReads.read,
      bareWcu: bare.ConsumedCapacity?.CapacityUnits ?? 0,
      publishes: events.length,
    });
  }
  const perCallback = (k: Sums) => ({
    count: k.count,
    tableWcu: k.tableWcu / k.count,
    indexWcu: k.indexWcu / k.count,
    rcu: k.rcu / k.count,
    eventRcu: k.eventRcu / k.count,
    bareWcu: k.bareWcu / k.count,
    ratio: (k.tableWcu + k.indexWcu) / k.bareWcu,
    publishes: k.publishes / k.count,
  });
  const all = [...kinds.values()].reduce(
    (t, k) => ({
      count: t.count + k.count,
      tableWcu: t.tableWcu + k.tableWcu,
      indexWcu: t.indexWcu + k.indexWcu,
      rcu: t.rcu + k.rcu,
      eventRcu: t.eventRcu + k.eventRcu,
      bareWcu: t.bareWcu + k.bareWcu,
      publishes: t.publishes + k.publishes,
    }),
    { count: 0, tableWcu: 0, indexWcu: 0, rcu: 0, eventRcu: 0, bareWcu: 0, publishes: 0 },
  );
  return {
    callbacks: sends.length,
    faults,
    outcomes,
    items: await measureItems(client, tableName),
    kinds: [...kinds.entries()]
      .map(([kind, k]) => ({ kind, ...perCallback(k) }))
      .sort((a, b) => a.kind.localeCompare(b.kind)),
    mix: perCallback(all),
  };
}

export async function benchWorker(
  sizes: WorkerSizes,
  progress: (line: string) => void = () => {},
): Promise<WorkerResult> {
  const batchSize = localStageSettings().mappings[0]!.batchSize;
  const perRound = sizes.batchesPerRound * batchSize;
  const dynamo = await startDynamo('bench-tasks');
  // Task events go to SNS as deployed: fauxqs (on loopback), with one SQS queue subscribed (fan-out included).
  const fauxqs = await startLocalSqs({ port: 0, logger: false });
  const endpoint = `http://127.0.0.1:${fauxqs.port}`;
  const config = { endpoint, region: 'us-east-1', credentials: { accessKeyId: 'bench', secretAccessKey: 'bench' } };
  const sns = new SNSClient(config);
  const sqs = new SQSClient(config);
  let workerClient: DynamoDBClient | undefined;
  try {
    const topic = await ensureEventsTopicAndQueue(sns, sqs, endpoint, {
      topic: 'bench-events',
      queue: 'bench-events-q',
    });
    // The worker's own clients, built as it builds them (lib/worker/config.ts); the bare baseline shares its
    // DynamoDB one.
    const clients = { ...config, endpoints: { dynamodb: dynamo.endpoint, sns: endpoint } };
    workerClient = workerDynamoClient(clients);
    const client = workerClient;
    const events = eventPublisherTo(topic.topicArn, clientConfigOf('sns', clients))!;
    const counts = countRequests(client);
    const capture = captureRequests(client);
    const { log, totals } = capacityLogger();
    const plainLog: Logger = { debug: noop, info: noop, warn: noop, error: noop };
    const store = new DynamoTaskStore({ client, tableName: dynamo.tableName });
    const receivedAt = Date.now();
    const sends = generateMix(sizes.rounds * perRound, 'bench-worker');
    // As the FIFO queue holds them: each with its task's message group and a sequence number.
    const records = fifoRecords(sends, 0, receivedAt);
    // The same kind of mix, tasks of its own, for the worker without task events.
    const plainRecords = fifoRecords(generateMix(sizes.rounds * perRound, 'bench-worker-plain'), 2_000_000, receivedAt);

    // Warm-up on another mix (its own tasks): connections, JIT, the table's first items.
    const warm = fifoRecords(generateMix(batchSize * 2, 'bench-worker-warm'), 1_000_000, receivedAt);
    await processBatch({ Records: warm.slice(0, batchSize) }, { store, log, concurrency: RECORD_CONCURRENCY, events });
    await inParallel(
      warm.slice(batchSize),
      RECORD_CONCURRENCY,
      async (r) => void (await barePut(client, dynamo.tableName, `warm-${r.messageId}`, r.body)),
    );
    counts.clear();
    totals.wcu = 0;
    totals.rcu = 0;
    totals.bytes = 0;
    const publishedBefore = events.published();

    const workerRate: number[] = [];
    const bareRate: number[] = [];
    const plainRate: number[] = [];
    const plainBatchMs: number[] = [];
    const workerBatchMs: number[] = [];
    const bareBatchMs: number[] = [];
    const outcomes: Record<string, number> = {};
    const bareCounts = { PutItem: 0 };
    const runWorker = async (batches: SQSEvent[]) => {
      let total = 0;
      for (const event of batches) {
        const started = performance.now();
        capture.on = true;
        const result = await processBatch(event, { store, log, concurrency: RECORD_CONCURRENCY, events });
        capture.on = false;
        const ms = performance.now() - started;
        workerBatchMs.push(ms);
        total += ms;
        for (const o of result.outcomes) outcomes[o] = (outcomes[o] ?? 0) + 1;
      }
      return total;
    };
    const plainCounts = new Map<string, number>();
    const runPlain = async (batches: SQSEvent[]) => {
      let total = 0;
      for (const event of batches) {
        const before = new Map(counts);
        const started = performance.now();
        await processBatch(event, { store, log: plainLog, concurrency: RECORD_CONCURRENCY });
        const ms = performance.now() - started;
        // Its requests are not those of the worker with task events.
        for (const [name, n] of counts)
          plainCounts.set(name, (plainCounts.get(name) ?? 0) + n - (before.get(name) ?? 0));
        plainBatchMs.push(ms);
        total += ms;
      }
      return total;
    };
    const runBare = async (batches: SQSEvent[]) => {
      let total = 0;
      for (const event of batches) {
        const before = counts.get('PutItem') ?? 0;
        const started = performance.now();
        await inParallel(
          event.Records,
          RECORD_CONCURRENCY,
          async (r) => void (await barePut(client, dynamo.tableName, r.messageId, r.body)),
        );
        const ms = performance.now() - started;
        bareBatchMs.push(ms);
        total += ms;
        bareCounts.PutItem += (counts.get('PutItem') ?? 0) - before;
      }
      return total;
    };
    // Each round's callbacks as the FIFO queue hands them out (./fifo-batches.ts).
    const batchesOf = (slice: typeof records) =>
      fifoBatches(slice, batchSize).map((Records): SQSEvent => ({ Records }));
    for (let round = 0; round < sizes.rounds; round++) {
      const slice = records.slice(round * perRound, (round + 1) * perRound);
      const batches = batchesOf(slice);
      const plain = batchesOf(plainRecords.slice(round * perRound, (round + 1) * perRound));
      // The three sides take turns at going first, so that none always meets the same conditions.
      const sides = [
        async () => workerRate.push(slice.length / ((await runWorker(batches)) / 1000)),
        async () => bareRate.push(slice.length / ((await runBare(batches)) / 1000)),
        async () => plainRate.push(slice.length / ((await runPlain(plain)) / 1000)),
      ];
      for (let k = 0; k < sides.length; k++) await sides[(round + k) % sides.length]!();
    }
    progress(`worker: ${sizes.rounds} rounds of ${perRound} callbacks through processBatch and bare PutItem`);
    if (totals.failed > 0) throw new Error(`${totals.failed} callback(s) failed in the worker throughput run`);

    const applied = sizes.rounds * perRound;
    const requestsPerCallback: Record<string, number> = {};
    for (const [name, n] of counts) {
      // The bare baseline's own PutItems, and the worker without task events, are not this worker's.
      const own = n - (name === 'PutItem' ? bareCounts.PutItem : 0) - (plainCounts.get(name) ?? 0);
      if (own > 0) requestsPerCallback[name] = own / applied;
    }

    const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
    const claims = capture.sent.filter(
      (s) => s.command === 'PutItemCommand' && itemKind(s.input.Item) === DELIVERY_KIND,
    );
    const requestsAlone: RequestsAlone = {
      requests: capture.sent.length,
      msPerCallback: (await replayRequests(client, capture.sent, 'bench-replay', RECORD_CONCURRENCY)) / applied,
      claimsMsPerCallback: (await replayRequests(client, claims, 'bench-replay-claims', RECORD_CONCURRENCY)) / applied,
      workerMsPerCallback: sum(workerBatchMs) / applied,
      bareMsPerCallback: sum(bareBatchMs) / applied,
    };
    capture.sent.length = 0;
    progress(`worker: its ${requestsAlone.requests} DynamoDB requests sent again alone`);
    // Over a network: fresh clients of the same kind, each request 5 ms later (./round-trips.ts).
    const slowDynamo = workerDynamoClient(clients);
    const slowSns = new SNSClient(clientConfigOf('sns', clients));
    const roundTrips = await benchRoundTrips({
      dynamo: slowDynamo,
      sns: slowSns,
      tableName: dynamo.tableName,
      topicArn: topic.topicArn,
      rounds: sizes.roundTripRounds,
      batchesPerRound: sizes.batchesPerRound,
      batchSize,
      concurrency: RECORD_CONCURRENCY,
      log: plainLog,
    }).finally(() => {
      slowDynamo.destroy();
      slowSns.destroy();
    });
    progress(`worker: ${roundTrips.rounds} rounds with ${roundTrips.roundTripMs} ms more on every request`);

    const logBytesPerCallback = totals.bytes / applied;
    const capacity = await measureCapacity(dynamo.client, sizes.capacityCallbacks, MIX_FAULTS, 'bench-capacity');
    const stressCapacity = await measureCapacity(
      dynamo.client,
      sizes.capacityCallbacks,
      STRESS_FAULTS,
      'bench-capacity-stress',
    );
    progress(`worker: capacity of ${capacity.callbacks} callbacks of each mix applied one at a time`);
    // The mix of (b) through processBatch, in FIFO batches of at most `size`, on a table of its own.
    const atBatchesOf = async (size: number, tableName: string) => {
      await createActiveTable(dynamo.client, tableDefinition(tableName));
      return measureBatchCapacity(
        dynamo.endpoint,
        tableName,
        sizes.capacityCallbacks,
        MIX_FAULTS,
        size,
        RECORD_CONCURRENCY,
        (before, after) => indexWrites(before, after) + eventsIndexWrites(before, after),
      );
    };
    const batchCapacity = await atBatchesOf(batchSize, 'bench-capacity-batches');
    progress(`worker: capacity of ${batchCapacity.callbacks} callbacks in ${batchCapacity.batches} FIFO batches`);
    const smallBatchCapacity: (BatchCapacityResult & { batchSize: number })[] = [];
    for (const size of LOW_TRAFFIC_BATCHES)
      smallBatchCapacity.push({ ...(await atBatchesOf(size, `bench-capacity-batches-of-${size}`)), batchSize: size });
    progress(`worker: capacity in batches of at most ${LOW_TRAFFIC_BATCHES.join(', ')}`);

    return {
      batchSize,
      concurrency: RECORD_CONCURRENCY,
      rounds: sizes.rounds,
      callbacksPerRound: perRound,
      workerPerSecond: summarize(workerRate),
      barePutPerSecond: summarize(bareRate),
      ratio: summarize(ratios(workerRate, bareRate)),
      withoutEvents: {
        workerPerSecond: summarize(plainRate),
        ratio: summarize(ratios(plainRate, bareRate)),
        workerBatchMs: summarize(plainBatchMs),
      },
      workerBatchMs: summarize(workerBatchMs),
      barePutBatchMs: summarize(bareBatchMs),
      requestsPerCallback,
      requestsAlone,
      roundTrips,
      loggedWcuPerCallback: totals.wcu / applied,
      loggedRcuPerCallback: totals.rcu / applied,
      publishedPerCallback: (events.published() - publishedBefore) / applied,
      outcomes,
      logBytesPerCallback,
      capacity,
      stressCapacity,
      batchCapacity,
      smallBatchCapacity,
    };
  } finally {
    workerClient?.destroy();
    sns.destroy();
    sqs.destroy();
    await fauxqs.stop();
    await dynamo.stop();
  }
}
