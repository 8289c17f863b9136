// The worker and the DynamoDB store against dynalite, checked against the domain's pure fold:
// random lifecycles, shuffled and duplicated, in random batches; then a fault at every write.
import fc from 'fast-check';
import { DynamoTaskStore } from '../lib/aws/dynamo/read/task-store.ts';
import { reduceTask } from '../lib/domain/reduce-task.ts';
import { ID_FIELD_OF, type Service } from '../lib/platform/services.ts';
import {
  anyLifecycles,
  callbacksOf,
  interleavedDeliveries,
  recordingLifecycle,
  screenshotLifecycle,
  type Body,
  type Delivery,
  type Lifecycle,
} from './support/lifecycles.ts';
import { createLogger } from '../lib/log.ts';
import { processBatch } from '../lib/worker/process-batch.ts';
import { faultyClient } from './support/faulty-client.ts';
import { receivedAgain, sqsEvent, sqsRecord } from './support/sqs-events.ts';
import type { SQSRecord } from 'aws-lambda';
import { useQuietDynamo } from './support/quiet-dynamo.ts';
import { sized, writePositions } from './support/size.ts';

const local = useQuietDynamo();
const log = createLogger('test');

let run = 0;
/** Gives every task of one property run ids of its own, so runs share the table without mixing. */
function isolate(lifecycles: Lifecycle[], deliveries: Delivery[]): { lifecycles: Lifecycle[]; deliveries: Delivery[] } {
  const prefix = `r${++run}-`;
  const rename = (service: Service, body: Body): Body => {
    const idField = ID_FIELD_OF[service];
    return { ...body, [idField]: prefix + String(body[idField]) };
  };
  return {
    lifecycles: lifecycles.map((l) => ({ ...l, id: prefix + l.id, bodies: l.bodies.map((b) => rename(l.service, b)) })),
    deliveries: deliveries.map((d) => ({ service: d.service, body: rename(d.service, d.body) })),
  };
}

async function expectStoredEqualsFold(store: DynamoTaskStore, lifecycles: Lifecycle[]) {
  for (const l of lifecycles) {
    expect(await store.getTask(l.id)).toEqual(reduceTask(callbacksOf(l)));
  }
}

/** Delivers records in batches until every one is acknowledged, as SQS redelivers failed items. */
async function deliverUntilDone(records: SQSRecord[], store: DynamoTaskStore, batchSize: number, maxRounds = 10) {
  let pending = records;
  for (let round = 0; pending.length && round < maxRounds; round++) {
    const failed: SQSRecord[] = [];
    for (let i = 0; i < pending.length; i += batchSize) {
      const batch = pending.slice(i, i + batchSize);
      const res = await processBatch(sqsEvent(batch), { store, log, concurrency: 4 });
      const ids = new Set(res.batchItemFailures.map((f) => f.itemIdentifier));
      failed.push(...batch.filter((r) => ids.has(r.messageId)).map(receivedAgain));
    }
    pending = failed;
  }
  return pending;
}

describe('worker property: any order, any duplicates, any batching', () => {
  test('stored tasks equal the fold of the distinct callbacks', async () => {
    await fc.assert(
      fc.asyncProperty(
        anyLifecycles({ maxLength: 3 }).chain((ls) =>
          fc.tuple(fc.constant(ls), interleavedDeliveries(ls, { maxExtra: 6 }), fc.integer({ min: 1, max: 10 })),
        ),
        async ([ls, ds, batchSize]) => {
          const { lifecycles, deliveries } = isolate(ls, ds);
          const store = new DynamoTaskStore({ client: local.db.client, tableName: local.db.tableName, inlineKeys: 1 });
          const records = deliveries.map((d) => sqsRecord(d.service, d.body));
          const left = await deliverUntilDone(records, store, batchSize);
          expect(left).toEqual([]);
          await expectStoredEqualsFold(store, lifecycles);
        },
      ),
      { numRuns: sized(10, 40) },
    );
  });
});

describe('fault injection: a failed write at every position, then redelivery', () => {
  // One task of each service, interleaved with a few duplicates: every write of that run fails once.
  const lifecycleArb = fc
    .tuple(recordingLifecycle(), screenshotLifecycle())
    .chain((ls) => fc.tuple(fc.constant(ls as Lifecycle[]), interleavedDeliveries(ls, { maxExtra: 3 })));
  const samples = fc.sample(lifecycleArb, { numRuns: 1, seed: 42 });

  for (const when of ['before', 'after'] as const) {
    const title = `write N fails ${when} reaching the table, for N across the run: state equals the fold, counts exact`;
    test(title, async () => {
      for (const [ls, ds] of samples) {
        // Count the writes of a clean run first.
        const probe = isolate(ls, ds);
        const counter = faultyClient(local.db.client, { failWrite: 0, when });
        const clean = new DynamoTaskStore({ client: counter.client, tableName: local.db.tableName });
        await deliverUntilDone(
          probe.deliveries.map((d) => sqsRecord(d.service, d.body)),
          clean,
          5,
        );
        const total = counter.writes();
        expect(total).toBeGreaterThan(probe.deliveries.length);

        for (const n of writePositions(total, 4)) {
          const { lifecycles, deliveries } = isolate(ls, ds);
          const faulty = faultyClient(local.db.client, { failWrite: n, when });
          const store = new DynamoTaskStore({ client: faulty.client, tableName: local.db.tableName });
          const left = await deliverUntilDone(
            deliveries.map((d) => sqsRecord(d.service, d.body)),
            store,
            5,
          );
          expect(left).toEqual([]);
          expect(faulty.fired()).toBe(true);
          await expectStoredEqualsFold(store, lifecycles);
        }
      }
    });
  }
});
