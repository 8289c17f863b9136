// The recount read a page at a time and folded as it comes (./task-recount.ts), against the recount as first written,
// every item of the task read at once (test/support/whole-task-recount.ts): equal on random items (marks of later
// writers, keys recorded on their own, a completion to find), in any order and any page size; and
// equal on tasks the worker wrote into dynalite, read one item a page and up.
import fc from 'fast-check';
import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { CompletionSweep } from '../../../domain/completion-time.ts';
import { sequenceOf } from '../../../domain/task-counts.ts';
import { createLogger } from '../../../log.ts';
import { processBatch } from '../../../worker/process-batch.ts';
import { startDynamo, type LocalDynamo } from '../../../../devkit/local/dynamo.ts';
import { anyLifecycles, interleavedDeliveries } from '../../../../test/support/lifecycles.ts';
import { sqsEvent, sqsRecord } from '../../../../test/support/sqs-events.ts';
import { wholeTaskRecount } from '../../../../test/support/whole-task-recount.ts';
import { fileFromItem, headerFromItem } from '../table/items.ts';
import { Keys } from '../table/table.ts';
import { TableReader, noCapacity, type Item } from '../table/table-client.ts';
import { DynamoTaskStore } from '../read/task-store.ts';
import { RecountFold, recountTask, taskItemsQuery, type Recount } from './task-recount.ts';

const APP = 'demo-app';
const ID = 'rec-fold';
const seq = (n: number) => sequenceOf(String(n))!;
const rank = (t: number, key: string) => `${String(t).padStart(16, '0')}|${key}`;
const time = fc.integer({ min: 0, max: 40 });
const seqNo = fc.integer({ min: 1, max: 9 });
/** Mostly true: completed tasks (an end that succeeded, every file uploaded) are common enough to find their time. */
const mostly = fc.oneof({ weight: 6, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) });
const keysOf = (uploads: boolean[], tag: string) =>
  Object.fromEntries(uploads.map((u, i) => [`${tag}-${i}`, `${u ? 'u' : 's'}1.E`]));
const lastError = (at: number | null, key: string) =>
  at === null ? {} : { lastError: { rank: rank(at, key), type: 4, code: 500, message: null, at } };

const header = fc
  .record({
    identAt: time,
    ended: fc.option(fc.record({ at: time, ok: mostly }), { freq: 6 }),
    failed: fc.boolean(),
    keys: fc.array(fc.boolean(), { maxLength: 3 }),
    seq: fc.option(seqNo),
    doneAt: fc.option(time, { freq: 3 }),
    updatedAt: fc.option(time),
    error: fc.option(time),
  })
  .map(
    (h): Item => ({
      pk: Keys.taskPk(ID),
      sk: Keys.headerSk(APP),
      service: 'recording',
      identRank: `1${rank(h.identAt, 'ident')}`,
      identAt: h.identAt,
      ...(h.ended ? { endedAt: h.ended.at, endRank: rank(h.ended.at, 'end'), endOk: h.ended.ok } : {}),
      ...(h.failed ? { startOrEndFailed: true } : {}),
      keys: keysOf(h.keys, 'h'),
      ...(h.seq === null ? {} : { seq: seq(h.seq) }),
      ...(h.doneAt === null ? {} : { doneAt: h.doneAt }),
      ...(h.updatedAt === null ? {} : { updatedAt: h.updatedAt }),
      ...lastError(h.error, 'header'),
      ver: 3,
    }),
  );

