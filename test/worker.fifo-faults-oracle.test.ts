// The worker and the DynamoDB store under the faults AWS really has, held against an oracle written from
// docs/contract.md §4 alone (not from lib/domain): a simulated SQS FIFO queue hands out one task's messages in
// order, up to ten to a batch; writes are throttled before they land or lose their answer after, and the batch comes
// back to the same warm store; workers die mid-batch at any receive, the last included; dead letters are redriven as
// `callbacks dlq redrive` sends them (new id, new sequence number, receive count 1, `resentBy`). Once everything has
// settled, the stored task must equal the contract's fold of its distinct callbacks, its counts its files, and the
// events must hold what docs/events.md promises (MUST types present, one task snapshot per sequence, the greatest
// sequence showing the final task).
import { readFileSync } from 'node:fs';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSRecord } from 'aws-lambda';
import { countsOf } from '../lib/aws/dynamo/table/items.ts';
import { TaskQueries } from '../lib/aws/dynamo/read/queries.ts';
import { TableReader } from '../lib/aws/dynamo/table/table-client.ts';
import { DynamoTaskStore } from '../lib/aws/dynamo/read/task-store.ts';
import type { TaskEvent } from '../lib/domain/task-events.ts';
import { createLogger } from '../lib/log.ts';
import { processBatch } from '../lib/worker/process-batch.ts';
import { useQuietDynamo } from './support/quiet-dynamo.ts';
import { redriven, sqsEvent, sqsRecord } from './support/sqs-events.ts';

const local = useQuietDynamo();
const log = createLogger('test');
const MAX_RECEIVES = 3;
const DAY = 24 * 60 * 60 * 1000;
const fixture = (name: string) =>
  JSON.parse(readFileSync(new URL(`fixtures/${name}.json`, import.meta.url), 'utf8')) as Record<string, any>;

