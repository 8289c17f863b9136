// The facts of time (lost files, purge warnings, stalled and settled tasks) through the real worker, store and
// sweeper on dynalite, against a brute force of the callbacks and the clock: random lifecycles, delivered
// shuffled and duplicated in chunks with the clock moving between them, swept between chunks by one sweeper, two
// at once, or one that crashes before it publishes; then, once the last change is older than a new task's arm, a
// last sweep. The brute force follows each task's stalls delivery after delivery and sweep after sweep (a callback
// later than a stall's, or an end, resumes it; an older one leaves it). Whatever the order and timing, the stored
// facts are those the brute force finds at each sweep, every one published, every resume once, and none twice
// unless a sweep crashed.
import fc from 'fast-check';
import { TableClient } from '../lib/aws/dynamo/table/table-client.ts';
import { tableDefinition } from '../lib/aws/dynamo/table/table.ts';
import { TaskSweeps } from '../lib/aws/dynamo/time/task-sweeps.ts';
import { DynamoTaskStore } from '../lib/aws/dynamo/read/task-store.ts';
import { defaultTimeSettings, stallTimeOf } from '../lib/domain/deadlines.ts';
import { reduceTask } from '../lib/domain/reduce-task.ts';
import { ID_FIELD_OF, type Service } from '../lib/platform/services.ts';
import { taskEventId, type TaskEvent } from '../lib/domain/task-events.ts';
import type { Callback } from '../lib/domain/callback.ts';
import type { Task } from '../lib/domain/task.ts';
import { createLogger } from '../lib/log.ts';
import { sweep } from '../lib/sweeper/sweep.ts';
import { processBatch } from '../lib/worker/process-batch.ts';
import {
  anyLifecycles,
  callbacksOf,
  interleavedDeliveries,
  mustParse,
  type Body,
  type Delivery,
  type Lifecycle,
} from './support/lifecycles.ts';
import { useQuietDynamo } from './support/quiet-dynamo.ts';
import { fullSize, sized } from './support/size.ts';
import { sqsEvent, sqsRecord } from './support/sqs-events.ts';
import { createActiveTable } from '../devkit/local/dynamo.ts';

const local = useQuietDynamo();
const log = createLogger('test');
const S = defaultTimeSettings;
const MIN = 60_000;
const HOUR = 60 * MIN;

type SweepKind = 'one' | 'two' | 'crash';
interface Step {
  /** How much of what is left is delivered at this step. */
  share: number;
  /** The clock moves this far before the sweep. */
  advance: number;
  sweep: SweepKind;
}

const step: fc.Arbitrary<Step> = fc.record({
  share: fc.double({ min: 0.1, max: 1, noNaN: true }),
  advance: fc.oneof(fc.integer({ min: 0, max: 20 * MIN }), fc.integer({ min: 20 * MIN, max: 30 * HOUR })),
  sweep: fc.constantFrom<SweepKind>('one', 'one', 'two', 'crash'),
});

let runs = 0;

/** A sweep's lease outlives it by at most this (lib/sweeper/sweep-task.ts: 2 minutes and a random minute). */
const LEASE_MAX = 3 * MIN;
/** A deadline a delivery brings is armed at most this late (a new task's arm, or one left at most that late). */
const ARM_LATENESS = 20 * MIN;

/**
 * The brute force of one task's stalls, written from docs/contract.md §4 (facts of time): a sweep at `now` stalls a
 * task with no end and no failed start whose latest callback + stall time has passed, measured from that callback;
 * a callback later than it, or one that ends the task (or fails its start) whatever its timestamp, resumes the task;
 * another older one (or one as old) leaves it stalled.
 */
class StallModel {
  private readonly delivered = new Map<string, Callback>();
  /** The stall the task is in. */
  stall: { since: number; from: number } | null = null;
  /** Every stall the task was in: whether some sweep that did not crash held it (and so published it). */
  readonly stalls = new Map<number, boolean>();
  /** The stall of each resume, in order. */
  readonly resumes: number[] = [];
  lastDelivery = Number.NEGATIVE_INFINITY;
  lastCrash = Number.NEGATIVE_INFINITY;

  deliver(cbs: readonly Callback[], now: number): void {
    for (const cb of cbs) this.delivered.set(cb.key, cb);
    this.lastDelivery = now;
    const { updatedAt } = this.task();
    const later = updatedAt !== null && this.stall !== null && updatedAt > this.stall.from;
    if (this.stall !== null && (later || this.ended())) {
      this.resumes.push(this.stall.since);
      this.stall = null;
    }
  }

  /** An end, or a failed start: the task can no longer stall. */
  private ended(): boolean {
    return [...this.delivered.values()].some((cb) => cb.type === 3 || (cb.type === 1 && cb.code !== 200));
  }

  task(): Task {
    return reduceTask([...this.delivered.values()])!;
  }

