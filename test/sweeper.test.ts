// The facts of time through the real worker, store and sweeper on dynalite (docs/task-store.md, Deadlines):
// a failed upload warned about and lost, then recovered; a stalled task resumed; a completed task settled and
// unsettled; and two sweepers at once over many tasks, each fact published once.
import { readFileSync } from 'node:fs';
import { tableDefinition } from '../lib/aws/dynamo/table/table.ts';
import { TableClient } from '../lib/aws/dynamo/table/table-client.ts';
import { TaskSweeps } from '../lib/aws/dynamo/time/task-sweeps.ts';
import { DynamoTaskStore } from '../lib/aws/dynamo/read/task-store.ts';
import { FILE_HOLD_MS } from '../lib/platform/delivery.ts';
import { defaultTimeSettings } from '../lib/domain/deadlines.ts';
import type { TaskEvent } from '../lib/domain/task-events.ts';
import { createLogger } from '../lib/log.ts';
import { SWEEP_RESERVE_MS, sweep, type SweeperDeps } from '../lib/sweeper/sweep.ts';
import { processBatch } from '../lib/worker/process-batch.ts';
import { useQuietDynamo } from './support/quiet-dynamo.ts';
import { sqsEvent, sqsRecord } from './support/sqs-events.ts';
import { createActiveTable } from '../devkit/local/dynamo.ts';

type Body = Record<string, any>;
const local = useQuietDynamo();
const log = createLogger('test');
const fixture = (name: string): Body =>
  JSON.parse(readFileSync(new URL(`fixtures/${name}.json`, import.meta.url), 'utf8')) as Body;
const MIN = 60_000;

let tables = 0;

/** A world with its own clock and table (its sweep position its own): the worker's store and the sweepers read it. */
async function world() {
  const tableName = `sweeper-${++tables}`;
  await createActiveTable(local.db.client, tableDefinition(tableName));
  const clock = { now: 0 };
  const published: TaskEvent[] = [];
  const events = { publish: async (batch: readonly TaskEvent[]) => void published.push(...batch) };
  const store = new DynamoTaskStore({ client: local.db.client, tableName, now: () => clock.now });
  const sweeper = (): SweeperDeps => ({
    sweeps: new TaskSweeps(new TableClient(local.db.client, tableName)),
    events,
    time: defaultTimeSettings,
    log,
    // A world's first sweep reads back this far, a Query a bucket: its tasks' deadlines are all ahead of it.
    lookBackMs: 60 * MIN,
  });
  let seq = 10n ** 19n;
  const deliver = async (service: 'recording' | 'screenshot', bodies: Body[]) => {
    const records = bodies.map((b) =>
      sqsRecord(service, b, { groupId: String(b.recordId ?? b.imageId), sequenceNumber: String(seq++) }),
    );
    const res = await processBatch(sqsEvent(records), { store, log, events, now: () => clock.now });
    expect(res.batchItemFailures).toEqual([]);
  };
  const typesOf = (id: string) => published.filter((e) => e.task.id === id).map((e) => e.type);
  return { clock, published, store, sweeper, deliver, typesOf };
}

/** The task's row as `tasks list` shows it. */
async function rowOf(store: DynamoTaskStore, id: string) {
  for await (const t of store.listTasks({ appKey: 'demo-app', roomId: 'room-1024' })) if (t.id === id) return t;
  return null;
}

const recording = (id: string, name: string, extra: Body = {}): Body => ({ ...fixture(name), recordId: id, ...extra });

