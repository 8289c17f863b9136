// `callbacks migrate` on a table the earlier layout wrote (test/fixtures/legacy-layout/table.json: three
// tasks, 54 deliveries, filled by that layout's own worker): every task comes out equal to the oracle of
// its callbacks with exact counts, also when part of its ledger has expired, when a run is interrupted at
// any write and run again, and when run twice; then the worker goes on applying callbacks to it.
import { readFileSync } from 'node:fs';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  DeleteTableCommand,
  GetItemCommand,
  ScanCommand,
  UpdateItemCommand,
  type AttributeValue,
  type ScanCommandOutput,
} from '@aws-sdk/client-dynamodb';
import { migrateTable } from '../lib/aws/dynamo/migrate.ts';
import { EVENTS_INDEXED } from '../lib/aws/dynamo/items.ts';
import { EventsIndex, Keys, tableDefinition } from '../lib/aws/dynamo/table.ts';
import { DynamoTaskStore } from '../lib/aws/dynamo/task-store.ts';
import { eventKey } from '../lib/domain/canonical.ts';
import { reduceTasks } from '../lib/domain/reduce-task.ts';
import { startLocalStack, type LocalStack } from '../devkit/local/stack.ts';
import type { Service } from '../lib/platform/services.ts';
import type { Task } from '../lib/domain/task.ts';
import { applyTasks, recordingTask, screenshotTask } from '../devkit/seeds/seed-tasks.ts';
import { faultyClient } from './support/faulty-client.ts';
import { inParallel } from '../lib/in-parallel.ts';
import { mustParse } from './support/lifecycles.ts';
import { putItems } from './support/put-items.ts';
import { runCliHere } from './support/cli-process.ts';
import { useQuietDynamo } from './support/quiet-dynamo.ts';
import { writePositions } from './support/size.ts';
import { withPendingVerifications } from './support/pending-verifications.ts';
import { sqsEvent, sqsRecord } from './support/sqs-events.ts';
import { TableClient } from '../lib/aws/dynamo/table-client.ts';
import { TaskSweeps } from '../lib/aws/dynamo/task-sweeps.ts';
import { defaultTimeSettings } from '../lib/domain/deadlines.ts';
import type { TaskEvent } from '../lib/domain/task-events.ts';
import { createLogger } from '../lib/log.ts';
import { sweep } from '../lib/sweeper/sweep.ts';
import { processBatch } from '../lib/worker/process-batch.ts';
import { createActiveTable } from '../devkit/local/dynamo.ts';

type Raw = Record<string, AttributeValue>;
const fixture = JSON.parse(readFileSync(new URL('./fixtures/legacy-layout/table.json', import.meta.url), 'utf8')) as {
  sends: { service: Service; body: Record<string, unknown> }[];
  items: Raw[];
};
const expected = reduceTasks(fixture.sends.map((s) => mustParse(s.service, s.body)));
const distinct = (taskId: string) =>
  new Set(fixture.sends.filter((s) => (s.body.recordId ?? s.body.imageId) === taskId).map((s) => eventKey(s.body)))
    .size;

const local = useQuietDynamo();
let tables = 0;

/** A table of its own holding the fixture's items, less those `drop` says expired. */
async function legacyTable(drop: (item: Raw, i: number) => boolean = () => false): Promise<string> {
  const tableName = `legacy-${++tables}`;
  await createActiveTable(local.db.client, tableDefinition(tableName));
  await putItems(
    local.db.client,
    tableName,
    fixture.items.filter((item, i) => !drop(item, i)),
  );
  return tableName;
}

async function scan(tableName: string): Promise<Raw[]> {
  const items: Raw[] = [];
  let start: Raw | undefined;
  do {
    const page: ScanCommandOutput = await local.db.client.send(
      new ScanCommand({ TableName: tableName, ExclusiveStartKey: start }),
    );
    items.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
  } while (start);
  return items;
}

