// Task ids of about 1,000 to 2,040 bytes: short enough for a partition key (2,048 bytes), too long for the sort
// key of their task's time bucket entries (`<scope>#<id>`, 1,024 bytes). Such a callback is quarantined before its
// first write, at the byte; an arm that cannot be written fails its own task's records only, not its batch-mates';
// a sweep that meets a task DynamoDB will not re-arm (one a worker created before the check) logs it and goes on.
import { Buffer } from 'node:buffer';
import { readFileSync } from 'node:fs';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoTaskStore } from '../lib/aws/dynamo/read/task-store.ts';
import { TableClient, noCapacity } from '../lib/aws/dynamo/table/table-client.ts';
import { Keys, tableDefinition } from '../lib/aws/dynamo/table/table.ts';
import { TaskSweeps } from '../lib/aws/dynamo/time/task-sweeps.ts';
import {
  bucketEntryItems,
  readBucketEntries,
  readSweepPosition,
  taskEntrySk,
} from '../lib/aws/dynamo/time/time-buckets.ts';
import { timeOf } from '../lib/aws/dynamo/time/time-items.ts';
import { DUE_BUCKET_MS, defaultTimeSettings } from '../lib/domain/deadlines.ts';
import type { QuarantineEntry } from '../lib/domain/task-store.ts';
import { createLogger, type Logger } from '../lib/log.ts';
import { sweep } from '../lib/sweeper/sweep.ts';
import { processBatch } from '../lib/worker/process-batch.ts';
import { createActiveTable } from '../devkit/local/dynamo.ts';
import { useQuietDynamo } from './support/quiet-dynamo.ts';
import { sqsEvent, sqsRecord } from './support/sqs-events.ts';

type Body = Record<string, unknown>;
const local = useQuietDynamo();
const log = createLogger('test');
const MIN = 60_000;
const APP_KEY = 'demo-app';
const start = JSON.parse(
  readFileSync(new URL('fixtures/recording-1-start-mix.json', import.meta.url), 'utf8'),
) as Body & { timestamp: number };
const T0 = start.timestamp;

/** DynamoDB's limit on a sort key, in UTF-8 bytes. */
const MAX_SORT_KEY_BYTES = 1024;
/** The longest id whose entries' sort key (`8:demo-app#<id>`) DynamoDB stores. */
const LONGEST_ID_BYTES = MAX_SORT_KEY_BYTES - Buffer.byteLength(taskEntrySk({ appKey: APP_KEY, id: '' }), 'utf8');

let ids = 0;
/** A recordId of exactly `bytes` UTF-8 bytes, three-byte characters among them (bytes are counted, not characters). */
function idOfBytes(bytes: number): string {
  const head = `rec-long-${++ids}-${'录'.repeat(100)}`;
  const id = head + 'x'.repeat(bytes - Buffer.byteLength(head, 'utf8'));
  expect(Buffer.byteLength(id, 'utf8')).toBe(bytes);
  return id;
}

const startOf = (recordId: string, at = T0): Body => ({ ...start, recordId, timestamp: at });
let seq = 10n ** 19n;
const record = (body: Body, opts: { receiveCount?: number; messageId?: string } = {}) =>
  sqsRecord('recording', body, {
    groupId: String(body.recordId).slice(0, 40),
    sequenceNumber: String(seq++),
    receivedAt: Date.now(),
    ...opts,
  });

/** The tasks named in the DUE entries from `from` to `to`. */
async function armed(client: DynamoDBClient, tableName: string, from: number, to: number): Promise<string[]> {
  const named: string[] = [];
  for await (const e of readBucketEntries(new TableClient(client, tableName), 'DUE', from, to)) named.push(e.id);
  return named;
}

