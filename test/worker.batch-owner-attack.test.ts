// The batch path (processBatch -> the store's one applyBatch -> events and archive -> finish -> report) attacked from
// outside, held against an oracle written from docs/contract.md §4 and §6 and docs/events.md, not from the code: the
// stored task must be the fold of the distinct callbacks delivered (reduceTask, the reference fold), the events
// published must cover every MUST event (true on the final task) and hold nothing outside MAY (true on the task of
// some subset of the callbacks, enumerated here), and the greatest sequence of a task must show its final state.
// Several tasks share one SQS FIFO queue, one message group each: a receive takes as many messages of the oldest
// group as fit (up to ten), then the next group; a failed record and every later record of its group in the batch
// come back. Writes are refused (throttled) or land with their answer lost and the batch comes back to the SAME warm
// store; workers die mid-batch at any receive, the last included; at the last receive (maxReceiveCount 3) a failing
// record goes to a dead-letter list, redriven afterwards as `callbacks dlq redrive` sends it. Each task also has a
// forged body (a failed end) under the signature of its first genuine message, claimed by the ingest after it and
// sent beside its group, often ahead of it: it must never be applied (docs/contract.md §6, first received wins).
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSRecord } from 'aws-lambda';
import { DynamoTaskStore } from '../lib/aws/dynamo/read/task-store.ts';
import { type Callback, parseCallback } from '../lib/domain/callback.ts';
import { reduceTask } from '../lib/domain/reduce-task.ts';
import type { ReplayClaim } from '../lib/domain/replay-claim.ts';
import type { Task } from '../lib/domain/task.ts';
import type { TaskEvent } from '../lib/domain/task-events.ts';
import { claimSignature } from '../lib/ingest/claim.ts';
import { createLogger } from '../lib/log.ts';
import { processBatch } from '../lib/worker/process-batch.ts';
import { useQuietDynamo } from './support/quiet-dynamo.ts';
import { redriven, sqsEvent, sqsRecord } from './support/sqs-events.ts';

const local = useQuietDynamo();
const log = createLogger('test');
const MAX_RECEIVES = 3;

/** mulberry32: every case runs again from its seed. */
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
// Callbacks: a recording lifecycle per task (start, slice, failed then retried upload, end, final upload ok or
// failed), neighbours swapped, duplicates (the same event, keys reordered) sent again.

function lifecycle(recordId: string, rnd: () => number, t0: number): Record<string, any>[] {
  const common = { appKey: 'attack-app', recordId, roomId: 'room-attack', sessionId: 'sess-attack', userId: '' };
  const ok = { code: 200, errorMessage: 'success' };
  const a = `${recordId}-a.mp4`;
  const b = `${recordId}-b.mp4`;
  const upload = (fileName: string, timestamp: number, good: boolean) => ({
    ...common,
    mode: 3,
    type: 4,
    timestamp,
    ...(good ? ok : { code: 500, errorMessage: 'upload to storage failed' }),
    output: { fileName, fileUrl: good ? `https://s/${fileName}` : '' },
  });
  const bodies: Record<string, any>[] = [
    { ...common, ...ok, mode: 3, type: 1, timestamp: t0, extra: '', config: { trigger: 0 }, output: { fileName: a } },
    { ...common, ...ok, mode: 3, type: 2, timestamp: t0 + 60_000, output: { fileName: a, fileSize: 1000 } },
    upload(a, t0 + 61_000, false),
    upload(a, t0 + 90_000, true),
    { ...common, ...ok, mode: 3, type: 3, timestamp: t0 + 120_000, output: { fileName: b, fileSize: 2000 } },
    upload(b, t0 + 121_000, rnd() < 0.6),
  ];
  for (let i = 0; i < 3; i++) {
    const k = Math.floor(rnd() * (bodies.length - 1));
    if (rnd() < 0.5) [bodies[k], bodies[k + 1]] = [bodies[k + 1]!, bodies[k]!];
  }
  const dups = Math.floor(rnd() * 3);
  for (let i = 0; i < dups; i++) {
    const original = bodies[Math.floor(rnd() * 6)]!;
    bodies.splice(Math.floor(rnd() * (bodies.length + 1)), 0, Object.fromEntries(Object.entries(original).reverse()));
  }
  return bodies;
}

function parsed(body: Record<string, any>): Callback {
  const r = parseCallback('recording', body);
  if (!r.ok) throw new Error(r.errors.join('; '));
  return r.callback;
}