test('a failed upload is warned about once, lost at its purgeAt, and a later success still wins', async () => {
  const w = await world();
  const id = 'rec-sweep-lost';
  const failed = recording(id, 'recording-4-upload-failed');
  const t0 = failed.timestamp as number;
  w.clock.now = t0 + 10_000;
  await w.deliver('recording', [
    recording(id, 'recording-1-start-mix'),
    recording(id, 'recording-2-slice'),
    recording(id, 'recording-4-upload-ok'),
    recording(id, 'recording-3-end'),
    failed,
  ]);
  await sweep(w.clock.now, w.sweeper());
  const purgeAt = t0 + FILE_HOLD_MS;
  // Every sweep of the day, as the schedule runs them: the warning comes 2 hours before purgeAt, once.
  for (w.clock.now += 5 * MIN; w.clock.now < purgeAt - 2 * 3_600_000; w.clock.now += 60 * MIN)
    await sweep(w.clock.now, w.sweeper());
  expect(w.typesOf(id)).not.toContain('file.purge_warning');
  w.clock.now = purgeAt - 2 * 3_600_000 + 6 * MIN;
  await sweep(w.clock.now, w.sweeper());
  await sweep(w.clock.now + MIN, w.sweeper());
  const warnings = w.published.filter((e) => e.type === 'file.purge_warning' && e.task.id === id);
  expect(warnings).toHaveLength(1);
  expect(warnings[0]!.warning).toEqual({
    purgeAt,
    storageChangeDelayMs: 30 * MIN,
    message: expect.stringContaining(new Date(purgeAt).toISOString()),
  });
  expect(warnings[0]!.file!.fileName).toBe(failed.output && (failed.output as Body).fileName);

  w.clock.now = purgeAt + 6 * MIN;
  await sweep(w.clock.now, w.sweeper());
  await sweep(w.clock.now + MIN, w.sweeper());
  const lost = w.published.filter((e) => e.type === 'file.lost' && e.task.id === id);
  expect(lost).toHaveLength(1);
  expect(lost[0]!.file!.upload).toBe('lost');
  expect(lost[0]!.task.files).toMatchObject({ failed: 1, lost: 1 });
  // The loss comes alone: the warning was published before, and no sweep crashed since.
  expect(w.published.filter((e) => e.type === 'file.purge_warning' && e.task.id === id)).toHaveLength(1);
  const task = (await w.store.getTask(id))!;
  expect(task.status).toBe('upload_failed');
  expect(task.files.map((f) => f.upload).sort()).toEqual(['lost', 'uploaded']);
  expect(task.counts).toEqual({ total: 2, pending: 0, uploaded: 1, failed: 1, lost: 1 });
  expect(await rowOf(w.store, id)).toMatchObject({ failedFiles: 1, lostFiles: 1 });

  // A late success (a skewed clock): the file is uploaded again, and the next sweep counts no lost file.
  const late: Body = { ...recording(id, 'recording-4-upload-ok'), timestamp: t0 + FILE_HOLD_MS + 60_000 };
  (late.output as Body) = { ...(failed.output as Body), fileUrl: 'https://storage.example.com/late.mp4' };
  await w.deliver('recording', [late]);
  expect(w.typesOf(id)).toContain('file.upload_recovered');
  await sweep(w.clock.now + 6 * MIN, w.sweeper());
  const after = (await w.store.getTask(id))!;
  expect(after.status).toBe('completed');
  expect(after.files.map((f) => f.upload)).toEqual(['uploaded', 'uploaded']);
  expect(after.counts).toEqual({ total: 2, pending: 0, uploaded: 2, failed: 0, lost: 0 });
  expect(await rowOf(w.store, id)).toMatchObject({ failedFiles: 0, lostFiles: 0 });
}, 120_000);

test('a task without callbacks for its stall time is stalled once, and resumed by the next callback', async () => {
  const w = await world();
  const id = 'img-sweep-stall';
  const start: Body = { ...fixture('screenshot-1-start'), imageId: id };
  const t0 = start.timestamp as number;
  w.clock.now = t0 + 2_000;
  await w.deliver('screenshot', [start]);
  // slicesSec 10: 3 × 10 s is under the 15-minute minimum.
  const stalledSince = t0 + 15 * MIN;
  for (w.clock.now += 5 * MIN; w.clock.now < stalledSince; w.clock.now += 5 * MIN)
    await sweep(w.clock.now, w.sweeper());
  expect(w.typesOf(id)).not.toContain('task.stalled');
  w.clock.now = stalledSince + 6 * MIN;
  await sweep(w.clock.now, w.sweeper());
  await sweep(w.clock.now + 5 * MIN, w.sweeper());
  const stalled = w.published.filter((e) => e.type === 'task.stalled' && e.task.id === id);
  expect(stalled).toHaveLength(1);
  expect(stalled[0]!.stall).toEqual({ stalledSince, stallMs: 15 * MIN, lastCallbackAt: t0 });
  expect((await w.store.getTask(id))!.stalledSince).toBe(stalledSince);

  const image: Body = { ...fixture('screenshot-4-upload-ok'), imageId: id, timestamp: stalledSince + 10 * MIN };
  await w.deliver('screenshot', [image]);
  const resumed = w.published.filter((e) => e.type === 'task.resumed' && e.task.id === id);
  expect(resumed).toHaveLength(1);
  expect(resumed[0]!.stall).toMatchObject({ stalledSince, lastCallbackAt: image.timestamp });
  expect((await w.store.getTask(id))!.stalledSince).toBeNull();
  // Stalled again, later: a new pair of ids.
  w.clock.now = (image.timestamp as number) + 21 * MIN;
  await sweep(w.clock.now, w.sweeper());
  const again = w.published.filter((e) => e.type === 'task.stalled' && e.task.id === id);
  expect(again).toHaveLength(2);
  expect(new Set(again.map((e) => e.id)).size).toBe(2);
}, 120_000);