/** A logger that keeps the events it is given (and their fields), as the log lines would carry them. */
function keptLog(): { log: Logger; lines: { level: string; event: string; fields: Record<string, unknown> }[] } {
  const lines: { level: string; event: string; fields: Record<string, unknown> }[] = [];
  const keep =
    (level: string) =>
    (event: string, fields: Record<string, unknown> = {}) =>
      void lines.push({ level, event, fields });
  return { log: { debug: keep('debug'), info: keep('info'), warn: keep('warn'), error: keep('error') }, lines };
}

test("a task id as long as its entries' key allows is stored, armed; a byte more is quarantined", async () => {
  const store = new DynamoTaskStore({ client: local.db.client, tableName: local.db.tableName });
  const fits = idOfBytes(LONGEST_ID_BYTES);
  const over = idOfBytes(LONGEST_ID_BYTES + 1);
  const neighbour = `rec-neighbour-${ids}`;
  const before = Date.now();
  const res = await processBatch(
    sqsEvent([record(startOf(fits)), record(startOf(over), { messageId: 'msg-over' }), record(startOf(neighbour))]),
    { store, log },
  );
  expect(res.batchItemFailures).toEqual([]);
  expect(res.outcomes).toEqual(['applied', 'quarantined', 'applied']);
  expect((await store.getTask(fits))?.eventCount).toBe(1);
  expect(await store.getTask(over)).toBeNull();
  expect(await store.getTask(neighbour)).toMatchObject({ status: 'recording', eventCount: 1 });
  // Both tasks created are armed: the sweeper will find their deadlines.
  const named = await armed(local.db.client, local.db.tableName, before, Date.now() + 30 * MIN);
  expect(named).toEqual(expect.arrayContaining([fits, neighbour]));
  const entries: QuarantineEntry[] = [];
  for await (const e of store.listQuarantine({ sinceDays: 1 })) if (e.messageId === 'msg-over') entries.push(e);
  expect(entries).toHaveLength(1);
  expect(entries[0]!.reason).toBe('invalid_callback');
  expect(entries[0]!.detail).toBe(
    "recordId is too long to be stored: it keys its task's time bucket entries, with the appKey " +
      `(${MAX_SORT_KEY_BYTES + 1} bytes; a DynamoDB sort key holds at most ${MAX_SORT_KEY_BYTES})`,
  );
});

test("an arm that cannot be written fails its own task's records only: its batch-mates applied, armed", async () => {
  const stuck = `rec-arm-stuck-${++ids}`;
  const fine = `rec-arm-fine-${ids}`;
  // DynamoDB throttles every write of an entry naming `stuck` (a fault the emulator cannot produce on demand).
  const names = (item: Record<string, any> | undefined) =>
    item !== undefined &&
    /^(DUE|CHG)#/.test(item.pk?.S ?? '') &&
    (String(item.sk?.S).endsWith(`#${stuck}`) || JSON.stringify(item.t ?? {}).includes(stuck));
  const send = local.db.client.send.bind(local.db.client) as (command: any) => Promise<any>;
  let refused = 0;
  const client = new Proxy(local.db.client, {
    get(target, prop, receiver) {
      if (prop !== 'send') return Reflect.get(target, prop, receiver);
      return async (command: any) => {
        const input = command?.input;
        const items: (Record<string, any> | undefined)[] = [
          input?.Item,
          ...Object.values((input?.RequestItems ?? {}) as Record<string, any[]>)
            .flat()
            .map((r) => r.PutRequest?.Item),
        ];
        if (items.some(names)) {
          refused += 1;
          throw Object.assign(new Error('Rate of requests exceeds the allowed throughput'), {
            name: 'ProvisionedThroughputExceededException',
            $fault: 'client',
          });
        }
        return send(command);
      };
    },
  });
  const before = Date.now();
  const throttled = new DynamoTaskStore({ client, tableName: local.db.tableName });
  const first = [record(startOf(stuck)), record(startOf(fine)), record({ ...startOf(fine, T0 + 1), type: 2 })];
  const res = await processBatch(sqsEvent(first), { store: throttled, log });
  expect(refused).toBeGreaterThan(0);
  expect(res.outcomes).toEqual(['failed', 'applied', 'applied']);
  expect(res.batchItemFailures).toEqual([{ itemIdentifier: first[0]!.messageId }]);
  expect(await armed(local.db.client, local.db.tableName, before, Date.now() + 30 * MIN)).toContain(fine);

  // Its record comes again, once DynamoDB takes the writes: the task, found created, is armed then.
  const store = new DynamoTaskStore({ client: local.db.client, tableName: local.db.tableName });
  const again = { ...first[0]!, attributes: { ...first[0]!.attributes, ApproximateReceiveCount: '2' } };
  const retried = await processBatch(sqsEvent([again]), { store, log });
  expect(retried.batchItemFailures).toEqual([]);
  expect(await armed(local.db.client, local.db.tableName, before, Date.now() + 30 * MIN)).toContain(stuck);
  expect(await store.getTask(stuck)).toMatchObject({ status: 'recording', eventCount: 1 });
});