/** A small seeded generator (mulberry32), so that every case can be run again from its seed. */
function random(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// ---------------------------------------------------------------------------------------------------------------
// The oracle: docs/contract.md §4, for recording tasks, written out here on its own.

interface OracleFile {
  fileName: string;
  size: number | null;
  upload: 'pending' | 'uploaded' | 'failed';
  code: number | null;
  attempts: number;
  purgeAt: number | null;
}

/** JSON with keys sorted at every depth: two callbacks are the same event when these are equal. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object')
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as any)[k])}`)
      .join(',')}}`;
  return JSON.stringify(v);
}

function contractFold(bodies: readonly Record<string, any>[]) {
  const distinct = new Map<string, Record<string, any>>();
  for (const b of bodies) distinct.set(canonical(b), b);
  const cbs = [...distinct.values()];
  const files = new Map<string, { sizes: [number, number][]; uploads: Record<string, any>[] }>();
  for (const cb of cbs) {
    if (cb.type === 1) continue;
    const name = cb.output.fileName as string;
    const f = files.get(name) ?? { sizes: [], uploads: [] };
    if (typeof cb.output.fileSize === 'number') f.sizes.push([cb.timestamp, cb.output.fileSize]);
    if (cb.type === 4) f.uploads.push(cb);
    files.set(name, f);
  }
  const fileViews: OracleFile[] = [...files.entries()].map(([fileName, f]) => {
    // The winning upload: the greatest timestamp, success winning a tie.
    const winner = [...f.uploads].sort((a, b) => b.timestamp - a.timestamp || (a.code === 200 ? -1 : 1))[0];
    const failures = f.uploads.filter((u) => u.code !== 200).map((u) => u.timestamp);
    const failed = winner !== undefined && winner.code !== 200;
    return {
      fileName,
      size: f.sizes.sort((a, b) => b[0] - a[0])[0]?.[1] ?? null,
      upload: winner === undefined ? 'pending' : failed ? 'failed' : 'uploaded',
      code: winner?.code ?? null,
      attempts: f.uploads.length,
      purgeAt: failed ? Math.min(...failures) + DAY : null,
    };
  });
  const ends = cbs.filter((c) => c.type === 3);
  const starts = cbs.filter((c) => c.type === 1);
  const anyFailed = fileViews.some((f) => f.upload === 'failed');
  const anyPending = fileViews.some((f) => f.upload === 'pending');
  const status = anyFailed
    ? 'upload_failed'
    : ends.some((e) => e.code === 200) && !anyPending
      ? 'completed'
      : [...starts, ...ends].some((c) => c.code !== 200)
        ? 'failed'
        : ends.length > 0
          ? 'ended'
          : 'recording';
  const errors = cbs.filter((c) => c.code !== 200).sort((a, b) => b.timestamp - a.timestamp);
  const lastError = errors[0]
    ? { type: errors[0].type, code: errors[0].code, message: errors[0].errorMessage, at: errors[0].timestamp }
    : null;
  const earliest = (list: Record<string, any>[]) =>
    list.length ? Math.min(...list.map((c) => c.timestamp as number)) : null;
  return {
    status,
    startedAt: earliest(starts),
    endedAt: earliest(ends),
    updatedAt: Math.max(...cbs.map((c) => c.timestamp as number)),
    eventCount: cbs.length,
    lastError,
    files: fileViews.sort((a, b) => a.fileName.localeCompare(b.fileName)),
    counts: {
      files: fileViews.length,
      pending: fileViews.filter((f) => f.upload === 'pending').length,
      uploaded: fileViews.filter((f) => f.upload === 'uploaded').length,
      failed: fileViews.filter((f) => f.upload === 'failed').length,
      events: cbs.length,
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// A recording lifecycle with an upload that fails then succeeds, a second file, and duplicates.

function lifecycle(recordId: string, rnd: () => number): Record<string, any>[] {
  const base: Record<string, any> = { ...fixture('recording-1-start-mix'), recordId };
  const t0 = base.timestamp as number;
  const common = { appKey: base.appKey, recordId, roomId: base.roomId, sessionId: base.sessionId, userId: '', mode: 3 };
  const ok = { code: 200, errorMessage: 'success' };
  const a = `${recordId}-a.mp4`;
  const b = `${recordId}-b.mp4`;
  const slice = { ...common, ...ok, type: 2, timestamp: t0 + 60_000, output: { fileName: a, fileSize: 1000 } };
  const aFailed = {
    ...common,
    type: 4,
    timestamp: t0 + 61_000,
    code: 500,
    errorMessage: 'upload to storage failed',
    output: { fileName: a, fileUrl: '' },
  };
  const aOk = { ...common, ...ok, type: 4, timestamp: t0 + 90_000, output: { fileName: a, fileUrl: `https://s/${a}` } };
  const end = { ...common, ...ok, type: 3, timestamp: t0 + 120_000, output: { fileName: b, fileSize: 2000 } };
  const bFinal =
    rnd() < 0.5
      ? { ...common, ...ok, type: 4, timestamp: t0 + 121_000, output: { fileName: b, fileUrl: `https://s/${b}` } }
      : {
          ...common,
          type: 4,
          timestamp: t0 + 121_000,
          code: 503,
          errorMessage: 'storage unavailable',
          output: { fileName: b, fileUrl: '' },
        };
  const bodies: Record<string, any>[] = [base, slice, aFailed, aOk, end, bFinal];
  // The platform's order, with a few neighbours swapped (a late or shuffled delivery) and duplicates sent again.
  for (let i = 0; i < 3; i++) {
    const k = Math.floor(rnd() * (bodies.length - 1));
    if (rnd() < 0.5) [bodies[k], bodies[k + 1]] = [bodies[k + 1]!, bodies[k]!];
  }
  const dups = Math.floor(rnd() * 3);
  for (let i = 0; i < dups; i++) {
    const original = bodies[Math.floor(rnd() * 6)]!;
    // The same event, its keys in another order: another message (another deduplication id), the same callback.
    const again = Object.fromEntries(Object.entries(original).reverse());
    bodies.splice(Math.floor(rnd() * (bodies.length + 1)), 0, again);
  }
  return bodies;
}

// ---------------------------------------------------------------------------------------------------------------
// Faults: a write refused before it lands, its answer lost after it landed, or the worker's death at a write.

type Fault = 'refused' | 'lost-answer' | 'death';

function throttled() {
  return Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), {
    name: 'ProvisionedThroughputExceededException',
    $retryable: { throttling: true },
  });
}

const WRITES = new Set(['PutItemCommand', 'UpdateItemCommand', 'DeleteItemCommand', 'BatchWriteItemCommand']);

/** A client whose writes fail now and then as `pick` decides; after a death nothing it sends arrives. */
function unreliable(client: DynamoDBClient, pick: () => Fault | null, tally: Record<Fault, number>) {
  let dead = false;
  const wrapped = new Proxy(client, {
    get(target, prop, receiver) {
      if (prop !== 'send') return Reflect.get(target, prop, receiver);
      const send = Reflect.get(target, prop, receiver) as (c: unknown) => Promise<unknown>;
      return async (command: { constructor: { name: string } }) => {
        if (dead) throw Object.assign(new Error('the worker died'), { name: 'WorkerDied' });
        if (!WRITES.has(command.constructor.name)) return send.call(target, command);
        const fault = pick();
        if (fault === null) return send.call(target, command);
        tally[fault] += 1;
        if (fault === 'refused') throw throttled();
        await send.call(target, command).catch(() => undefined);
        if (fault === 'death') dead = true;
        throw fault === 'death' ? Object.assign(new Error('the worker died'), { name: 'WorkerDied' }) : throttled();
      };
    },
  });
  return { client: wrapped, dead: () => dead };
}

// ---------------------------------------------------------------------------------------------------------------
// SQS FIFO, one message group: in order, up to ten to a batch; what a batch reports failed comes back at the
// head with its receive count grown; a message failing at its last receive goes to the dead-letter queue.

interface Message {
  record: SQSRecord;
  receives: number;
}

let sequence = 10n ** 19n + 7_000_000n;
const nextSequence = () => String(++sequence);

async function runQueue(bodies: Record<string, any>[], seed: number, faultRate: number) {
  const rnd = random(seed);
  const tally: Record<Fault, number> = { refused: 0, 'lost-answer': 0, death: 0 };
  const published: TaskEvent[] = [];
  // A dead worker publishes nothing: its batch comes back whole.
  const events = {
    publish: async (batch: readonly TaskEvent[]) => {
      if (!worker.dead()) published.push(...batch);
    },
  };
  const groupId = `g-${bodies[0]!.recordId}`;
  let queue: Message[] = bodies.map((b) => ({
    record: sqsRecord('recording', JSON.stringify(b), { groupId, sequenceNumber: nextSequence() }),
    receives: 0,
  }));
  const dlq: Message[] = [];
  let faultsOn = true;
  const pick = (): Fault | null => {
    if (!faultsOn || rnd() >= faultRate) return null;
    const r = rnd();
    return r < 0.4 ? 'refused' : r < 0.75 ? 'lost-answer' : 'death';
  };
  let worker: ReturnType<typeof unreliable>;
  worker = unreliable(local.db.client, pick, tally);
  let store = new DynamoTaskStore({ client: worker.client, tableName: local.db.tableName });
  let deadLetters = 0;
  let redrives = 0;
  for (let round = 0; round < 400 && (queue.length > 0 || dlq.length > 0); round++) {
    if (round > 200) faultsOn = false;
    if (queue.length === 0) {
      // `callbacks dlq redrive`: every dead letter back as a new message, in the order they died.
      queue = dlq.splice(0).map((m) => ({ record: redriven(m.record, nextSequence()), receives: 0 }));
      redrives += 1;
      continue;
    }
    const size = 1 + Math.floor(rnd() * Math.min(10, queue.length));
    const batch = queue.splice(0, size);
    for (const m of batch) m.receives += 1;
    const records = batch.map((m) => ({
      ...m.record,
      attributes: { ...m.record.attributes, ApproximateReceiveCount: String(m.receives) },
    }));
    let failed: Set<string>;
    try {
      const res = await processBatch(sqsEvent(records), {
        store,
        log,
        events,
        concurrency: 3,
        maxReceiveCount: MAX_RECEIVES,
      });
      failed = new Set(res.batchItemFailures.map((f) => f.itemIdentifier));
    } catch {
      failed = new Set(records.map((r) => r.messageId));
    }
    if (worker.dead()) {
      // The sandbox is gone: nothing of the batch was deleted; the next batch meets a cold worker.
      failed = new Set(records.map((r) => r.messageId));
      worker = unreliable(local.db.client, pick, tally);
      store = new DynamoTaskStore({ client: worker.client, tableName: local.db.tableName });
    }
    const back: Message[] = [];
    for (const m of batch) {
      if (!failed.has(m.record.messageId)) continue;
      if (m.receives >= MAX_RECEIVES) {
        dlq.push(m);
        deadLetters += 1;
      } else back.push(m);
    }
    queue = [...back, ...queue];
  }
  expect(queue).toEqual([]);
  expect(dlq).toEqual([]);
  return { published, tally, deadLetters, redrives };
}

async function expectSettled(recordId: string, bodies: Record<string, any>[], published: readonly TaskEvent[]) {
  const want = contractFold(bodies);
  const store = new DynamoTaskStore({ client: local.db.client, tableName: local.db.tableName });
  const task = (await store.getTask(recordId))!;
  expect(task).not.toBeNull();
  const files = task.files
    .map((f) => ({
      fileName: f.fileName,
      size: f.size,
      upload: f.upload,
      code: f.code,
      attempts: f.attempts,
      purgeAt: f.purgeAt,
    }))
    .sort((a, b) => a.fileName.localeCompare(b.fileName));
  expect({
    status: task.status,
    startedAt: task.startedAt,
    endedAt: task.endedAt,
    updatedAt: task.updatedAt,
    eventCount: task.eventCount,
    lastError: task.lastError,
    files,
  }).toEqual({
    status: want.status,
    startedAt: want.startedAt,
    endedAt: want.endedAt,
    updatedAt: want.updatedAt,
    eventCount: want.eventCount,
    lastError: want.lastError,
    files: want.files,
  });
  const reader = new TaskQueries(new TableReader(local.db.client, local.db.tableName), Date.now);
  expect(countsOf((await reader.findHeader(recordId))!)).toEqual(want.counts);

  // docs/events.md: MUST (true on the final state) are published; nothing contradicting the callbacks is.
  const mine = published.filter((e) => e.task.id === recordId);
  const types = new Set(mine.map((e) => e.type));
  expect(types.has('task.started')).toBe(true);
  expect(types.has('task.ended')).toBe(true);
  if (want.status === 'completed') expect(types.has('task.completed')).toBe(true);
  for (const f of want.files.filter((x) => x.upload === 'failed'))
    expect(mine.some((e) => e.type === 'file.upload_failed' && e.file?.fileName === f.fileName)).toBe(true);
  for (const f of want.files.filter((x) => x.upload === 'uploaded'))
    expect(
      mine.some((e) => ['file.uploaded', 'file.upload_recovered'].includes(e.type) && e.file?.fileName === f.fileName),
    ).toBe(true);
  // No start or end failed: task.failed and task.start_failed are outside MAY.
  expect(types.has('task.failed') || types.has('task.start_failed')).toBe(false);
  // One task snapshot per (task, sequence).
  const bySequence = new Map<number, string>();
  for (const e of mine) {
    const snapshot = JSON.stringify(e.task);
    expect([e.sequence, bySequence.get(e.sequence) ?? snapshot]).toEqual([e.sequence, snapshot]);
    bySequence.set(e.sequence, snapshot);
  }
  // The subscriber keeps the task of the greatest sequence: it must be the final task.
  const last = mine.reduce((a, b) => (b.sequence > a.sequence ? b : a));
  expect([last.task.status, last.task.files.total, last.task.files.pending, last.task.files.failed]).toEqual([
    want.status,
    want.counts.files,
    want.counts.pending,
    want.counts.failed,
  ]);
  // A task's file count never shrinks as its sequence grows (files are never forgotten).
  const ordered = [...mine].sort((a, b) => a.sequence - b.sequence);
  for (let i = 1; i < ordered.length; i++)
    expect(ordered[i]!.task.files.total).toBeGreaterThanOrEqual(ordered[i - 1]!.task.files.total);
}

// Seeds whose runs met a defect each reproduced alone: a callback whose file put another record carried, refused
// at their last receive, reported done and lost (2104: a slice; 5091: an upload;
// worker.shared-put-refused-at-last-receive: now stored, they run with the others), and an end counted without its
// file, a later sequence then showing fewer files (1016; worker.end-file-uncounted-after-lost-answer: still so).
// SEEDS, SEED0 and RATE widen a run by hand.
const FIXED = new Map([
  [2104, 0.18],
  [5091, 0.3],
]);
/** Each with the fault rate its run had. */
const KNOWN_FAILING = new Map([[1016, 0.18]]);
const SEED0 = Number(process.env.SEED0 ?? 1000);
const SEEDS = Array.from({ length: Number(process.env.SEEDS ?? 24) }, (_, i) => SEED0 + i);
const RATE = Number(process.env.RATE ?? 0.18);
const struck: Record<Fault, number> & { deadLetters: number } = {
  refused: 0,
  'lost-answer': 0,
  death: 0,
  deadLetters: 0,
};

async function runSeed(seed: number, rate = RATE) {
  const recordId = `fifo-oracle-${seed}`;
  const bodies = lifecycle(recordId, random(seed * 7919));
  const run = await runQueue(bodies, seed, rate);
  for (const f of ['refused', 'lost-answer', 'death'] as const) struck[f] += run.tally[f];
  struck.deadLetters += run.deadLetters;
  await expectSettled(recordId, bodies, run.published);
}

describe('one task through SQS FIFO, warm retries, deaths at any receive and dlq redrive', () => {
  test.each(SEEDS.filter((s) => !KNOWN_FAILING.has(s)))(
    'seed %i: the task is the contract fold of its callbacks, counts and events agree',
    (seed) => runSeed(seed),
  );
  test.each([...FIXED].filter(([s]) => SEED0 === 1000 || SEEDS.includes(s)))(
    'seed %i at fault rate %f: the task is the contract fold of its callbacks, counts and events agree',
    (seed, rate) => runSeed(seed, rate),
  );
  test.failing.each([...KNOWN_FAILING].filter(([s]) => SEED0 === 1000 || SEEDS.includes(s)))(
    'seed %i at fault rate %f: the task is the contract fold of its callbacks, counts and events agree',
    (seed, rate) => runSeed(seed, rate),
  );
  test('the faults struck: throttled writes, lost answers, deaths and dead letters', () => {
    expect(Object.values(struck).every((n) => n > 0)).toBe(true);
  });
});