test("a sweep out of time stops at a bucket's start; the next goes on from there", async () => {
  const w = await world();
  const start = fixture('screenshot-1-start');
  const t0 = start.timestamp as number;
  const ids = ['img-cut-a', 'img-cut-b', 'img-cut-c'];
  w.clock.now = t0;
  await sweep(w.clock.now, w.sweeper());
  // Three tasks half an hour apart: their deadlines lie in three buckets.
  for (const [i, id] of ids.entries()) {
    w.clock.now = t0 + i * 30 * MIN;
    await w.deliver('screenshot', [{ ...start, imageId: id, timestamp: w.clock.now }]);
  }
  const stalled = async () => {
    const found: string[] = [];
    for (const id of ids) if ((await w.store.getTask(id))!.stalledSince !== null) found.push(id);
    return found;
  };
  // Time for the first bucket with entries only: the second one's first entry finds the invocation nearly over.
  let asked = 0;
  const timeLeft = () => (++asked === 1 ? 60_000 : SWEEP_RESERVE_MS - 1);
  w.clock.now = t0 + 3 * 60 * MIN;
  const cut = await sweep(w.clock.now, w.sweeper(), timeLeft);
  expect(cut).toMatchObject({ cutShort: true, swept: 1, stalled: 1 });
  expect(await stalled()).toEqual(['img-cut-a']);
  const next = await sweep(w.clock.now + 1000, w.sweeper(), () => 60_000);
  expect(next).toMatchObject({ cutShort: false, swept: 2, stalled: 2 });
  expect(next.from).toBeGreaterThan(cut.from);
  expect(await stalled()).toEqual(ids);
  expect(w.published.filter((e) => e.type === 'task.stalled').map((e) => e.task.id)).toEqual(ids);
}, 120_000);

test('an older callback leaves a stalled task stalled: no resume, and its stall is published once', async () => {
  const w = await world();
  const id = 'img-sweep-stall-old';
  const start: Body = { ...fixture('screenshot-1-start'), imageId: id };
  const t0 = start.timestamp as number;
  const image = (at: number, name: string): Body => {
    const body: Body = { ...fixture('screenshot-4-upload-ok'), imageId: id, timestamp: at };
    (body.output as Body) = { ...(body.output as Body), fileName: name };
    return body;
  };
  w.clock.now = t0 + 2_000;
  // The latest callback first: the stall is measured from it (15 minutes: slicesSec 10).
  await w.deliver('screenshot', [start, image(t0 + 5 * MIN, 'latest.jpg')]);
  const stalledSince = t0 + 20 * MIN;
  w.clock.now = stalledSince + 6 * MIN;
  await sweep(w.clock.now, w.sweeper());
  const stallEvents = () =>
    w.published.filter((e) => e.task.id === id && (e.type === 'task.stalled' || e.type === 'task.resumed'));
  expect(stallEvents().map((e) => e.type)).toEqual(['task.stalled']);

  // Older than the latest, then as old as it: applied, yet the task stays stalled, and nothing about the stall.
  await w.deliver('screenshot', [image(t0 + MIN, 'older.jpg')]);
  await w.deliver('screenshot', [image(t0 + 5 * MIN, 'same-time.jpg')]);
  const task = (await w.store.getTask(id))!;
  expect(task.files.map((f) => f.fileName).sort()).toEqual(['latest.jpg', 'older.jpg', 'same-time.jpg']);
  expect(task.stalledSince).toBe(stalledSince);
  for (let i = 1; i <= 3; i++) await sweep(w.clock.now + i * 10 * MIN, w.sweeper());
  expect(stallEvents().map((e) => e.type)).toEqual(['task.stalled']);
  expect((await w.store.getTask(id))!.stalledSince).toBe(stalledSince);

  // A later callback resumes it: the resume names the stall, and the stall measured from the latest one.
  await w.deliver('screenshot', [image(t0 + 30 * MIN, 'later.jpg')]);
  expect(stallEvents().map((e) => e.type)).toEqual(['task.stalled', 'task.resumed']);
  expect(stallEvents()[1]!.stall).toEqual({ stalledSince, stallMs: 15 * MIN, lastCallbackAt: t0 + 30 * MIN });
  expect((await w.store.getTask(id))!.stalledSince).toBeNull();
}, 120_000);