// ---------------------------------------------------------------------------------------------------------------
// The oracle of events: the (type, file) facts a task's state makes true, per docs/events.md.

function facts(task: Task, callbacks: readonly Callback[]): Set<string> {
  const out = new Set<string>();
  if (callbacks.some((c) => c.type === 1 && c.code === 200)) out.add('task.started');
  if (callbacks.some((c) => c.type === 1 && c.code !== 200)) out.add('task.start_failed');
  if (callbacks.some((c) => c.type === 3 && c.code === 200)) out.add('task.ended');
  if (task.status === 'failed') out.add('task.failed');
  if (task.status === 'completed') out.add('task.completed');
  for (const f of task.files) {
    if (f.upload === 'uploaded') out.add(`file.uploaded|${f.fileName}`);
    if (f.upload === 'failed') out.add(`file.upload_failed|${f.fileName}`);
  }
  return out;
}

function oracle(bodies: readonly Record<string, any>[]) {
  const distinct = new Map<string, Callback>();
  for (const b of bodies) {
    const cb = parsed(b);
    distinct.set(cb.key, cb);
  }
  const all = [...distinct.values()];
  const final = reduceTask(all)!;
  const may = new Set<string>();
  for (let mask = 1; mask < 1 << all.length; mask++) {
    const subset = all.filter((_, i) => mask & (1 << i));
    for (const f of facts(reduceTask(subset)!, subset)) may.add(f);
  }
  return { final, must: facts(final, all), may };
}

/** An event as a fact: file.upload_recovered is a file.uploaded of a file that had failed. */
function factOf(e: TaskEvent): string {
  const type = e.type === 'file.upload_recovered' ? 'file.uploaded' : e.type;
  return e.file ? `${type}|${e.file.fileName}` : type;
}

// ---------------------------------------------------------------------------------------------------------------
// Faults on the client: refused (throttled before it lands), lost answer (landed, then throttled), death (landed,
// then nothing the process sends arrives).

type Fault = 'refused' | 'lost-answer' | 'death';
const WRITES = new Set(['PutItemCommand', 'UpdateItemCommand', 'DeleteItemCommand', 'BatchWriteItemCommand']);
const throttled = () =>
  Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), {
    name: 'ProvisionedThroughputExceededException',
    $retryable: { throttling: true },
  });
const died = () => Object.assign(new Error('the worker died'), { name: 'WorkerDied' });

function unreliable(client: DynamoDBClient, pick: () => Fault | null, tally: Record<Fault, number>) {
  let dead = false;
  const wrapped = new Proxy(client, {
    get(target, prop, receiver) {
      if (prop !== 'send') return Reflect.get(target, prop, receiver);
      const send = Reflect.get(target, prop, receiver) as (c: unknown) => Promise<unknown>;
      return async (command: { constructor: { name: string } }) => {
        if (dead) throw died();
        if (!WRITES.has(command.constructor.name)) return send.call(target, command);
        const fault = pick();
        if (fault === null) return send.call(target, command);
        tally[fault] += 1;
        if (fault === 'refused') throw throttled();
        await send.call(target, command).catch(() => undefined);
        if (fault === 'death') dead = true;
        throw fault === 'death' ? died() : throttled();
      };
    },
  });
  return { client: wrapped, dead: () => dead };
}

// ---------------------------------------------------------------------------------------------------------------
// SQS FIFO with several message groups.

/** What the ingest claimed of a signed callback (docs/contract.md §6): `stored` for the first body, else `replayed`. */
async function claimed(body: Record<string, any>, replayKey: string) {
  const raw = JSON.stringify(body);
  const signed = {
    service: 'recording' as const,
    json: body,
    raw,
    appKey: body.appKey as string,
    id: body.recordId as string,
    type: body.type as number,
    replayKey,
    receivedAt: Date.now(),
    verdict: 'valid' as const,
    mode: 'enforce' as const,
    requestId: null,
  };
  const deps = {
    dynamo: local.db.client,
    settings: { tableName: local.db.tableName, rawEventTtlDays: 7, claimDeadlineMs: 5000 },
  };
  const out = await claimSignature(deps, signed);
  if (!('claim' in out)) throw new Error(out.unclaimed);
  return out.claim;
}

interface Message {
  record: SQSRecord;
  group: string;
  order: number;
  receives: number;
}

let sequenceNumber = 10n ** 19n + 8_100_000n;
const nextSequence = () => String(++sequenceNumber);
let sent = 0;