const file = (i: number) =>
  fc
    .record({
      size: fc.option(time),
      upload: fc.option(fc.record({ at: time, ok: mostly }), { freq: 8 }),
      failure: fc.option(time),
      keys: fc.array(fc.boolean(), { maxLength: 4 }),
      mark: fc.option(fc.record({ seq: seqNo, counted: fc.constantFrom('p', 'u', 'f', undefined), events: fc.nat(3) })),
      lost: fc.boolean(),
      updatedAt: fc.option(time),
      error: fc.option(time),
    })
    .map(
      (f): Item => ({
        pk: Keys.taskPk(ID),
        sk: Keys.fileSk(APP, `f-${i}`),
        ...(f.size === null ? {} : { sizeRank: rank(f.size, `size-${i}`), size: 1 }),
        ...(f.upload === null
          ? {}
          : { upload: { rank: rank(f.upload.at, `up-${i}`), ok: f.upload.ok, code: 200, at: f.upload.at } }),
        ...(f.failure === null ? {} : { firstFailureAt: f.failure }),
        keys: keysOf(f.keys, `f${i}`),
        ...(f.mark === null ? {} : { ms: seq(f.mark.seq), mc: f.mark.counted, me: f.mark.events }),
        ...(f.lost ? { lo: 1 } : {}),
        ...(f.updatedAt === null ? {} : { updatedAt: f.updatedAt }),
        ...lastError(f.error, `file-${i}`),
      }),
    );

const recorded = (j: number) =>
  fc.record({ file: fc.nat(6), upload: fc.boolean(), q: fc.option(seqNo) }).map(
    (r): Item => ({
      pk: Keys.taskPk(ID),
      sk: Keys.recordedSk(APP, `f-${r.file}`, `own-${j}`),
      fileName: `f-${r.file}`,
      v: `${r.upload ? 'u' : 's'}1.E`,
      ...(r.q === null ? {} : { q: seq(r.q) }),
    }),
  );

const sized = <T>(n: number, one: (i: number) => fc.Arbitrary<T>) =>
  fc.tuple(...Array.from({ length: n }, (_, i) => one(i)));
const task = fc.record({
  header,
  files: fc.integer({ min: 0, max: 7 }).chain((n) => sized(n, file)),
  recorded: fc.integer({ min: 0, max: 5 }).chain((n) => sized(n, recorded)),
  through: fc.option(seqNo),
});

/** What the random tasks reached: each kind at least once, so that the equality is known to cover it. */
const reached = { laterMarks: 0, ownKeysLater: 0, doneFound: 0, passesAfterFirst: 0 };

/** The fold over `parts` in the order given, and the passes over the files its completion asks for. */
function folded(head: Item, parts: readonly Item[], through: string | null, keep: number): Omit<Recount, 'header'> {
  const fold = new RecountFold(head, through, keep);
  for (const item of parts) fold.add(item);
  const { recount, done, completion } = fold.result();
  const h = headerFromItem(head);
  let pass = completion;
  while (pass !== null && 'from' in pass) {
    const sweep = new CompletionSweep(h.endedAt ?? h.identAt, { from: pass.from, keep });
    for (const item of parts) if (item.sk.startsWith(Keys.fileSk(APP, ''))) sweep.add(fileFromItem(item));
    pass = sweep.moment();
    reached.passesAfterFirst += 1;
  }
  const { header: _read, ...rest } = recount;
  return { ...rest, done: pass === null ? done : pass.at };
}

test('folded item by item, a page at a time, the recount is the one of the whole task read at once', () => {
  fc.assert(
    fc.property(task, fc.integer({ min: 1, max: 3 }), (t, keep) => {
      const through = t.through === null ? null : seq(t.through);
      const parts = [...t.files, ...t.recorded];
      const expected = wholeTaskRecount(t.header, parts, through);
      if (t.files.some((f) => f.ms > expected.absorbed)) reached.laterMarks += 1;
      if (t.recorded.some((r) => r.q > expected.absorbed)) reached.ownKeysLater += 1;
      if (t.header.doneAt === undefined && expected.done !== null) reached.doneFound += 1;
      const inKeyOrder = [...parts].sort((a, b) => (a.sk < b.sk ? -1 : 1));
      expect(folded(t.header, inKeyOrder, through, Number.POSITIVE_INFINITY)).toEqual(expected);
      expect(folded(t.header, inKeyOrder, through, keep)).toEqual(expected);
      expect(folded(t.header, [...inKeyOrder].reverse(), through, keep)).toEqual(expected);
    }),
    // Seeded: the kinds every run must reach are reached by this one (a rare kind may escape an unseeded run).
    { numRuns: 1500, seed: 20261128 },
  );
  for (const [kind, n] of Object.entries(reached)) expect({ kind, reached: n > 0 }).toEqual({ kind, reached: true });
});