test('an end delivered late resumes a stalled task, though it is older than the uploads after it', async () => {
  const w = await world();
  const id = 'img-sweep-stall-end';
  const start: Body = { ...fixture('screenshot-1-start'), imageId: id };
  const t0 = start.timestamp as number;
  const upload: Body = { ...fixture('screenshot-4-upload-ok'), imageId: id, timestamp: t0 + 5 * MIN };
  w.clock.now = t0 + 6 * MIN;
  await w.deliver('screenshot', [start, upload]);
  w.clock.now = t0 + 26 * MIN;
  await sweep(w.clock.now, w.sweeper());
  expect((await w.store.getTask(id))!.stalledSince).toBe(t0 + 20 * MIN);
  // The end came before that upload, and reaches the receiver only now.
  await w.deliver('screenshot', [{ ...fixture('screenshot-3-end'), imageId: id, timestamp: t0 + 4 * MIN }]);
  const task = (await w.store.getTask(id))!;
  expect(task.stalledSince).toBeNull();
  expect(task.status).not.toBe('capturing');
  expect(w.typesOf(id).filter((t) => t === 'task.stalled' || t === 'task.resumed')).toEqual([
    'task.stalled',
    'task.resumed',
  ]);
  for (let i = 1; i <= 3; i++) await sweep(w.clock.now + i * 10 * MIN, w.sweeper());
  expect(w.typesOf(id).filter((t) => t === 'task.stalled')).toHaveLength(1);
}, 120_000);

test('a resumed task whose arm waits for a far deadline (a failed file) is armed for its next stall', async () => {
  const w = await world();
  const id = 'img-sweep-restall';
  const start: Body = { ...fixture('screenshot-1-start'), imageId: id };
  const t0 = start.timestamp as number;
  const failed: Body = { ...fixture('screenshot-4-upload-failed'), imageId: id, timestamp: t0 + 1_000 };
  w.clock.now = t0 + 2_000;
  await w.deliver('screenshot', [start, failed]);
  // Stalled 15 minutes after its latest callback; then armed at its file's warning, 22 hours on.
  w.clock.now = t0 + 21 * MIN;
  await sweep(w.clock.now, w.sweeper());
  const stalls = () => w.published.filter((e) => e.type === 'task.stalled' && e.task.id === id);
  expect(stalls()).toHaveLength(1);
  const image: Body = { ...fixture('screenshot-4-upload-ok'), imageId: id, timestamp: t0 + 25 * MIN };
  await w.deliver('screenshot', [image]);
  expect(w.typesOf(id)).toContain('task.resumed');
  // Its next stall, 15 minutes after that image, is found by the first sweep after it.
  for (w.clock.now = t0 + 30 * MIN; w.clock.now <= t0 + 50 * MIN; w.clock.now += 5 * MIN)
    await sweep(w.clock.now, w.sweeper());
  expect(stalls().map((e) => e.stall!.stalledSince)).toEqual([t0 + 1_000 + 15 * MIN, t0 + 40 * MIN]);
}, 120_000);