interface Sent {
  group: string;
  body: Record<string, any>;
  replayKey?: string;
  /** A body sent under another's signature, after it. */
  forged?: boolean;
}

interface Run {
  published: TaskEvent[];
  tally: Record<Fault, number>;
  deadLetters: number;
  receives: number;
  groupOrderBroken: string[];
}

async function runQueue(all: Sent[], seed: number, rate: number) {
  const rnd = random(seed);
  const tally: Record<Fault, number> = { refused: 0, 'lost-answer': 0, death: 0 };
  const run: Run = { published: [], tally, deadLetters: 0, receives: 0, groupOrderBroken: [] };
  let faultsOn = true;
  const pick = (): Fault | null => {
    if (!faultsOn || rnd() >= rate) return null;
    const r = rnd();
    return r < 0.45 ? 'refused' : r < 0.8 ? 'lost-answer' : 'death';
  };
  let worker = unreliable(local.db.client, pick, tally);
  let store = new DynamoTaskStore({ client: worker.client, tableName: local.db.tableName });
  const events = {
    publish: async (batch: readonly TaskEvent[]) => {
      if (!worker.dead()) run.published.push(...batch);
    },
  };
  const wrap = (group: string, record: SQSRecord): Message => ({ record, group, order: ++sent, receives: 0 });
  // The ingest claims in the order it received the bodies (the genuine first), whatever order the queue has.
  const claims = new Map<Sent, ReplayClaim>();
  for (const m of all.filter((x) => x.replayKey).sort((x, y) => Number(!!x.forged) - Number(!!y.forged)))
    claims.set(m, await claimed(m.body, m.replayKey!));
  expect([...claims].map(([m, c]) => `${m.forged ? 'forged' : 'genuine'} ${c}`).sort()).toEqual(
    [...claims.keys()].map((m) => (m.forged ? 'forged replayed' : 'genuine stored')).sort(),
  );
  let queue: Message[] = [];
  for (const sent of all) {
    const { group, body, replayKey } = sent;
    const claim = claims.get(sent);
    const opts = { groupId: group, sequenceNumber: nextSequence(), ...(replayKey ? { replayKey, claim } : {}) };
    queue.push(wrap(group, sqsRecord('recording', JSON.stringify(body), opts)));
  }
  const dlq: Message[] = [];
  for (let round = 0; round < 600 && (queue.length > 0 || dlq.length > 0); round++) {
    if (round > 300) faultsOn = false;
    if (queue.length === 0) {
      queue = dlq.splice(0).map((m) => wrap(m.group, redriven(m.record, nextSequence())));
      continue;
    }
    // The oldest group's messages first, in order, as many as fit; then the next group's.
    const groups = [...new Set([...queue].sort((x, y) => x.order - y.order).map((m) => m.group))];
    const batch: Message[] = [];
    const limit = 1 + Math.floor(rnd() * 10);
    for (const g of groups) {
      for (const m of queue.filter((q) => q.group === g).sort((x, y) => x.order - y.order)) {
        if (batch.length >= limit) break;
        batch.push(m);
      }
    }
    queue = queue.filter((m) => !batch.includes(m));
    for (const m of batch) m.receives += 1;
    run.receives += 1;
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
      failed = new Set(records.map((r) => r.messageId));
      worker = unreliable(local.db.client, pick, tally);
      store = new DynamoTaskStore({ client: worker.client, tableName: local.db.tableName });
    }
    // A failed record and every later record of its group come back: the report itself must name them (FIFO
    // order), except behind a record at its last receive, which goes to the dead-letter queue alone
    // (docs/contract.md §6).
    const back: Message[] = [];
    const groupFailed = new Set<string>();
    for (const m of batch) {
      const reported = failed.has(m.record.messageId);
      if (groupFailed.has(m.group) && !reported) run.groupOrderBroken.push(m.record.messageId);
      if (!reported) continue;
      if (m.receives < MAX_RECEIVES) groupFailed.add(m.group);
      if (m.receives >= MAX_RECEIVES) {
        dlq.push(m);
        run.deadLetters += 1;
      } else back.push(m);
    }
    queue = [...back, ...queue];
  }
  expect([queue.length, dlq.length]).toEqual([0, 0]);
  return run;
}

