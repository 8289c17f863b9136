// The header's counts under chaos, with the ordering of a FIFO queue simulated: three workers over the same
// tasks, one batch of a task at a time and in order, random latency on every DynamoDB call, workers killed
// before or after a random write (the whole batch comes back), failed records coming back with everything
// after them in their task. Every task must equal the fold, every header's counts a recount of its items,
// and each task's event sequence numbers only grow.
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSRecord } from 'aws-lambda';
import fc from 'fast-check';
import { countsOf } from '../../lib/aws/dynamo/items.ts';
import { TaskQueries } from '../../lib/aws/dynamo/queries.ts';
import { TableReader } from '../../lib/aws/dynamo/table-client.ts';
import { DynamoTaskStore } from '../../lib/aws/dynamo/task-store.ts';
import { ID_FIELD_OF } from '../../lib/platform/services.ts';
import { reduceTask } from '../../lib/domain/reduce-task.ts';
import { countFiles } from '../../lib/domain/task-parts.ts';
import type { TaskEvent } from '../../lib/domain/task-events.ts';
import { createRandom, type Random } from '../../lib/emulator/random.ts';
import { createLogger } from '../../lib/log.ts';
import { processBatch } from '../../lib/worker/process-batch.ts';
import { dyingClient } from '../support/faulty-client.ts';
import { anyLifecycles, callbacksOf, interleavedDeliveries, type Lifecycle } from '../support/lifecycles.ts';
import { useQuietDynamo } from '../support/quiet-dynamo.ts';
import { receivedAgain, sqsEvent, sqsRecord } from '../support/sqs-events.ts';

const local = useQuietDynamo();
const log = createLogger('test');
const SEEDS = Array.from({ length: 12 }, (_, i) => 1000 + i);

/** Every DynamoDB call of a client delayed by 0 to 4 ms, drawn from the run's generator. */
function withLatency(client: DynamoDBClient, random: Random): DynamoDBClient {
  return new Proxy(client, {
    get(target, prop, receiver) {
      if (prop !== 'send') return Reflect.get(target, prop, receiver);
      const send = Reflect.get(target, prop, receiver) as (c: unknown) => Promise<unknown>;
      return async (command: unknown) => {
        await new Promise((r) => setTimeout(r, random.int(0, 4)));
        return send.call(target, command);
      };
    },
  });
}

/** A worker process that dies as its k-th write goes out (before or after it reaches the table). */
/** A worker that dies at a random one of its first writes, before or after it reaches the table. */
function randomDeath(client: DynamoDBClient, random: Random) {
  return dyingClient(client, { failWrite: random.int(1, 14), when: random.chance(0.5) ? 'before' : 'after' });
}

/** A FIFO queue of the records, one group per task: a group is handed out only when none of it is in flight. */
class FifoQueue {
  private readonly groups = new Map<string, SQSRecord[]>();
  private readonly busy = new Set<string>();

  push(group: string, record: SQSRecord): void {
    const g = this.groups.get(group) ?? [];
    g.push(record);
    this.groups.set(group, g);
  }

  done(): boolean {
    return this.busy.size === 0 && [...this.groups.values()].every((g) => g.length === 0);
  }

  /** Up to `size` records, the heads of idle groups in order; their groups are busy until `settle`. */
  take(size: number, random: Random): { group: string; records: SQSRecord[] }[] {
    const out: { group: string; records: SQSRecord[] }[] = [];
    let left = size;
    for (const [group, records] of this.groups) {
      if (left === 0) break;
      if (this.busy.has(group) || records.length === 0) continue;
      const n = Math.min(left, random.int(1, 4), records.length);
      out.push({ group, records: records.splice(0, n) });
      this.busy.add(group);
      left -= n;
    }
    return out;
  }

  /** A group's records back: those failed, and every one after the first failure, at the head, in order. */
  settle(group: string, records: SQSRecord[], failed: Set<string>): void {
    const first = records.findIndex((r) => failed.has(r.messageId));
    if (first >= 0) this.groups.get(group)!.unshift(...records.slice(first).map(receivedAgain));
    this.busy.delete(group);
  }
}

