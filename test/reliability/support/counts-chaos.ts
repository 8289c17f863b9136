// One seed of the header counts' chaos run, shared by `counts.chaos.test.ts` (hundreds of seeds in `npm test`)
// and the soak's chaos part (thousands): the callbacks of a few random tasks, with duplicates, in a FIFO queue
// simulated one group per task, applied by three workers at once through `processBatch` and the DynamoDB store,
// with random latency on every DynamoDB call, stale answers to eventually consistent reads, and workers dying
// before or after a random write (their whole batch comes back to a fresh worker, received once more).
// It answers what it found wrong rather than throwing, so that a run of thousands can report and go on:
// every task must equal `reduceTask`, every header's counts a recount of its items, the distinct events
// published must lie between MUST and MAY, and each task's event sequence numbers must only grow.
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSRecord } from 'aws-lambda';
import fc from 'fast-check';
import { isDeepStrictEqual } from 'node:util';
import { countsOf } from '../../../lib/aws/dynamo/items.ts';
import { TaskQueries } from '../../../lib/aws/dynamo/queries.ts';
import { TableReader } from '../../../lib/aws/dynamo/table-client.ts';
import { DynamoTaskStore } from '../../../lib/aws/dynamo/task-store.ts';
import { reduceTask } from '../../../lib/domain/reduce-task.ts';
import { ID_FIELD_OF } from '../../../lib/platform/services.ts';
import type { TaskEvent } from '../../../lib/domain/task-events.ts';
import { checkPublished, expectedEvents } from '../../../lib/domain/expected-events.ts';
import { countFiles } from '../../../lib/domain/task-parts.ts';
import { createRandom, type Random } from '../../../devkit/emulator/random.ts';
import { createLogger } from '../../../lib/log.ts';
import { processBatch } from '../../../lib/worker/process-batch.ts';
import { dyingClient } from '../../support/faulty-client.ts';
import { anyLifecycles, callbacksOf, interleavedDeliveries, type Lifecycle } from '../../support/lifecycles.ts';
import { receivedAgain, sqsEvent, sqsRecord } from '../../support/sqs-events.ts';
import { staleReads } from '../../support/stale-client.ts';

export interface ChaosTable {
  client: DynamoDBClient;
  tableName: string;
}

export interface ChaosOptions {
  /** Most tasks per seed (at least one). */
  maxTasks: number;
  /** Most extra copies of callbacks (duplicates, some with their keys reordered) per seed. */
  maxExtra: number;
  /** Most DynamoDB latency per call, ms (drawn from 0 to it). */
  maxLatencyMs: number;
  /** Chance that a batch goes to a worker that dies at one of its first writes. */
  deathRate: number;
  /** Chance that an eventually consistent read of an item written before answers an older version. */
  staleRate: number;
  /** Told what each batch held and how it ended (a failing seed run again, to see why). */
  trace?: (line: string) => void;
}

/** Small tasks and short latencies: hundreds of seeds in seconds, every fault still in play. */
export const CHAOS_DEFAULTS: ChaosOptions = {
  maxTasks: 3,
  maxExtra: 4,
  maxLatencyMs: 2,
  deathRate: 0.35,
  staleRate: 0.2,
};

export interface ChaosOutcome {
  seed: number;
  tasks: number;
  deliveries: number;
  /** Batches handed to workers, and those whose worker died. */
  batches: number;
  deaths: number;
  staleAnswers: number;
  /** Everything found wrong, each a sentence naming the task; empty when the seed passed. */
  problems: string[];
}

const log = createLogger('chaos');
const WORKERS = 3;
/** Records one worker takes at a time (the heads of idle groups, 1 to 4 of each). */
const TAKE = 6;
const MAX_ROUNDS = 2000;