async function expectSettled(recordId: string, bodies: readonly Record<string, any>[], published: TaskEvent[]) {
  const want = oracle(bodies);
  const store = new DynamoTaskStore({ client: local.db.client, tableName: local.db.tableName });
  expect(await store.getTask(recordId)).toEqual(want.final);
  const mine = published.filter((e) => e.task.id === recordId);
  const got = new Set(mine.map(factOf));
  expect({ missing: [...want.must].filter((f) => !got.has(f)) }).toEqual({ missing: [] });
  expect({ outsideMay: [...got].filter((f) => !want.may.has(f)) }).toEqual({ outsideMay: [] });
  // One task per (task, sequence); one sequence per event id; the greatest sequence shows the final task.
  const bySequence = new Map<number, string>();
  const sequenceOfId = new Map<string, number>();
  for (const e of mine) {
    const snapshot = JSON.stringify(e.task);
    expect([e.sequence, bySequence.get(e.sequence) ?? snapshot]).toEqual([e.sequence, snapshot]);
    bySequence.set(e.sequence, snapshot);
    sequenceOfId.set(e.id, Math.max(sequenceOfId.get(e.id) ?? e.sequence, e.sequence));
  }
  const last = mine.reduce((x, y) => (y.sequence > x.sequence ? y : x));
  const f = want.final;
  const pending = f.files.filter((x) => x.upload === 'pending').length;
  const failed = f.files.filter((x) => x.upload === 'failed').length;
  expect([last.task.status, last.task.files.total, last.task.files.pending, last.task.files.failed]).toEqual([
    f.status,
    f.files.length,
    pending,
    failed,
  ]);
}

const SEED0 = Number(process.env.SEED0 ?? 4200);
const SEEDS = Array.from({ length: Number(process.env.SEEDS ?? 16) }, (_, i) => SEED0 + i);
const RATE = Number(process.env.RATE ?? 0.15);
const struck = { refused: 0, 'lost-answer': 0, death: 0, deadLetters: 0, cases: 0 };

async function runSeed(seed: number) {
  const rnd = random(seed * 104_729);
  const t0 = Date.now() - 60 * 60 * 1000;
  const ids = [0, 1, 2].map((i) => `owner-attack-${seed}-${i}`);
  const perTask = ids.map((id, i) => lifecycle(id, rnd, t0 + i * 1000));
  // Sent interleaved: the groups' messages mixed in the queue's order, each group's own order kept.
  const cursors = perTask.map(() => 0);
  const all: Sent[] = [];
  while (cursors.some((c, i) => c < perTask[i]!.length)) {
    const i = Math.floor(rnd() * ids.length);
    if (cursors[i]! < perTask[i]!.length) all.push({ group: `g-${ids[i]}`, body: perTask[i]![cursors[i]!++]! });
  }
  // A forged body (a failed end of the task) under the signature of each task's first genuine message, received by
  // the ingest after it (claimed `replayed`) and sent beside the task's group: the worker may meet it first.
  for (const [i, id] of ids.entries()) {
    const k = all.findIndex((m) => m.group === `g-${id}`);
    const genuine = all[k]!;
    const replayKey = `attack-replay-${seed}-${i}`;
    genuine.replayKey = replayKey;
    const forged = {
      ...genuine.body,
      type: 3,
      timestamp: t0 + 500_000,
      code: 500,
      errorMessage: 'forged failure',
      output: { fileName: `${id}-forged.mp4`, fileSize: 1 },
    };
    const at = k + 1 + Math.floor(rnd() * (all.length - k));
    all.splice(at, 0, { group: `aside-${id}`, body: forged, replayKey, forged: true });
    // The worker meets the forged message first when its group is older than the genuine one's.
    if (rnd() < 0.5) all.unshift(all.splice(at, 1)[0]!);
  }
  const run = await runQueue(all, seed, RATE);
  for (const f of ['refused', 'lost-answer', 'death'] as const) struck[f] += run.tally[f];
  struck.deadLetters += run.deadLetters;
  struck.cases += 1;
  expect(run.groupOrderBroken).toEqual([]);
  for (const [i, id] of ids.entries()) await expectSettled(id, perTask[i]!, run.published);
}

describe('the batch owner under FIFO groups, warm retries, deaths at any receive and dlq redrive', () => {
  test.each(SEEDS)('seed %i: three tasks, each the fold of its callbacks, events within MUST..MAY', (seed) =>
    runSeed(seed),
  );
  test('the faults struck: throttled writes, lost answers, deaths and dead letters', () => {
    expect(struck).toMatchObject({ cases: SEEDS.length });
    expect([struck.refused, struck['lost-answer'], struck.death, struck.deadLetters].every((n) => n > 0)).toBe(true);
  });
});
