// A task belongs to the appKey of its callbacks: a callback of another appKey naming the same recordId or
// imageId never changes it, whatever its timestamp; it makes that appKey's own task. Written against the
// TaskStore interface, whatever the store's layout.
import { DynamoTaskStore } from '../lib/aws/dynamo/read/task-store.ts';
import { type Callback, parseCallback } from '../lib/domain/callback.ts';
import { reduceTask } from '../lib/domain/reduce-task.ts';
import { AmbiguousTaskError, type DeliveredCallback } from '../lib/domain/task-store.ts';
import type { Service } from '../lib/platform/services.ts';
import { type LocalDynamo, startDynamo } from '../devkit/local/dynamo.ts';
import { applyTasks, expectedTask, recordingTask } from '../devkit/seeds/seed-tasks.ts';

let db: LocalDynamo;
let store: DynamoTaskStore;

beforeAll(async () => {
  db = await startDynamo();
  store = new DynamoTaskStore({ client: db.client, tableName: db.tableName });
});
afterAll(() => db.stop());

// Recent, so that the quarantine listing finds the entries in its first days.
const T0 = Date.now() - 3_600_000;
let messages = 0;

function parsed(service: Service, body: object): Callback {
  const r = parseCallback(service, JSON.stringify(body));
  if (!r.ok) throw new Error(r.errors.join('; '));
  return r.callback;
}

function delivered(callback: Callback): DeliveredCallback {
  return {
    callback,
    raw: JSON.stringify(callback.body),
    receivedAt: callback.timestamp + 100,
    verdict: 'valid',
    mode: 'enforce',
    requestId: null,
    messageId: `msg-${++messages}`,
    replayKey: null,
  };
}

function recording(appKey: string, roomId: string, type: number, at: number, extra: object = {}) {
  return parsed('recording', {
    timestamp: at,
    type,
    appKey,
    recordId: 'rec-shared-id',
    roomId,
    sessionId: `session-of-${appKey}`,
    userId: '',
    mode: 3,
    extra: '',
    code: 200,
    errorMessage: 'success',
    ...extra,
  });
}

test("another appKey's callbacks for the id, earlier or later, leave the task as its owner's make it", async () => {
  const tenantA = [
    recording('tenant-A', 'room-a', 1, T0, { config: { trigger: 1 }, output: { fileName: 'a.mp4' } }),
    recording('tenant-A', 'room-a', 2, T0 + 60_000, { output: { fileName: 'a.mp4', fileSize: 1024 } }),
    recording('tenant-A', 'room-a', 3, T0 + 120_000, { output: { fileName: 'a.mp4', fileSize: 2048 } }),
    recording('tenant-A', 'room-a', 4, T0 + 130_000, { output: { fileName: 'a.mp4', fileUrl: 'https://s/a.mp4' } }),
  ];
  for (const cb of tenantA) expect((await store.applyCallback(delivered(cb))).outcome).toBe('applied');
  const own = reduceTask(tenantA);
  expect(await store.getTask('rec-shared-id')).toEqual(own);

  // An earlier start would rank first and hand its identity to the task; a failed upload of the same file
  // name would mark it failed; a new file would join the task.
  const tenantB = [
    recording('tenant-B', 'evil', 1, T0 - 60_000, { config: { trigger: 9 }, output: { fileName: 'b.mp4' } }),
    recording('tenant-B', 'evil', 4, T0 + 200_000, {
      code: 500,
      errorMessage: 'upload failed',
      output: { fileName: 'a.mp4', fileUrl: '' },
    }),
    recording('tenant-B', 'evil', 2, T0 + 30_000, { output: { fileName: 'b.mp4', fileSize: 1 } }),
  ];
  for (const cb of tenantB) expect((await store.applyCallback(delivered(cb))).outcome).toBe('applied');

  // Each appKey has its task under the id, each the oracle's reading of its own callbacks.
  expect(await store.getTask('rec-shared-id', 'tenant-A')).toEqual(own);
  expect(await store.getTask('rec-shared-id', 'tenant-B')).toEqual(reduceTask(tenantB));
  // By id alone the store does not pick one: it names both.
  const ambiguous = await store.getTask('rec-shared-id').catch((err: unknown) => err);
  expect(ambiguous).toBeInstanceOf(AmbiguousTaskError);
  expect((ambiguous as AmbiguousTaskError).appKeys).toEqual(['tenant-A', 'tenant-B']);

  // Redelivered, the callbacks of either are duplicates, and nothing moves.
  expect((await store.applyCallback(delivered(tenantA[1]!))).outcome).toBe('duplicate');
  expect((await store.applyCallback(delivered(tenantB[0]!))).outcome).toBe('duplicate');
  expect(await store.getTask('rec-shared-id', 'tenant-A')).toEqual(own);

  // The read after a write, which task events are made of, is of the write's own task: the other appKeys'
  // items sort around its own in the partition (tenant-C's header between tenant-B's and its parts).
  const tenantC = recording('tenant-C', 'other', 2, T0, { output: { fileName: 'c.mp4', fileSize: 1 } });
  expect((await store.applyCallback(delivered(tenantC))).outcome).toBe('applied');
  const end = recording('tenant-B', 'evil', 3, T0 + 300_000, { output: { fileName: 'b.mp4', fileSize: 5 } });
  const result = await store.applyCallback(delivered(end));
  if (result.outcome !== 'applied') throw new Error(`expected the end to apply, got ${result.outcome}`);
  const expected = reduceTask([...tenantB, end])!;
  const read = await result.write.readTask();
  expect(read && { ...read.task, files: read.task.fileCount }).toMatchObject({
    appKey: 'tenant-B',
    roomId: 'evil',
    status: expected.status,
    eventCount: expected.eventCount,
    files: expected.files.length,
    failedFiles: expected.files.filter((f) => f.upload === 'failed').length,
  });
});