  /** The stall a sweep at `now` finds due (null: none). */
  due(now: number): { since: number; from: number } | null {
    const callbacks = [...this.delivered.values()];
    if (this.stall !== null || callbacks.length === 0) return null;
    const task = this.task();
    if (this.ended()) return null;
    if (task.updatedAt === null) return null;
    const since = task.updatedAt + stallTimeOf({ service: task.service, config: task.config }, S);
    return since <= now ? { since, from: task.updatedAt } : null;
  }

  /**
   * Whether a sweep at `now` may leave a due stall for a later one: the task's arm may lie up to ARM_LATENESS
   * after its last delivery, and a crashed sweep's live lease has the next sweeps skip it.
   */
  mayMiss(now: number): boolean {
    return now < this.lastDelivery + ARM_LATENESS || now <= this.lastCrash + LEASE_MAX;
  }

  /** After a sweep at `now` (`crashed`: it stopped before it published): the stall it leaves stored. */
  swept(now: number, crashed: boolean, stored: number | null): void {
    const due = this.due(now);
    if (due !== null && (stored === due.since || !this.mayMiss(now))) {
      expect(stored).toBe(due.since);
      this.stall = due;
      this.stalls.set(due.since, !crashed);
    } else {
      expect(stored).toBe(this.stall?.since ?? null);
      // A sweep past a crashed one's lease publishes again the stall that one claimed.
      if (!crashed && this.stall !== null && now > this.lastCrash + LEASE_MAX) this.stalls.set(this.stall.since, true);
    }
    if (crashed) this.lastCrash = now;
  }
}

/** The facts the brute force finds at `at`: the task as reduceTask says, its facts of time, the events they make. */
function expectedAt(l: Lifecycle, model: StallModel, lastChange: number, at: number): { task: Task; events: string[] } {
  const task = reduceTask(callbacksOf(l))!;
  const stalledSince = model.stall?.since ?? null;
  const changed = Math.ceil(lastChange / MIN) * MIN;
  const settledAt = task.status === 'completed' && changed + S.settleAfterMs <= at ? changed + S.settleAfterMs : null;
  const id = (type: Parameters<typeof taskEventId>[1], fileName: string | null, instance?: string) =>
    taskEventId(task, type, fileName, instance);
  const events: string[] = [];
  if (stalledSince !== null) events.push(id('task.stalled', null, String(stalledSince)));
  const files = task.files.map((f) => {
    if (f.upload !== 'failed' || f.purgeAt === null) return f;
    if (f.purgeAt - S.purgeWarningBeforeMs <= at) events.push(id('file.purge_warning', f.fileName));
    if (f.purgeAt > at) return f;
    events.push(id('file.lost', f.fileName));
    return { ...f, upload: 'lost' as const };
  });
  const counts = { ...task.counts, lost: files.filter((f) => f.upload === 'lost').length };
  return { task: { ...task, counts, files, stalledSince, settledAt }, events };
}