async function expectMigrated(tableName: string, ledgerLeft: (taskId: string) => number) {
  const store = new DynamoTaskStore({ client: local.db.client, tableName });
  for (const task of expected) {
    expect(await store.getTask(task.id)).toEqual(task);
    // Listed under its appKey's room and session, with the other tasks there.
    for (const [query, same] of [
      [{ appKey: task.appKey, roomId: task.roomId! }, (t: Task) => t.roomId === task.roomId],
      [{ appKey: task.appKey, sessionId: task.sessionId! }, (t: Task) => t.sessionId === task.sessionId],
    ] as const) {
      const ids = (await store.listTasksPage(query, { limit: 50 })).items.map((s) => s.id).sort();
      const there = expected.filter((t) => t.appKey === task.appKey && same(t)).map((t) => t.id);
      expect({ query, ids }).toEqual({ query, ids: there.sort() });
      expect(ids).toContain(task.id);
    }
    expect(task.eventCount).toBe(distinct(task.id));
    expect((await store.listEvents(task.id)).length).toBe(ledgerLeft(task.id));
  }
  // No header or file of the earlier layout is left; its ledger stays as the raw archive.
  const left = (await scan(tableName)).filter((i) => i.pk!.S!.startsWith('TASK#') && /^(#|FILE#)/.test(i.sk!.S!));
  expect(left).toEqual([]);
}

test('every task equal to the oracle of its callbacks, counts exact; a second run finds nothing to do', async () => {
  const tableName = await legacyTable();
  const result = await migrateTable({ client: local.db.client, tableName });
  expect(result).toEqual({
    tasks: 3,
    rekeyed: 0,
    migrated: 3,
    callbacks: 48,
    carried: 0,
    counted: 0,
    indexed: 0,
    listed: 0,
    // Brought over unarmed: each is armed at its next deadline (its settle, a stall, a file's warning).
    armed: 3,
    failed: [],
  });
  await expectMigrated(tableName, distinct);
  expect(await migrateTable({ client: local.db.client, tableName })).toEqual({
    tasks: 0,
    rekeyed: 0,
    migrated: 0,
    callbacks: 0,
    carried: 0,
    counted: 0,
    indexed: 0,
    listed: 0,
    armed: 0,
    failed: [],
  });
  await expectMigrated(tableName, distinct);
  await local.db.client.send(new DeleteTableCommand({ TableName: tableName }));
});

test(
  'ledger entries past their retention: the task is still whole, the expired callbacks counted without their ' + 'body',
  async () => {
    // Every third ledger entry gone, as the TTL would have taken the oldest.
    let n = 0;
    const expired = new Map<string, number>();
    const tableName = await legacyTable((item) => {
      const sk = item.sk!.S!;
      if (!item.pk!.S!.startsWith('TASK#') || !sk.startsWith('EVENT#') || n++ % 3 !== 0) return false;
      const id = item.pk!.S!.slice('TASK#'.length);
      expired.set(id, (expired.get(id) ?? 0) + 1);
      return true;
    });
    const gone = [...expired.values()].reduce((a, b) => a + b, 0);
    expect(gone).toBeGreaterThan(10);
    const result = await migrateTable({ client: local.db.client, tableName });
    expect(result).toMatchObject({ tasks: 3, migrated: 3, callbacks: 48 - gone, carried: gone, failed: [] });
    await expectMigrated(tableName, (id) => distinct(id) - (expired.get(id) ?? 0));
  },
);

test('interrupted at writes across the run and run again: the same tasks, counts exact', async () => {
  const probe = await legacyTable();
  const counter = faultyClient(local.db.client, { failWrite: 0, when: 'after' });
  await migrateTable({ client: counter.client, tableName: probe, concurrency: 1 });
  const writes = counter.writes();
  expect(writes).toBeGreaterThan(50);
  // Each position on a table of its own, all at once: the runs share nothing but the emulator.
  await inParallel(writePositions(writes, 21), 8, async (k) => {
    const tableName = await legacyTable();
    const faulty = faultyClient(local.db.client, { failWrite: k, when: k % 2 ? 'after' : 'before' });
    const first = await migrateTable({ client: faulty.client, tableName, concurrency: 1 });
    expect(faulty.fired()).toBe(true);
    expect(first.failed).toHaveLength(1);
    const second = await migrateTable({ client: local.db.client, tableName });
    expect(second.failed).toEqual([]);
    await expectMigrated(tableName, distinct);
    await local.db.client.send(new DeleteTableCommand({ TableName: tableName }));
  });
}, 1_800_000);

test('the worker goes on with a migrated task: a redelivered callback is a duplicate, a new one counts', async () => {
  const tableName = await legacyTable();
  await migrateTable({ client: local.db.client, tableName });
  const store = new DynamoTaskStore({ client: local.db.client, tableName });
  const send = fixture.sends.find((s) => s.body.imageId)!;
  const redelivered = await store.applyCallback({
    callback: mustParse(send.service, send.body),
    raw: JSON.stringify(send.body),
    receivedAt: 1_763_900_000_000,
    verdict: 'valid',
    mode: 'enforce',
    requestId: null,
    messageId: 'again',
    replayKey: 'another-nonce',
  });
  expect(redelivered.outcome).toBe('duplicate');
  const later = { ...send.body, timestamp: Number(send.body.timestamp) + 1, code: 200 };
  const applied = await store.applyCallback({
    callback: mustParse(send.service, later),
    raw: JSON.stringify(later),
    receivedAt: 1_763_900_000_000,
    verdict: 'valid',
    mode: 'enforce',
    requestId: null,
    messageId: 'new',
    replayKey: 'yet-another-nonce',
  });
  expect(applied.outcome).toBe('applied');
  const id = String(send.body.imageId);
  const callbacks = [...fixture.sends.filter((s) => s.body.imageId === id).map((s) => mustParse(s.service, s.body))];
  callbacks.push(mustParse(send.service, later));
  expect(await store.getTask(id)).toEqual(reduceTasks(callbacks)[0]);
});

test('headers written before headers kept counts: read whole until migrate counts them, once', async () => {
  const tableName = await legacyTable(() => true);
  const store = new DynamoTaskStore({ client: local.db.client, tableName });
  const task = recordingTask({
    id: 'rec-uncounted',
    appKey: 'app-a',
    roomId: 'room-u',
    sessionId: 's-u',
    userId: '',
    at: Date.now() - 3_600_000,
    outcome: 'completed',
  });
  await applyTasks(store, [task]);
  const before = await store.getTask(task.id);
  expect(before?.status).toBe('completed');
  // As the previous version wrote it: no counts in the header.
  const key = { pk: { S: Keys.taskPk(task.id) }, sk: { S: Keys.headerSk('app-a') } };
  await local.db.client.send(
    new UpdateItemCommand({
      TableName: tableName,
      Key: key,
      UpdateExpression: 'REMOVE nFiles, nPending, nUploaded, nFailed, nEvents, doneAt',
    }),
  );
  // Read whole from its items meanwhile: the same task.
  expect(await store.getTask(task.id)).toEqual(before);
  expect(await migrateTable({ client: local.db.client, tableName, dryRun: true })).toMatchObject({ counted: 1 });
  expect(await migrateTable({ client: local.db.client, tableName })).toMatchObject({ counted: 1, failed: [] });
  const header = (await local.db.client.send(new GetItemCommand({ TableName: tableName, Key: key }))).Item!;
  expect(Number(header.nEvents?.N)).toBe(before!.eventCount);
  expect(Number(header.nFiles?.N)).toBe(before!.files.length);
  expect(await store.getTask(task.id)).toEqual(before);
  expect((await migrateTable({ client: local.db.client, tableName })).counted).toBe(0);
});

test('callbacks not keyed by time: listed from their keys, in order, until migrate keys them, once', async () => {
  const tableName = await legacyTable(() => true);
  const store = new DynamoTaskStore({ client: local.db.client, tableName });
  const task = screenshotTask({
    id: 'img-unindexed',
    appKey: 'app-a',
    roomId: 'room-i',
    sessionId: 's-i',
    at: Date.now() - 3_600_000,
    images: 12,
  });
  await applyTasks(store, [task]);
  const listed = await store.listEvents(task.id);
  expect(listed).toHaveLength((await store.getTask(task.id))!.eventCount);
  expect(listed.length).toBeGreaterThan(12);
  // As the previous version wrote them: no index keys on the deliveries, no mark on the header.
  const key = { pk: { S: Keys.taskPk(task.id) }, sk: { S: Keys.headerSk('app-a') } };
  await local.db.client.send(
    new UpdateItemCommand({ TableName: tableName, Key: key, UpdateExpression: `REMOVE ${EVENTS_INDEXED}` }),
  );
  const deliveries = (await scan(tableName)).filter((i) => i.pk!.S!.startsWith(Keys.deliveryPk('app-a', '')));
  expect(deliveries).toHaveLength(listed.length);
  for (const d of deliveries)
    await local.db.client.send(
      new UpdateItemCommand({
        TableName: tableName,
        Key: { pk: d.pk!, sk: d.sk! },
        UpdateExpression: `REMOVE ${EventsIndex.pk}, ${EventsIndex.sk}`,
      }),
    );
  expect(await store.listEvents(task.id)).toEqual(listed);

  expect(await migrateTable({ client: local.db.client, tableName, dryRun: true })).toMatchObject({ indexed: 1 });
  expect(await migrateTable({ client: local.db.client, tableName })).toMatchObject({ indexed: 1, failed: [] });
  const header = (await local.db.client.send(new GetItemCommand({ TableName: tableName, Key: key }))).Item!;
  expect(header[EVENTS_INDEXED]).toEqual({ N: '1' });
  const keyed = (await scan(tableName)).filter((i) => i.pk!.S!.startsWith(Keys.deliveryPk('app-a', '')));
  expect(keyed.every((d) => d[EventsIndex.pk]?.S === Keys.eventsGsi('app-a', task.id))).toBe(true);
  expect(await store.listEvents(task.id)).toEqual(listed);
  expect((await migrateTable({ client: local.db.client, tableName })).indexed).toBe(0);
});

test('room and session index keys without the appKey: listings miss the task until migrate rewrites them', async () => {
  const tableName = await legacyTable(() => true);
  const store = new DynamoTaskStore({ client: local.db.client, tableName });
  const tasks = ['app-a', 'app-b'].map((appKey, i) =>
    recordingTask({
      id: `rec-earlier-keys-${i}`,
      appKey,
      roomId: 'room-earlier',
      sessionId: 's-earlier',
      userId: '',
      at: Date.now() - 3_600_000,
      outcome: 'completed',
    }),
  );
  await applyTasks(store, tasks);
  // As the previous version wrote them: the room and session alone.
  for (const task of tasks)
    await local.db.client.send(
      new UpdateItemCommand({
        TableName: tableName,
        Key: { pk: { S: `TASK#${task.id}` }, sk: { S: `H#${task.appKey.length}:${task.appKey}` } },
        UpdateExpression: 'SET g1pk = :r, g2pk = :s',
        ExpressionAttributeValues: { ':r': { S: 'ROOM#room-earlier' }, ':s': { S: 'SESSION#s-earlier' } },
      }),
    );
  const listed = async () =>
    Promise.all(
      tasks.flatMap((t) => [
        store.listTasksPage({ appKey: t.appKey, roomId: 'room-earlier' }, { limit: 10 }),
        store.listTasksPage({ appKey: t.appKey, sessionId: 's-earlier' }, { limit: 10 }),
      ]),
    ).then((pages) => pages.map((p) => p.items.map((s) => s.id)));
  expect(await listed()).toEqual([[], [], [], []]);

  expect(await migrateTable({ client: local.db.client, tableName, dryRun: true })).toMatchObject({ rekeyed: 2 });
  expect(await listed()).toEqual([[], [], [], []]);
  expect(await migrateTable({ client: local.db.client, tableName })).toEqual({
    tasks: 0,
    rekeyed: 2,
    migrated: 0,
    callbacks: 0,
    carried: 0,
    counted: 0,
    indexed: 0,
    listed: 0,
    armed: 0,
    failed: [],
  });
  const [a, b] = tasks.map((t) => [t.id]);
  expect(await listed()).toEqual([a, a, b, b]);
  expect((await migrateTable({ client: local.db.client, tableName })).rekeyed).toBe(0);
  // Without an appKey, the room covers both appKeys' tasks.
  const both = (await store.listTasksPage({ roomId: 'room-earlier' }, { limit: 10 })).items.map((s) => s.id);
  expect(both.sort()).toEqual(tasks.map((t) => t.id).sort());
  await local.db.client.send(new DeleteTableCommand({ TableName: tableName }));
});

test('headers written before the listings by time: listed once migrate gives them their entries', async () => {
  const tableName = await legacyTable(() => true);
  const store = new DynamoTaskStore({ client: local.db.client, tableName });
  const at = Date.now() - 3 * 3_600_000;
  const task = recordingTask({
    id: 'rec-unlisted',
    appKey: 'app-u',
    roomId: 'room-u',
    sessionId: 's-u',
    userId: 'u',
    at,
    outcome: 'completed',
  });
  await applyTasks(store, [task]);
  // As a header written before these listings: no change recorded (`ca`), so listed in no hour.
  await local.db.client.send(
    new UpdateItemCommand({
      TableName: tableName,
      Key: { pk: { S: Keys.taskPk(task.id) }, sk: { S: Keys.headerSk(task.appKey) } },
      UpdateExpression: 'REMOVE ca',
    }),
  );
  const byTime = async () =>
    Promise.all([
      store.listTasksPage({ updatedSince: at - 60_000 }, { limit: 10 }),
      store.listTasksPage({ endedSince: at - 60_000 }, { limit: 10 }),
    ]).then((pages) => pages.map((p) => p.items.map((s) => s.id)));
  expect(await byTime()).toEqual([[], []]);
  expect(await migrateTable({ client: local.db.client, tableName, dryRun: true })).toMatchObject({ listed: 1 });
  expect(await migrateTable({ client: local.db.client, tableName })).toMatchObject({ listed: 1, failed: [] });
  expect(await byTime()).toEqual([[task.id], [task.id]]);
  expect((await migrateTable({ client: local.db.client, tableName })).listed).toBe(0);
  await local.db.client.send(new DeleteTableCommand({ TableName: tableName }));
});

test('tasks written before tasks were armed: the sweeper finds them once migrate arms them, not before', async () => {
  const tableName = await legacyTable(() => true);
  const clock = { now: 0 };
  const store = new DynamoTaskStore({ client: local.db.client, tableName, now: () => clock.now });
  const log = createLogger('test');
  const published: TaskEvent[] = [];
  const events = { publish: async (batch: readonly TaskEvent[]) => void published.push(...batch) };
  const sweeper = {
    sweeps: new TaskSweeps(new TableClient(local.db.client, tableName)),
    events,
    time: defaultTimeSettings,
    log,
    lookBackMs: 3 * 86_400_000,
  };
  const start = JSON.parse(readFileSync(new URL('./fixtures/screenshot-1-start.json', import.meta.url), 'utf8'));
  const open = { ...start, imageId: 'img-unarmed' };
  // A start that failed: nothing of it can become due, so nothing to arm.
  const failed = { ...start, imageId: 'img-unarmed-failed', code: 1001, errorMessage: 'start failed' };
  const t0 = Number(start.timestamp);
  clock.now = t0 + 2_000;
  const records = [open, failed].map((b, i) =>
    sqsRecord('screenshot', b, { groupId: b.imageId, sequenceNumber: String(10n ** 19n + BigInt(i)) }),
  );
  expect(
    (await processBatch(sqsEvent(records), { store, log, events, now: () => clock.now })).batchItemFailures,
  ).toEqual([]);
  // As headers written before tasks were armed: no `db`.
  for (const id of [open.imageId, failed.imageId])
    await local.db.client.send(
      new UpdateItemCommand({
        TableName: tableName,
        Key: { pk: { S: Keys.taskPk(id) }, sk: { S: Keys.headerSk(start.appKey) } },
        UpdateExpression: 'REMOVE db',
      }),
    );
  const stalls = () => published.filter((e) => e.type === 'task.stalled').map((e) => e.task.id);
  // slicesSec 10: stalled 15 minutes after its start. Unarmed, no sweep finds it.
  clock.now = t0 + 30 * 60_000;
  await sweep(clock.now, sweeper);
  expect(stalls()).toEqual([]);
  expect((await store.getTask(open.imageId))!.stalledSince).toBeNull();

  const migrate = (dryRun = false) =>
    migrateTable({ client: local.db.client, tableName, now: () => clock.now, dryRun });
  expect(await migrate(true)).toMatchObject({ armed: 1, failed: [] });
  clock.now += 5 * 60_000;
  await sweep(clock.now, sweeper);
  expect(stalls()).toEqual([]);
  expect(await migrate()).toMatchObject({ armed: 1, failed: [] });
  clock.now += 5 * 60_000;
  await sweep(clock.now, sweeper);
  expect(stalls()).toEqual([open.imageId]);
  expect((await store.getTask(open.imageId))!.stalledSince).toBe(t0 + 15 * 60_000);
  expect((await store.getTask(failed.imageId))!.stalledSince).toBeNull();
  // Armed once: a second run finds nothing to arm (the stalled task has nothing left due, the failed one never had).
  expect(await migrate()).toMatchObject({ armed: 0, failed: [] });
  await local.db.client.send(new DeleteTableCommand({ TableName: tableName }));
}, 120_000);

describe('callbacks migrate, as a user runs it', () => {
  let dir: string;
  let stack: LocalStack;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'callbacks-migrate-'));
    stack = await startLocalStack({ port: 0, memory: true, cwd: dir, quiet: true });
    const client = stack.tableClient();
    await putItems(client, stack.info.tableName, fixture.items);
  });
  afterAll(async () => {
    await stack.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  // cli/main.ts's run in this process, as bin/callbacks.js runs it, without the AWS settings of this shell.
  const cli = (args: string[]) => runCliHere(args, { cwd: dir, env: { NO_COLOR: '1' } });

  test('--dry-run counts, asks for --yes when not at a terminal, then brings everything over once', async () => {
    expect(JSON.parse((await cli(['migrate', '--dry-run', '--json'])).stdout)).toEqual({
      tasks: 3,
      rekeyed: 0,
      migrated: 3,
      callbacks: 48,
      carried: 0,
      counted: 0,
      indexed: 0,
      listed: 0,
      armed: 0,
      failed: [],
    });
    const refused = await cli(['migrate']);
    expect(refused).toMatchObject({
      code: 1,
      stderr: 'callbacks: migrate rewrites tasks: pass --yes to confirm when not at a terminal\n',
    });
    const run = await cli(['migrate', '--yes']);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).toBe(
      'Brought over 3 tasks of 3: 48 callbacks with their raw bodies, 0 counted without (past their retention).\n' +
        'Armed 3 tasks at their next deadline, for the sweeper (written before tasks were armed).\n',
    );
    expect((await cli(['migrate', '--yes'])).stdout).toMatch(
      new RegExp(
        '^No task of the earlier layout, no index key to rewrite, no header to count, no callback to key by ' +
          'time, no task to list by time and no task to arm in .*: nothing to do\\.\n$',
      ),
    );
    const task = JSON.parse((await cli(['tasks', 'get', expected[0]!.id, '--json'])).stdout);
    expect(task).toEqual(withPendingVerifications(expected[0]!));
  });
});