test("another appKey's tasks in the same room and session neither fill nor cost an appKey's listings", async () => {
  const shared = { roomId: 'room-shared', sessionId: 'session-shared', userId: '', outcome: 'completed' as const };
  const own = recordingTask({ ...shared, id: 'rec-scoped', appKey: 'tenant-A', at: T0 - 600_000 });
  // Newer, so that a listing by the room alone meets them first; one of them takes tenant-A's task id.
  const intruders = Array.from({ length: 12 }, (_, i) =>
    recordingTask({ ...shared, id: i === 0 ? 'rec-scoped' : `rec-intruder-${i}`, appKey: 'tenant-B', at: T0 + i }),
  );
  await applyTasks(store, [own, ...intruders]);
  // Few headers a page: a listing that had to read the intruders' index entries would end its first page
  // empty, with a cursor.
  const frugal = new DynamoTaskStore({ client: db.client, tableName: db.tableName, readBudget: { headersPerPage: 5 } });
  for (const query of [
    { appKey: 'tenant-A', roomId: 'room-shared' },
    { appKey: 'tenant-A', sessionId: 'session-shared' },
  ]) {
    const page = await frugal.listTasksPage(query, { limit: 10 });
    expect({ query, ids: page.items.map((s) => s.id), next: page.next }).toEqual({
      query,
      ids: ['rec-scoped'],
      next: null,
    });
  }
  // Without an appKey, the room is every appKey's room of that name, each task naming its appKey.
  const everyone: string[] = [];
  for await (const s of store.listTasks({ roomId: 'room-shared' })) everyone.push(`${s.appKey}/${s.id}`);
  expect(everyone.sort()).toEqual([own, ...intruders].map((t) => `${t.appKey}/${t.id}`).sort());
  // With its appKey, tenant-A's task id answers tenant-A's task and callbacks, whoever else uses it.
  expect((await store.getTaskPage({ id: 'rec-scoped', appKey: 'tenant-A' }, { limit: 10 }))?.task).toEqual(
    expectedTask(own),
  );
  const events = await store.listEventsPage({ id: 'rec-scoped', appKey: 'tenant-A' }, { limit: 10 });
  expect(events?.items.map((e) => e.raw)).toEqual(own.bodies.map((b) => JSON.stringify(b)));
  await expect(store.getTaskPage({ id: 'rec-scoped' }, { limit: 10 })).rejects.toThrow(AmbiguousTaskError);
});