describe('on tasks the worker wrote', () => {
  let db: LocalDynamo;
  beforeAll(async () => {
    db = await startDynamo();
  });
  afterAll(() => db.stop());
  const log = createLogger('test', 'error');

  /** The recount as first written: the task's every item read with one Query, then added up at once. */
  async function atOnce(reader: TableReader, appKey: string, id: string, through: string | null) {
    const items: Item[] = [];
    for await (const item of reader.queryAll(taskItemsQuery(appKey, id))) items.push(item);
    const head = items.find((i) => i.sk === Keys.headerSk(appKey))!;
    const parts = items.filter((i) => i.sk.startsWith(Keys.partsPrefix(appKey)));
    return wholeTaskRecount(head, parts, through);
  }

  test('read one item a page and up, with marks of later writers and no completion time kept, equal', async () => {
    const reader = new TableReader(db.client, db.tableName);
    let runs = 0;
    let laterMarks = 0;
    let doneFound = 0;
    await fc.assert(
      fc.asyncProperty(
        anyLifecycles({ minLength: 1, maxLength: 3 }).chain((ls) =>
          fc.tuple(fc.constant(ls), interleavedDeliveries(ls, { maxExtra: 2 }), fc.integer({ min: 0, max: 5 })),
        ),
        async ([lifecycles, deliveries, rewind]) => {
          const run = ++runs;
          const store = new DynamoTaskStore({ client: db.client, tableName: db.tableName });
          const idOf = (body: Record<string, unknown>) => `${String(body.recordId ?? body.imageId)}-r${run}`;
          let n = 10n ** 19n;
          for (const d of deliveries) {
            const body = { ...d.body, [d.service === 'recording' ? 'recordId' : 'imageId']: idOf(d.body) };
            const record = sqsRecord(d.service, body, { groupId: idOf(d.body), sequenceNumber: String(n++) });
            expect((await processBatch(sqsEvent([record]), { store, log })).batchItemFailures).toEqual([]);
          }
          for (const l of lifecycles) {
            const id = `${l.id}-r${run}`;
            const appKey = String(l.bodies[0]!.appKey);
            // The header as if it had absorbed fewer messages (marks of later writers to leave to their batch),
            // and without the time it completed (the recount finds it off the files).
            await db.client.send(
              new UpdateItemCommand({
                TableName: db.tableName,
                Key: { pk: { S: Keys.taskPk(id) }, sk: { S: Keys.headerSk(appKey) } },
                UpdateExpression: 'SET seq = :s REMOVE doneAt',
                ExpressionAttributeValues: { ':s': { S: seq(Number(10n ** 19n) + rewind * 2) } },
              }),
            );
            const expected = await atOnce(reader, appKey, id, null);
            if (expected.done !== null) doneFound += 1;
            for await (const item of reader.queryAll(taskItemsQuery(appKey, id)))
              if (typeof item.ms === 'string' && item.ms > expected.absorbed) laterMarks += 1;
            for (const page of [1, 2, 7, 500]) {
              const paged = await recountTask(reader, { appKey, id, through: null }, noCapacity(), page);
              const { header: _read, ...got } = paged!;
              expect({ page, got }).toEqual({ page, got: expected });
            }
          }
        },
      ),
      { numRuns: 25 },
    );
    expect(laterMarks).toBeGreaterThan(0);
    expect(doneFound).toBeGreaterThan(0);
  }, 120_000);
});