test('a completed task settles after SETTLE_AFTER unchanged; a change unsettles it, and it settles again', async () => {
  const w = await world();
  const id = 'img-sweep-settle';
  const bodies = ['screenshot-1-start', 'screenshot-4-upload-ok', 'screenshot-3-end'].map(
    (n): Body => ({
      ...fixture(n),
      imageId: id,
    }),
  );
  w.clock.now = (bodies[2]!.timestamp as number) + 1_000;
  const changedAt = w.clock.now;
  await w.deliver('screenshot', bodies);
  expect((await w.store.getTask(id))!.status).toBe('completed');
  await sweep(w.clock.now + 5 * MIN, w.sweeper());
  expect(w.typesOf(id)).not.toContain('task.settled');
  w.clock.now = changedAt + 16 * MIN;
  await sweep(w.clock.now, w.sweeper());
  await sweep(w.clock.now + 5 * MIN, w.sweeper());
  const settled = w.published.filter((e) => e.type === 'task.settled' && e.task.id === id);
  expect(settled).toHaveLength(1);
  const task = (await w.store.getTask(id))!;
  // `ca` keeps whole minutes, rounded up: the settle is never early, at most a minute late.
  expect(task.settledAt).toBeGreaterThanOrEqual(changedAt + 10 * MIN);
  expect(task.settledAt).toBeLessThan(changedAt + 11 * MIN);

  // Another image after the settle: unsettled, then settled again under a new id.
  const image: Body = { ...fixture('screenshot-4-upload-ok'), imageId: id, timestamp: 1763798800000 };
  (image.output as Body) = { ...(image.output as Body), fileName: 'late.jpg' };
  await w.deliver('screenshot', [image]);
  expect((await w.store.getTask(id))!.settledAt).toBeNull();
  w.clock.now += 16 * MIN;
  await sweep(w.clock.now, w.sweeper());
  const twice = w.published.filter((e) => e.type === 'task.settled' && e.task.id === id);
  expect(twice).toHaveLength(2);
  expect(new Set(twice.map((e) => e.id)).size).toBe(2);
}, 120_000);

test('two sweepers at once publish each fact once, and leave every task re-armed', async () => {
  const w = await world();
  const n = 12;
  const t0 = 1763798400500;
  w.clock.now = t0 + 1_000;
  for (let i = 0; i < n; i++) {
    const id = `img-two-${i}`;
    const start = { ...fixture('screenshot-1-start'), imageId: id };
    const failed = { ...fixture('screenshot-4-upload-failed'), imageId: id };
    // A third stall, a third complete (then settle), a third hold a failed image (then lost).
    const bodies =
      i % 3 === 0
        ? [start]
        : i % 3 === 1
          ? [
              start,
              { ...fixture('screenshot-4-upload-ok'), imageId: id },
              { ...fixture('screenshot-3-end'), imageId: id },
            ]
          : [start, failed, { ...fixture('screenshot-3-end'), imageId: id }];
    await w.deliver('screenshot', bodies);
  }
  await sweep(w.clock.now, w.sweeper());
  // Past every deadline of the tasks (the failed images' purge, a day after them), swept by two sweepers at
  // once, twice. Each of them reads every bucket from the first sweep's on: no further than needed.
  const later = t0 + FILE_HOLD_MS + 60 * MIN;
  for (let round = 0; round < 2; round++)
    await Promise.all([sweep(later + round * MIN, w.sweeper()), sweep(later + round * MIN, w.sweeper())]);
  const ids = w.published.map((e) => e.id);
  expect(ids.length).toBe(new Set(ids).size);
  const byType = (type: string) => w.published.filter((e) => e.type === type).length;
  expect(byType('task.stalled')).toBe(n / 3);
  expect(byType('task.settled')).toBe(n / 3);
  expect(byType('file.lost')).toBe(n / 3);
  expect(byType('file.purge_warning')).toBe(n / 3);
}, 180_000);

test('a sweep that finds a stall and a loss due at once shows one task under its sequence', async () => {
  // No sweep ran for a day: the first finds the task stalled, its failed image warned about and lost at once.
  const w = await world();
  const id = 'img-sweep-stall-and-loss';
  const start: Body = { ...fixture('screenshot-1-start'), imageId: id };
  const failed: Body = {
    ...fixture('screenshot-4-upload-failed'),
    imageId: id,
    timestamp: (start.timestamp as number) + 1000,
  };
  w.clock.now = (failed.timestamp as number) + 2_000;
  await w.deliver('screenshot', [start, failed]);
  await sweep(w.clock.now, w.sweeper());
  w.clock.now = (failed.timestamp as number) + FILE_HOLD_MS + 6 * MIN;
  await sweep(w.clock.now, w.sweeper());
  const own = w.published.filter((e) => e.task.id === id && ['task.stalled', 'file.lost'].includes(e.type));
  expect(own.map((e) => e.type).sort()).toEqual(['file.lost', 'task.stalled']);
  const bySequence = new Map<number, string>();
  for (const e of w.published.filter((x) => x.task.id === id)) {
    const seen = bySequence.get(e.sequence);
    if (seen !== undefined) expect(JSON.stringify(e.task)).toBe(seen);
    bySequence.set(e.sequence, JSON.stringify(e.task));
  }
  expect(own.every((e) => e.task.files.lost === 1)).toBe(true);
}, 60_000);