test('stored facts of time equal a brute force of the callbacks and the clock, whatever order and sweeps', async () => {
  // What the runs found, so that the test is known to reach every kind of fact.
  const found = { stalled: 0, resumed: 0, settled: 0, lost: 0, warned: 0, crashed: 0, twoAtOnce: 0 };
  await fc.assert(
    fc.asyncProperty(
      anyLifecycles({ minLength: 1, maxLength: 3 }).chain((lifecycles) =>
        fc.tuple(
          fc.constant(lifecycles),
          interleavedDeliveries(lifecycles, { maxExtra: 4 }),
          fc.array(step, { minLength: 1, maxLength: 4 }),
          fc.constantFrom(0, 23 * HOUR, 25 * HOUR, 3 * 86_400_000),
          fc.integer({ min: 0, max: 2 * 86_400_000 }),
        ),
      ),
      async ([rawLifecycles, rawDeliveries, steps, lastAdvance, startOffset]) => {
        const prefix = `p${++runs}-`;
        const rename = (service: Service, body: Body): Body => ({
          ...body,
          [ID_FIELD_OF[service]]: prefix + String(body[ID_FIELD_OF[service]]),
        });
        const lifecycles = rawLifecycles.map((l) => ({
          ...l,
          id: prefix + l.id,
          bodies: l.bodies.map((b) => rename(l.service, b)),
        }));
        let pending: Delivery[] = rawDeliveries.map((d) => ({ service: d.service, body: rename(d.service, d.body) }));

        const tableName = `sweep-prop-${runs}`;
        await createActiveTable(local.db.client, tableDefinition(tableName));
        const clock = { now: Math.min(...pending.map((d) => Number(d.body.timestamp))) + startOffset };
        const store = new DynamoTaskStore({ client: local.db.client, tableName, now: () => clock.now });
        const published: TaskEvent[] = [];
        const events = { publish: async (batch: readonly TaskEvent[]) => void published.push(...batch) };
        const crashing = {
          publish: async () => {
            throw new Error('the sweeper stops before it publishes');
          },
        };
        const sweeper = (publisher: typeof events) => ({
          sweeps: new TaskSweeps(new TableClient(local.db.client, tableName)),
          events: publisher,
          time: S,
          log,
          lookBackMs: 3 * 86_400_000,
        });
        const seen = new Set<string>();
        const lastChange = new Map<string, number>();
        const models = new Map(lifecycles.map((l) => [l.id, new StallModel()]));
        let sequence = 10n ** 19n;
        let crashedAt: number | null = null;

        const deliver = async (chunk: Delivery[]) => {
          for (let i = 0; i < chunk.length; i += 10) {
            const batch = chunk.slice(i, i + 10);
            const records = batch.map((d) =>
              sqsRecord(d.service, d.body, {
                groupId: String(d.body[ID_FIELD_OF[d.service]]),
                sequenceNumber: String(sequence++),
              }),
            );
            const res = await processBatch(sqsEvent(records), { store, log, events, now: () => clock.now });
            expect(res.batchItemFailures).toEqual([]);
            const byTask = new Map<string, Callback[]>();
            for (const d of batch) {
              const cb = mustParse(d.service, d.body);
              byTask.set(cb.id, [...(byTask.get(cb.id) ?? []), cb]);
              const key = `${cb.id}|${cb.key}`;
              if (!seen.has(key)) lastChange.set(cb.id, clock.now);
              seen.add(key);
            }
            for (const [id, cbs] of byTask) models.get(id)!.deliver(cbs, clock.now);
          }
        };
        const sweepAll = async (kind: SweepKind) => {
          if (kind === 'one') await sweep(clock.now, sweeper(events));
          if (kind === 'two') await Promise.all([sweep(clock.now, sweeper(events)), sweep(clock.now, sweeper(events))]);
          if (kind === 'crash') {
            await sweep(clock.now, sweeper(crashing));
            crashedAt = clock.now;
          }
          for (const [id, model] of models)
            model.swept(clock.now, kind === 'crash', (await store.getTask(id))?.stalledSince ?? null);
        };

        for (const s of steps) {
          const count = Math.max(1, Math.ceil(pending.length * s.share));
          await deliver(pending.slice(0, count));
          pending = pending.slice(count);
          clock.now += s.advance;
          await sweepAll(s.sweep);
        }
        await deliver(pending);
        // Past a new task's arm and any crashed sweep's lease, then as far again as drawn.
        clock.now += ARM_LATENESS + lastAdvance;
        await sweepAll('one');

        const publishedIds = (id: string, type: TaskEvent['type']) =>
          published.filter((e) => e.task.id === id && e.type === type).map((e) => e.id);
        for (const l of lifecycles) {
          const model = models.get(l.id)!;
          const expected = expectedAt(l, model, lastChange.get(l.id)!, clock.now);
          found.stalled += model.stalls.size;
          found.resumed += model.resumes.length;
          if (expected.task.settledAt !== null) found.settled += 1;
          found.lost += expected.task.files.filter((f) => f.upload === 'lost').length;
          found.warned += expected.events.filter((id) =>
            published.some((e) => e.id === id && e.type === 'file.purge_warning'),
          ).length;
          expect(await store.getTask(l.id)).toEqual(expected.task);
          const ids = new Set(published.map((e) => e.id));
          for (const id of expected.events) expect(ids).toContain(id);
          const settled = published.filter((e) => e.type === 'task.settled' && e.task.id === l.id);
          if (expected.task.settledAt !== null)
            expect(settled.map((e) => e.settledAt)).toContain(expected.task.settledAt);
          // Every stall a sweep published, and no other; every resume once, each naming a stall.
          const stallId = (type: 'task.stalled' | 'task.resumed', since: number) =>
            taskEventId({ appKey: expected.task.appKey, service: l.service, id: l.id }, type, null, String(since));
          const stalls = new Set(publishedIds(l.id, 'task.stalled'));
          for (const [since, out] of model.stalls) if (out) expect(stalls).toContain(stallId('task.stalled', since));
          const known = [...model.stalls.keys()].map((since) => stallId('task.stalled', since));
          for (const id of stalls) expect(known).toContain(id);
          expect(publishedIds(l.id, 'task.resumed').sort()).toEqual(
            model.resumes.map((since) => stallId('task.resumed', since)).sort(),
          );
        }
        if (crashedAt !== null) found.crashed += 1;
        if (steps.some((s) => s.sweep === 'two')) found.twoAtOnce += 1;
        if (crashedAt === null) {
          const timeIds = published.filter((e) => !isCallbackEvent(e)).map((e) => e.id);
          expect(timeIds.length).toBe(new Set(timeIds).size);
        }
      },
    ),
    // Random seeds: a failure prints its seed and path, replayed with { seed, path } here. A run takes seconds, so
    // shrinking a failure is cut short rather than the test's time-out reached: the failure is reported as shrunk.
    { numRuns: sized(4, 12), interruptAfterTimeLimit: sized(240_000, 1_500_000) },
  );
  // What the runs reached: at full size, every kind of fact (in npm test, too few runs to be sure of each).
  if (fullSize) for (const [fact, n] of Object.entries(found)) expect([fact, n > 0]).toEqual([fact, true]);
}, 600_000);

const isCallbackEvent = (e: TaskEvent) =>
  !['file.purge_warning', 'file.lost', 'task.stalled', 'task.resumed', 'task.settled'].includes(e.type);