async function runChaos(seed: number): Promise<void> {
  const random = createRandom(seed);
  const [lifecycles, deliveries] = fc.sample(
    anyLifecycles({ maxLength: 3 }).chain((ls) =>
      fc.tuple(fc.constant(ls), interleavedDeliveries(ls, { maxExtra: 5 })),
    ),
    { numRuns: 1, seed },
  )[0]!;
  const prefix = `c${seed}-`;
  const rename = (l: Pick<Lifecycle, 'service'>, body: Record<string, unknown>) => ({
    ...body,
    [ID_FIELD_OF[l.service]]: prefix + String(body[ID_FIELD_OF[l.service]]),
  });
  const tasks = lifecycles.map((l) => ({ ...l, id: prefix + l.id, bodies: l.bodies.map((b) => rename(l, b)) }));
  const queue = new FifoQueue();
  // Sequence numbers beyond 2^53, growing within each group as SQS's do.
  let sequence = 10n ** 19n + 7n;
  for (const d of deliveries) {
    const body = rename(d, d.body);
    const group = `${body.appKey}/${body[ID_FIELD_OF[d.service]]}`;
    queue.push(group, sqsRecord(d.service, body, { sequenceNumber: String(sequence) }));
    sequence += BigInt(random.int(1, 3));
  }

  const published: TaskEvent[] = [];
  const events = { publish: async (batch: readonly TaskEvent[]) => void published.push(...batch) };
  const warm = [0, 1, 2].map(
    () => new DynamoTaskStore({ client: withLatency(local.db.client, random), tableName: local.db.tableName }),
  );
  let rounds = 0;
  const worker = async (w: number) => {
    while (!queue.done()) {
      if (++rounds > 2000) throw new Error('the run did not settle');
      const batch = queue.take(6, random);
      if (batch.length === 0) {
        await new Promise((r) => setTimeout(r, 1));
        continue;
      }
      const records = batch.flatMap((b) => b.records);
      const dying = random.chance(0.35) ? randomDeath(withLatency(local.db.client, random), random) : null;
      const store = dying ? new DynamoTaskStore({ client: dying.client, tableName: local.db.tableName }) : warm[w]!;
      const res = await processBatch(sqsEvent(records), { store, log, concurrency: 3, events, maxReceiveCount: 1000 });
      // A dead process answers nothing: the whole batch comes back.
      const failed = new Set(
        dying?.died() ? records.map((r) => r.messageId) : res.batchItemFailures.map((f) => f.itemIdentifier),
      );
      for (const b of batch) queue.settle(b.group, b.records, failed);
    }
  };
  await Promise.all([0, 1, 2].map(worker));

  const store = new DynamoTaskStore({ client: local.db.client, tableName: local.db.tableName });
  const queries = new TaskQueries(new TableReader(local.db.client, local.db.tableName), Date.now);
  for (const l of tasks) {
    expect(await store.getTask(l.id)).toEqual(reduceTask(callbacksOf(l)));
    const header = (await queries.findHeader(l.id))!;
    const whole = (await queries.assembled(header)).parts;
    const files = countFiles(whole.files);
    const uploaded = files.fileCount - files.pendingFiles - files.failedFiles;
    expect(countsOf(header)).toEqual({
      files: files.fileCount,
      pending: files.pendingFiles,
      uploaded,
      failed: files.failedFiles,
      events: whole.eventCount,
    });
    const sequences = published.filter((e) => e.task.id === l.id).map((e) => e.sequence);
    expect(sequences).toEqual([...sequences].sort((a, b) => a - b));
  }
}

test(`FIFO-ordered chaos over ${SEEDS.length} seeds: tasks equal the fold, headers equal a recount`, async () => {
  for (const seed of SEEDS) await runChaos(seed);
}, 240_000);