/** Every DynamoDB call of a client delayed by 0 to `maxMs`, drawn from the run's generator. */
function withLatency(client: DynamoDBClient, random: Random, maxMs: number): DynamoDBClient {
  if (maxMs <= 0) return client;
  return new Proxy(client, {
    get(target, prop, receiver) {
      if (prop !== 'send') return Reflect.get(target, prop, receiver);
      const send = Reflect.get(target, prop, receiver) as (c: unknown) => Promise<unknown>;
      return async (command: unknown) => {
        await new Promise((r) => setTimeout(r, random.int(0, maxMs)));
        return send.call(target, command);
      };
    },
  });
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

/** The seed's tasks (ids made unique to the seed) and their deliveries, in queue order. */
function seedTraffic(seed: number, opts: ChaosOptions) {
  const [lifecycles, deliveries] = fc.sample(
    anyLifecycles({ maxLength: opts.maxTasks }).chain((ls) =>
      fc.tuple(fc.constant(ls), interleavedDeliveries(ls, { maxExtra: opts.maxExtra })),
    ),
    { numRuns: 1, seed },
  )[0]!;
  const prefix = `c${seed}-`;
  const rename = (l: Pick<Lifecycle, 'service'>, body: Record<string, unknown>) => ({
    ...body,
    [ID_FIELD_OF[l.service]]: prefix + String(body[ID_FIELD_OF[l.service]]),
  });
  const tasks = lifecycles.map((l) => ({ ...l, id: prefix + l.id, bodies: l.bodies.map((b) => rename(l, b)) }));
  return { tasks, deliveries: deliveries.map((d) => ({ service: d.service, body: rename(d, d.body) })) };
}

export async function runCountsChaos(
  seed: number,
  table: ChaosTable,
  options: Partial<ChaosOptions> = {},
): Promise<ChaosOutcome> {
  const opts = { ...CHAOS_DEFAULTS, ...options };
  const random = createRandom(seed);
  const { tasks, deliveries } = seedTraffic(seed, opts);
  const queue = new FifoQueue();
  // Sequence numbers beyond 2^53, growing within each group as SQS's do.
  let sequence = 10n ** 19n + 7n;
  for (const { service, body } of deliveries) {
    const group = `${body.appKey}/${body[ID_FIELD_OF[service]]}`;
    queue.push(group, sqsRecord(service, body, { sequenceNumber: String(sequence) }));
    sequence += BigInt(random.int(1, 3));
  }

  // One view of the table for every worker: its stale answers may come from any worker's earlier write.
  const stale = staleReads(table.client, { chance: opts.staleRate, strong: false, random: () => random.next() });
  const storeOn = (client: DynamoDBClient) => new DynamoTaskStore({ client, tableName: table.tableName });
  const published: TaskEvent[] = [];
  const events = { publish: async (batch: readonly TaskEvent[]) => void published.push(...batch) };
  const warm = Array.from({ length: WORKERS }, () => storeOn(withLatency(stale.client, random, opts.maxLatencyMs)));
  let batches = 0;
  let deaths = 0;
  const worker = async (w: number) => {
    while (!queue.done()) {
      if (batches > MAX_ROUNDS) return;
      const taken = queue.take(TAKE, random);
      if (taken.length === 0) {
        await new Promise((r) => setTimeout(r, 1));
        continue;
      }
      batches += 1;
      const records = taken.flatMap((b) => b.records);
      // A worker that dies at one of its first writes, before or after it reaches the table; the batch comes
      // back to a fresh one (nothing it knew is kept).
      const plan = random.chance(opts.deathRate)
        ? { failWrite: random.int(1, 14), when: random.chance(0.5) ? ('before' as const) : ('after' as const) }
        : null;
      const dying = plan ? dyingClient(withLatency(stale.client, random, opts.maxLatencyMs), plan) : null;
      const store = dying ? storeOn(dying.client) : warm[w]!;
      const res = await processBatch(sqsEvent(records), { store, log, concurrency: 3, events, maxReceiveCount: 1000 });
      const died = dying?.died() ?? false;
      if (died) deaths += 1;
      // A dead process answers nothing: the whole batch comes back.
      const failed = new Set(
        died ? records.map((r) => r.messageId) : res.batchItemFailures.map((f) => f.itemIdentifier),
      );
      opts.trace?.(
        `worker ${w} batch ${batches}${plan ? ` dying at write ${plan.failWrite} ${plan.when}` : ''}: ` +
          records
            .map((r) => `${r.messageId}#${r.attributes.SequenceNumber}x${r.attributes.ApproximateReceiveCount}`)
            .join(' ') +
          ` -> ${died ? 'died' : `failed ${[...failed].join(' ') || 'none'}`}`,
      );
      for (const b of taken) queue.settle(b.group, b.records, failed);
    }
  };
  await Promise.all(Array.from({ length: WORKERS }, (_, w) => worker(w)));

  const problems = await judge(tasks, published, table);
  if (batches > MAX_ROUNDS) problems.unshift(`the run did not settle in ${MAX_ROUNDS} batches`);
  return {
    seed,
    tasks: tasks.length,
    deliveries: deliveries.length,
    batches,
    deaths,
    staleAnswers: stale.staleAnswers(),
    problems,
  };
}

/** What the table and the published events say against the oracles, read fresh (strongly consistent). */
async function judge(tasks: readonly Lifecycle[], published: readonly TaskEvent[], table: ChaosTable) {
  const problems: string[] = [];
  const store = new DynamoTaskStore({ client: table.client, tableName: table.tableName });
  const queries = new TaskQueries(new TableReader(table.client, table.tableName), Date.now);
  const show = (v: unknown) => JSON.stringify(v);
  for (const l of tasks) {
    const stored = await store.getTask(l.id);
    const oracle = reduceTask(callbacksOf(l));
    if (!isDeepStrictEqual(stored, oracle))
      problems.push(`task ${l.id} differs from reduceTask: stored ${show(stored)}, expected ${show(oracle)}`);
    const header = await queries.findHeader(l.id);
    if (!header) {
      problems.push(`task ${l.id} has no header`);
      continue;
    }
    const whole = (await queries.assembled(header)).parts;
    const files = countFiles(whole.files);
    const recount = {
      files: files.fileCount,
      pending: files.pendingFiles,
      uploaded: files.fileCount - files.pendingFiles - files.failedFiles,
      failed: files.failedFiles,
      events: whole.eventCount,
    };
    const counts = countsOf(header);
    if (!isDeepStrictEqual(counts, recount))
      problems.push(`task ${l.id}: header counts ${show(counts)}, a recount of its items ${show(recount)}`);
    const sequences = published.filter((e) => e.task.id === l.id).map((e) => e.sequence);
    if (sequences.some((s, i) => i > 0 && s < sequences[i - 1]!))
      problems.push(`task ${l.id}: event sequence numbers went back: ${sequences.join(', ')}`);
  }
  const check = checkPublished(expectedEvents(tasks.flatMap(callbacksOf)), published);
  for (const m of check.missing) problems.push(`event missing (MUST, not published): ${show(m)}`);
  for (const u of check.unexpected) problems.push(`event published outside MAY: ${show(u)}`);
  return problems;
}
