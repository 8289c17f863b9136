// Helpers shared by the fault and security tests: reproducible lifecycles, SQS redelivery as Lambda does
// it, and the exact counts a run must end with.
import type { SQSRecord } from 'aws-lambda';
import fc from 'fast-check';
import type { DynamoTaskStore } from '../../../lib/aws/dynamo/read/task-store.ts';
import { eventKey } from '../../../lib/domain/canonical.ts';
import type { BatchWriter } from '../../../lib/domain/batch.ts';
import type { TaskStore } from '../../../lib/domain/task-store.ts';
import { reduceTask } from '../../../lib/domain/reduce-task.ts';
import type { Task } from '../../../lib/domain/task.ts';
import {
  callbacksOf,
  interleavedDeliveries,
  recordingLifecycle,
  screenshotLifecycle,
  type Body,
  type Delivery,
  type Lifecycle,
} from '../../support/lifecycles.ts';
import type { SendResult } from '../../../devkit/emulator/sender.ts';
import type { Logger } from '../../../lib/log.ts';
import { ID_FIELD_OF, type Service } from '../../../lib/platform/services.ts';
import { processBatch } from '../../../lib/worker/process-batch.ts';
import { receivedAgain, sqsEvent } from '../../support/sqs-events.ts';

const idField = (service: Service) => ID_FIELD_OF[service];

/** Recording and screenshot lifecycles with duplicates, the same for a given seed. */
export function sampleRun(
  seed: number,
  options: { recordings: number; screenshots: number; maxExtra: number },
): { lifecycles: Lifecycle[]; deliveries: Delivery[] } {
  const arb = fc
    .tuple(
      fc.array(recordingLifecycle(), { minLength: options.recordings, maxLength: options.recordings }),
      fc.array(screenshotLifecycle(), { minLength: options.screenshots, maxLength: options.screenshots }),
    )
    .map(([r, s]) => [...r, ...s].map((l, i) => renamed(l, `t${i}-`)))
    .chain((ls) => fc.tuple(fc.constant(ls), interleavedDeliveries(ls, { maxExtra: options.maxExtra })));
  const [lifecycles, deliveries] = fc.sample(arb, { numRuns: 1, seed })[0]!;
  return { lifecycles, deliveries };
}

function renamed(l: Lifecycle, prefix: string): Lifecycle {
  const field = idField(l.service);
  return { ...l, id: prefix + l.id, bodies: l.bodies.map((b) => ({ ...b, [field]: prefix + String(b[field]) })) };
}

let isolation = 0;
/** The same run under task ids of its own, so that several runs share one table without mixing. */
export function isolate(
  run: { lifecycles: Lifecycle[]; deliveries: Delivery[] },
  tag = 'iso',
): { lifecycles: Lifecycle[]; deliveries: Delivery[] } {
  const prefix = `${tag}${++isolation}-`;
  const rename = (service: Service, body: Body): Body => ({
    ...body,
    [idField(service)]: prefix + String(body[idField(service)]),
  });
  return {
    lifecycles: run.lifecycles.map((l) => ({
      ...l,
      id: prefix + l.id,
      bodies: l.bodies.map((b) => rename(l.service, b)),
    })),
    deliveries: run.deliveries.map((d) => ({ service: d.service, body: rename(d.service, d.body) })),
  };
}

/** Delivers records batch by batch until each is acknowledged, as SQS redelivers failed items. */
export async function deliverUntilDone(
  records: SQSRecord[],
  store: TaskStore & BatchWriter,
  log: Logger,
  batchSize: number,
  maxRounds = 20,
): Promise<SQSRecord[]> {
  let pending = records;
  for (let round = 0; pending.length > 0 && round < maxRounds; round++) {
    const failed: SQSRecord[] = [];
    for (let i = 0; i < pending.length; i += batchSize) {
      const batch = pending.slice(i, i + batchSize);
      const res = await processBatch(sqsEvent(batch), { store, log, concurrency: 5 });
      const ids = new Set(res.batchItemFailures.map((f) => f.itemIdentifier));
      failed.push(...batch.filter((r) => ids.has(r.messageId)).map(receivedAgain));
    }
    pending = failed;
  }
  return pending;
}

/**
 * Every task equals the oracle's, and the counts are exact: each task's ledger holds one entry per
 * distinct callback, and its eventCount says the same.
 */
export async function expectTasksExact(store: DynamoTaskStore, lifecycles: Lifecycle[]): Promise<void> {
  for (const l of lifecycles) {
    const expected = reduceTask(callbacksOf(l));
    const stored = await store.getTask(l.id);
    expect(stored).toEqual(expected);
    const distinct = new Set(l.bodies.map((b) => eventKey(b))).size;
    expect({ id: l.id, ledger: (await store.listEvents(l.id)).length, eventCount: stored?.eventCount }).toEqual({
      id: l.id,
      ledger: distinct,
      eventCount: distinct,
    });
  }
}

/** Distinct events among the acknowledged sends of an emulator run (duplicates and reordered keys count once). */
export function distinctAcknowledged(results: readonly SendResult[], taskId?: string): number {
  const keys = new Set<string>();
  for (const r of results) if (r.delivered && (taskId === undefined || r.taskId === taskId)) keys.add(eventKey(r.body));
  return keys.size;
}

/** Sum of eventCount and of ledger entries over the tasks. */
export async function storedEvents(
  store: DynamoTaskStore,
  tasks: readonly Task[],
): Promise<{ eventCount: number; ledger: number }> {
  let eventCount = 0;
  let ledger = 0;
  for (const t of tasks) {
    eventCount += (await store.getTask(t.id))?.eventCount ?? 0;
    ledger += (await store.listEvents(t.id)).length;
  }
  return { eventCount, ledger };
}

export async function quarantined(store: DynamoTaskStore): Promise<number> {
  let n = 0;
  for await (const _ of store.listQuarantine({ sinceDays: 2 })) n += 1;
  return n;
}

/** A store whose applyCallback and applyUncounted (the worker's) go through `apply`; the rest is the store's own. */
export function withApply<S extends TaskStore & BatchWriter>(
  store: S,
  apply: (
    original: TaskStore['applyCallback'],
    input: Parameters<TaskStore['applyCallback']>[0],
  ) => ReturnType<TaskStore['applyCallback']>,
): S {
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'applyCallback' || prop === 'applyUncounted') {
        const original = (Reflect.get(target, prop) as TaskStore['applyCallback']).bind(target);
        return (input: Parameters<TaskStore['applyCallback']>[0]) => apply(original, input);
      }
      const value = Reflect.get(target, prop, receiver);
      // The batch goes through this store's steps, applyUncounted included.
      if (prop === 'applyBatch') return (value as BatchWriter['applyBatch']).bind(receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
