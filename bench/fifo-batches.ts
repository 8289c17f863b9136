// Part 3 at full FIFO batches: the realistic mix delivered as the FIFO event source mapping delivers it and
// applied by the worker's own batch path (`processBatch`: the writes, one header update per task and batch,
// the task events read off it), every DynamoDB request metered. Beside it, the batch-of-one measure of
// ./worker.ts (the low-traffic case).
//
// The queue: every callback of the mix enqueued in arrival order, each with its task's message group and an
// increasing sequence number, as the ingest sends them, with a backlog (a queue that fills batches). A receive
// hands out, as SQS does for FIFO queues, as many messages of the group holding the oldest message as it can
// (in order, up to the batch size), then of the next groups, until the batch is full; batches are applied one
// after the other, so no group is ever in flight when the next one is handed out.
import {
  ConditionalCheckFailedException,
  GetItemCommand,
  type AttributeValue,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import type { SQSRecord } from 'aws-lambda';
import { DynamoTaskWriter } from '../lib/aws/dynamo/write/task-writer.ts';
import { fromItem, type Item } from '../lib/aws/dynamo/table/table-client.ts';
import { dynamoClient } from '../devkit/local/dynamo.ts';
import { taskGroupId } from '../lib/fifo-ids.ts';
import type { Logger } from '../lib/log.ts';
import { processBatch } from '../lib/worker/process-batch.ts';
import { generateMix, type MixFaults } from './callbacks.ts';
import { toSqsRecord } from '../devkit/seeds/sqs-record.ts';

/** Units of the batch run, per callback: where they go, by item and request. */
export interface BatchCapacityResult {
  callbacks: number;
  batches: number;
  /** Records per batch, and distinct tasks per batch, on average. */
  meanBatch: number;
  meanTasksPerBatch: number;
  outcomes: Record<string, number>;
  /** Per callback. */
  tableWcu: number;
  indexWcu: number;
  rcu: number;
  publishes: number;
  /** Write and read units per callback by item kind and request ("file PutItem", "header UpdateItem", …). */
  breakdown: { what: string; wcu: number; indexWcu: number; rcu: number; requests: number }[];
}

/** The first SQS sequence number the bench's queue hands out (SQS's are 20 digits and more). */
const FIRST_SEQUENCE = 10n ** 19n;

/** The records of a mix as a FIFO queue holds them: each with its task's group and a sequence number. */
export function fifoRecords(
  sends: readonly Parameters<typeof toSqsRecord>[0][],
  firstIndex: number,
  receivedAt: number,
): SQSRecord[] {
  return sends.map((send, i) => {
    const record = toSqsRecord(send, firstIndex + i, receivedAt);
    record.attributes.MessageGroupId = taskGroupId(String(send.body.appKey), String(taskIdOf(send)));
    record.attributes.SequenceNumber = String(FIRST_SEQUENCE + BigInt(firstIndex + i));
    return record;
  });
}

function taskIdOf(send: Parameters<typeof toSqsRecord>[0]): unknown {
  return send.service === 'recording' ? send.body.recordId : send.body.imageId;
}

/**
 * The batches a FIFO queue holding `records` (in the order they were sent) hands out: as many messages of the
 * group holding the oldest message as fit, in order, then those of the next groups, up to `size` a batch.
 */
export function fifoBatches(records: readonly SQSRecord[], size: number): SQSRecord[][] {
  const groups = new Map<string, { at: number; record: SQSRecord }[]>();
  records.forEach((record, at) => {
    const g = record.attributes.MessageGroupId ?? record.messageId;
    const list = groups.get(g) ?? [];
    list.push({ at, record });
    groups.set(g, list);
  });
  const batches: SQSRecord[][] = [];
  while (groups.size > 0) {
    // The groups by the age of the oldest message each has left.
    const order = [...groups.entries()].sort((a, b) => a[1][0]!.at - b[1][0]!.at);
    const batch: SQSRecord[] = [];
    for (const [g, list] of order) {
      if (batch.length === size) break;
      batch.push(...list.splice(0, size - batch.length).map((m) => m.record));
      if (list.length === 0) groups.delete(g);
    }
    batches.push(batch);
  }
  return batches;
}

/** The kind of item a key names (lib/aws/dynamo/table/table.ts). */
function itemKindOf(key: { pk: string; sk: string }): string {
  if (key.pk.startsWith('DLV#')) return 'delivery';
  if (key.pk.startsWith('QUARANTINE#')) return 'quarantine';
  if (/^(DUE|CHG)#/.test(key.pk)) return 'time bucket entry';
  if (key.sk.startsWith('H#')) return 'header';
  if (/#K#/.test(key.sk)) return 'recorded key';
  return 'file';
}

interface Meter {
  tableWcu: number;
  indexWcu: number;
  rcu: number;
  by: Map<string, { wcu: number; indexWcu: number; rcu: number; requests: number }>;
}

/**
 * Meters every request of `client`: the capacity DynamoDB reports, one write unit for a write whose condition
 * failed (billed, not reported), and the index writes `indexWrites` works out from the item before and after
 * each write (read through `reader`, another client, each write of a key alone meanwhile).
 */
function meterClient(
  client: DynamoDBClient,
  reader: DynamoDBClient,
  tableName: string,
  indexWrites: (before: Item | null, after: Item | null) => number,
): Meter {
  const meter: Meter = { tableWcu: 0, indexWcu: 0, rcu: 0, by: new Map() };
  const locks = new Map<string, Promise<void>>();
  const read = async (key: Record<string, AttributeValue>) => {
    const out = await reader.send(new GetItemCommand({ TableName: tableName, Key: key, ConsistentRead: true }));
    return out.Item ? fromItem(out.Item) : null;
  };
  const add = (what: string, wcu: number, rcu: number) => {
    const b = meter.by.get(what) ?? { wcu: 0, indexWcu: 0, rcu: 0, requests: 0 };
    b.wcu += wcu;
    b.rcu += rcu;
    b.requests += 1;
    meter.by.set(what, b);
    meter.tableWcu += wcu;
    meter.rcu += rcu;
  };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const name = String(context.commandName ?? '').replace(/Command$/, '');
      const input = args.input as {
        Key?: Record<string, AttributeValue>;
        Item?: Record<string, AttributeValue>;
        RequestItems?: Record<string, { PutRequest?: { Item: Record<string, AttributeValue> } }[]>;
      };
      const key = input.Key ?? (input.Item ? { pk: input.Item.pk!, sk: input.Item.sk! } : undefined);
      const plain = key ? { pk: key.pk?.S ?? '', sk: key.sk?.S ?? '' } : null;
      const what = plain ? `${itemKindOf(plain)} ${name}` : name;
      const writes = name === 'PutItem' || name === 'UpdateItem' || name === 'DeleteItem';
      const units = (out: unknown) => {
        const c = (out as { ConsumedCapacity?: unknown }).ConsumedCapacity;
        return (Array.isArray(c) ? c : c ? [c] : []).reduce(
          (s: number, x: { CapacityUnits?: number }) => s + (x.CapacityUnits ?? 0),
          0,
        );
      };
      // Unconditional puts of items no index holds (the time bucket entries of a batch's new tasks).
      if (name === 'BatchWriteItem') {
        const first = Object.values(input.RequestItems ?? {})[0]?.[0]?.PutRequest?.Item;
        const kind = first ? itemKindOf({ pk: first.pk?.S ?? '', sk: first.sk?.S ?? '' }) : 'item';
        const out = await next(args);
        add(`${kind} ${name}`, units(out.output), 0);
        return out;
      }
      if (!writes || !key) {
        const out = await next(args);
        add(what, 0, units(out.output));
        return out;
      }
      const id = `${plain!.pk}\u0000${plain!.sk}`;
      const previous = locks.get(id) ?? Promise.resolve();
      let release = () => {};
      const mine = new Promise<void>((r) => (release = r));
      const chained = previous.then(() => mine);
      locks.set(id, chained);
      await previous;
      try {
        const before = await read(key);
        try {
          const out = await next(args);
          add(what, units(out.output), 0);
          const idx = indexWrites(before, await read(key));
          meter.indexWcu += idx;
          meter.by.get(what)!.indexWcu += idx;
          return out;
        } catch (err) {
          if (err instanceof ConditionalCheckFailedException) add(`${what} (condition failed)`, 1, 0);
          throw err;
        }
      } finally {
        release();
        if (locks.get(id) === chained) locks.delete(id);
      }
    },
    { step: 'initialize', name: 'benchBatchMeter' },
  );
  return meter;
}

/**
 * The mix of `callbacks` (the same generator and seed as the batch-of-one measure) through `processBatch` in
 * FIFO batches of `batchSize`, with task events on. `indexWrites`: index writes of one item change.
 */
export async function measureBatchCapacity(
  endpoint: string,
  tableName: string,
  callbacks: number,
  faults: MixFaults,
  batchSize: number,
  concurrency: number,
  indexWrites: (before: Item | null, after: Item | null) => number,
): Promise<BatchCapacityResult> {
  const client = dynamoClient(endpoint);
  const reader = dynamoClient(endpoint);
  try {
    const meter = meterClient(client, reader, tableName, indexWrites);
    const sends = generateMix(callbacks, 'bench-capacity', faults);
    const records = fifoRecords(sends, 0, Date.now());
    const batches = fifoBatches(records, batchSize);
    const store = new DynamoTaskWriter({ client, tableName });
    let publishes = 0;
    const events = {
      publish: async (list: readonly unknown[]) => {
        publishes += list.length;
      },
    };
    const noop = () => {};
    const log: Logger = { debug: noop, info: noop, warn: noop, error: noop };
    const outcomes: Record<string, number> = {};
    let tasks = 0;
    for (const batch of batches) {
      tasks += new Set(batch.map((r) => r.attributes.MessageGroupId)).size;
      const res = await processBatch({ Records: batch }, { store, log, concurrency, events });
      if (res.batchItemFailures.length > 0) throw new Error(`${res.batchItemFailures.length} record(s) failed`);
      for (const o of res.outcomes) outcomes[o] = (outcomes[o] ?? 0) + 1;
    }
    const n = records.length;
    return {
      callbacks: n,
      batches: batches.length,
      meanBatch: n / batches.length,
      meanTasksPerBatch: tasks / batches.length,
      outcomes,
      tableWcu: meter.tableWcu / n,
      indexWcu: meter.indexWcu / n,
      rcu: meter.rcu / n,
      publishes: publishes / n,
      breakdown: [...meter.by.entries()]
        .map(([what, b]) => ({
          what,
          wcu: b.wcu / n,
          indexWcu: b.indexWcu / n,
          rcu: b.rcu / n,
          requests: b.requests / n,
        }))
        .sort((a, b) => b.wcu + b.indexWcu + b.rcu - (a.wcu + a.indexWcu + a.rcu) || a.what.localeCompare(b.what)),
    };
  } finally {
    client.destroy();
    reader.destroy();
  }
}