test('a sweep meeting a task DynamoDB will not re-arm logs it, leaves it behind, moves its position on', async () => {
  const tableName = `long-ids-sweep-${++ids}`;
  await createActiveTable(local.db.client, tableDefinition(tableName));
  const clock = { now: T0 + 10_000 };
  const store = new DynamoTaskStore({ client: local.db.client, tableName, now: () => clock.now });
  const short = `rec-sweep-short-${ids}`;
  const res = await processBatch(sqsEvent([record(startOf(short))]), { store, log, now: () => clock.now });
  expect(res.batchItemFailures).toEqual([]);
  // What a worker left before keys were checked: a task whose id is too long for its entries' keys, created with
  // its arm and named in an entry shared with another task of its batch.
  const table = new TableClient(local.db.client, tableName);
  const header = (await table.get({ pk: Keys.taskPk(short), sk: Keys.headerSk(APP_KEY) }, noCapacity()))!;
  // Characters of one byte: dynalite measures a key in characters, DynamoDB in bytes.
  const long = `rec-sweep-long-${ids}-${'x'.repeat(LONGEST_ID_BYTES + 200)}`;
  await table.put({ ...header, pk: Keys.taskPk(long) }, noCapacity());
  const bucket = timeOf(header).armed!;
  const shared = bucketEntryItems(
    'DUE',
    bucket,
    [
      { appKey: APP_KEY, id: long },
      { appKey: APP_KEY, id: `rec-sweep-gone-${ids}` },
    ],
    'earlier',
  );
  expect(shared).toHaveLength(1);
  await table.put(shared[0]!, noCapacity());

  const kept = keptLog();
  const deps = () => ({
    sweeps: new TaskSweeps(table),
    time: defaultTimeSettings,
    log: kept.log,
    lookBackMs: 60 * MIN,
  });
  clock.now = bucket + 2 * DUE_BUCKET_MS;
  const first = await sweep(clock.now, deps());
  expect(first).toMatchObject({ refused: 1, failed: 0 });
  const refusals = kept.lines.filter((l) => l.event === 'task_sweep_refused');
  expect(refusals).toHaveLength(1);
  expect(refusals[0]).toMatchObject({
    level: 'error',
    fields: { appKey: APP_KEY, id: long, bucket: new Date(bucket).toISOString() },
  });
  expect(String(refusals[0]!.fields.error)).toMatch(/1024/);
  // The position is not held at that bucket: the next sweep starts after it, and meets the task no more.
  const current = Math.floor(clock.now / DUE_BUCKET_MS) * DUE_BUCKET_MS;
  expect(await readSweepPosition(table, 'DUE', noCapacity())).toBe(current - DUE_BUCKET_MS);
  clock.now += DUE_BUCKET_MS;
  expect(await sweep(clock.now, deps())).toMatchObject({ refused: 0, failed: 0 });
  // The task the worker made the ordinary way was swept and re-armed as usual.
  expect(await store.getTask(short)).toMatchObject({ status: 'recording', eventCount: 1 });
});
