// One seed of the header counts' chaos run, shared by `counts.chaos.test.ts` (hundreds of seeds in `npm test`)
// and the soak's chaos part (thousands): the callbacks of a few random tasks, with duplicates, in a FIFO queue
// simulated one group per task and delivered as SQS FIFO delivers (a receive takes the group whose first message
// is oldest first and as many of each group's messages as fit, up to ten; every receive counts for each message
// received, and one received more than maxReceiveCount times goes to the dead-letter queue, failed or only held
// back), applied by three workers at once through `processBatch` and the DynamoDB store, with random latency on
// every DynamoDB call, stale answers to eventually consistent reads, writes refused now and then on warm workers
// (throttled before they land, or landed with the answer lost: the batch comes back, often to the same worker),
// and workers dying before or after a random write at any receive, the last included (their batch comes back to
// a fresh worker). Once the queue is empty the dead letters are redriven, as `callbacks dlq redrive` does, and
// nothing else: no recount. It answers what it found wrong rather than throwing, so that a run of thousands can
// report and go on: every task must equal `reduceTask`, every header's counts a recount of its items, the
// distinct events published must lie between MUST and MAY, each task's event sequence numbers must only grow,
// the events of one sequence number must show one task, and every fact an event reports must be in the stored task.
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSRecord } from 'aws-lambda';
import fc from 'fast-check';
import { isDeepStrictEqual } from 'node:util';
import { countsOf } from '../../../lib/aws/dynamo/table/items.ts';
import { TaskQueries } from '../../../lib/aws/dynamo/read/queries.ts';
import { TableReader } from '../../../lib/aws/dynamo/table/table-client.ts';
import { DynamoTaskStore } from '../../../lib/aws/dynamo/read/task-store.ts';
import { reduceTask } from '../../../lib/domain/reduce-task.ts';
import { ID_FIELD_OF, type Service } from '../../../lib/platform/services.ts';
import { claimSignature } from '../../../lib/ingest/claim.ts';
import type { TaskEvent } from '../../../lib/domain/task-events.ts';
import { checkPublished, expectedEvents } from '../../../lib/domain/expected-events.ts';
import { countFiles } from '../../../lib/domain/task-parts.ts';
import { createRandom, type Random } from '../../../devkit/emulator/random.ts';
import { createLogger } from '../../../lib/log.ts';
import { processBatch } from '../../../lib/worker/process-batch.ts';
import { dyingClient } from '../../support/faulty-client.ts';
import { anyLifecycles, callbacksOf, interleavedDeliveries, type Lifecycle } from '../../support/lifecycles.ts';
import { redriven, sqsEvent, sqsRecord } from '../../support/sqs-events.ts';
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
  /** Chance that a write of a warm worker is refused (throttled) or lands with its answer lost. */
  throttleRate: number;
  /** The queue's maxReceiveCount: a message received more often goes to the dead-letter queue. */
  maxReceiveCount: number;
  /** Told what each batch held and how it ended (a failing seed run again, to see why). */
  trace?: (line: string) => void;
  /** Added to the seed's task ids, so that one seed can run several times on one table (its timings differ). */
  runTag?: string;
  /**
   * Chance that a callback is signed and its signature sent again by a forger with another body (a failed start of
   * its task): the ingest claims both, in the order it receives them (the genuine first), and the forgery waits in
   * a group of its own, so the worker meets the two in any order, within a batch or across batches.
   */
  forgeRate: number;
}

/** Small tasks and short latencies: hundreds of seeds in seconds, every fault still in play. */
export const CHAOS_DEFAULTS: ChaosOptions = {
  maxTasks: 3,
  maxExtra: 4,
  maxLatencyMs: 2,
  deathRate: 0.35,
  staleRate: 0.2,
  throttleRate: 0.03,
  maxReceiveCount: 3,
  forgeRate: 0.15,
};

export interface ChaosOutcome {
  seed: number;
  tasks: number;
  deliveries: number;
  /** Batches handed to workers, and those whose worker died. */
  batches: number;
  deaths: number;
  staleAnswers: number;
  /** Writes refused or whose answer was lost on warm workers. */
  throttles: number;
  /** Messages that went to the dead-letter queue (and were redriven). */
  deadLetters: number;
  /** Forged bodies sent under a genuine signature (each must be applied to no task). */
  forgeries: number;
  /** Everything found wrong, each a sentence naming the task; empty when the seed passed. */
  problems: string[];
}

const log = createLogger('chaos');
const WORKERS = 3;
/** Records a receive takes at most (Lambda's batch size on a FIFO queue). */
const TAKE = 10;
const MAX_ROUNDS = 3000;
/** Redrives of the dead-letter queue before the run gives up. */
const MAX_REDRIVES = 20;

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

/** A write of a warm worker refused now and then: throttled before it lands, or landed with its answer lost. */
function withThrottles(client: DynamoDBClient, random: Random, rate: number, counted: () => void): DynamoDBClient {
  const writes = new Set(['PutItemCommand', 'UpdateItemCommand', 'DeleteItemCommand', 'BatchWriteItemCommand']);
  return new Proxy(client, {
    get(target, prop, receiver) {
      if (prop !== 'send') return Reflect.get(target, prop, receiver);
      const send = Reflect.get(target, prop, receiver) as (c: unknown) => Promise<unknown>;
      return async (command: { constructor: { name: string } }) => {
        if (!writes.has(command.constructor.name) || !random.chance(rate)) return send.call(target, command);
        counted();
        if (random.chance(0.5)) await send.call(target, command).catch(() => undefined);
        throw Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), {
          name: 'ProvisionedThroughputExceededException',
        });
      };
    },
  });
}

/**
 * A FIFO queue of the records, one group per task, delivered as SQS FIFO delivers: a group is handed out only when
 * none of it is in flight; a receive takes the idle groups, the one whose first message is oldest first, as many of
 * each group's messages as fit, in order; each message taken counts a receive, and one past maxReceiveCount moves
 * to the dead-letter queue instead.
 */
class FifoQueue {
  private readonly groups = new Map<string, SQSRecord[]>();
  private readonly busy = new Set<string>();
  readonly deadLetters: SQSRecord[] = [];
  private readonly maxReceiveCount: number;

  constructor(maxReceiveCount: number) {
    this.maxReceiveCount = maxReceiveCount;
  }

  push(group: string, record: SQSRecord): void {
    const g = this.groups.get(group) ?? [];
    g.push(record);
    this.groups.set(group, g);
  }

  done(): boolean {
    return this.busy.size === 0 && [...this.groups.values()].every((g) => g.length === 0);
  }

  /** Up to `size` records, as many of each idle group's as fit; their groups are busy until `settle`. */
  take(size: number): { group: string; records: SQSRecord[] }[] {
    const seq = (r: SQSRecord) => BigInt(r.attributes.SequenceNumber!);
    const idle = [...this.groups].filter(([group, records]) => !this.busy.has(group) && records.length > 0);
    idle.sort(([, a], [, b]) => (seq(a[0]!) < seq(b[0]!) ? -1 : 1));
    const out: { group: string; records: SQSRecord[] }[] = [];
    let left = size;
    for (const [group, records] of idle) {
      if (left === 0) break;
      const taken: SQSRecord[] = [];
      while (left > 0 && records.length > 0) {
        const waiting = records.shift()!;
        const received = Number(waiting.attributes.ApproximateReceiveCount) + 1;
        const record = { ...waiting, attributes: { ...waiting.attributes, ApproximateReceiveCount: String(received) } };
        if (Number(record.attributes.ApproximateReceiveCount) > this.maxReceiveCount) this.deadLetters.push(record);
        else {
          taken.push(record);
          left -= 1;
        }
      }
      if (taken.length === 0) continue;
      out.push({ group, records: taken });
      this.busy.add(group);
    }
    return out;
  }

  /** A group's records back: those failed, and every one after the first failure, at the head, in order. */
  settle(group: string, records: SQSRecord[], failed: Set<string>): void {
    this.groups.get(group)!.unshift(...records.filter((r) => failed.has(r.messageId)));
    this.busy.delete(group);
  }
}

/** The seed's tasks (ids made unique to the seed) and their deliveries, in queue order. */
function seedTraffic(seed: number, opts: ChaosOptions & { runTag?: string }) {
  const [lifecycles, deliveries] = fc.sample(
    anyLifecycles({ maxLength: opts.maxTasks }).chain((ls) =>
      fc.tuple(fc.constant(ls), interleavedDeliveries(ls, { maxExtra: opts.maxExtra })),
    ),
    { numRuns: 1, seed },
  )[0]!;
  const prefix = `c${seed}${opts.runTag ?? ''}-`;
  const rename = (l: Pick<Lifecycle, 'service'>, body: Record<string, unknown>) => ({
    ...body,
    [ID_FIELD_OF[l.service]]: prefix + String(body[ID_FIELD_OF[l.service]]),
  });
  const tasks = lifecycles.map((l) => ({ ...l, id: prefix + l.id, bodies: l.bodies.map((b) => rename(l, b)) }));
  return { tasks, deliveries: deliveries.map((d) => ({ service: d.service, body: rename(d, d.body) })) };
}

/**
 * A signed callback and a forgery under its signature (the same task's start, failed), claimed at the ingest in that
 * order: the genuine body holds the claim, the forgery is marked replayed.
 */
async function claimedTwice(table: ChaosTable, service: Service, body: Record<string, unknown>, replayKey: string) {
  const deps = {
    dynamo: table.client,
    settings: { tableName: table.tableName, rawEventTtlDays: 90, claimDeadlineMs: 10_000 },
  };
  const claim = (json: Record<string, unknown>) =>
    claimSignature(deps, {
      raw: JSON.stringify(json),
      json,
      receivedAt: 1763800000000,
      verdict: 'valid',
      mode: 'enforce',
      requestId: null,
      service,
      appKey: String(json.appKey),
      id: String(json[ID_FIELD_OF[service]]),
      type: Number(json.type),
      replayKey,
    });
  const forgery = { ...body, type: 1, code: 500, errorMessage: 'forged', timestamp: Number(body.timestamp) - 1 };
  const genuine = await claim(body);
  const forged = await claim(forgery);
  if (!('claim' in genuine) || genuine.claim !== 'stored' || !('claim' in forged) || forged.claim !== 'replayed')
    throw new Error(`the ingest's claims did not hold: ${JSON.stringify({ genuine, forged })}`);
  return { replayKey, forgery };
}

export async function runCountsChaos(
  seed: number,
  table: ChaosTable,
  options: Partial<ChaosOptions> = {},
): Promise<ChaosOutcome> {
  const opts = { ...CHAOS_DEFAULTS, ...options };
  const random = createRandom(seed);
  const { tasks, deliveries } = seedTraffic(seed, opts);
  const queue = new FifoQueue(opts.maxReceiveCount);
  // Sequence numbers beyond 2^53, growing within each group as SQS's do.
  let sequence = 10n ** 19n + 7n;
  let forgeries = 0;
  for (const { service, body } of deliveries) {
    const group = `${body.appKey}/${body[ID_FIELD_OF[service]]}`;
    const forged = random.chance(opts.forgeRate);
    const signed = forged
      ? await claimedTwice(table, service, body, `rk-${seed}${opts.runTag ?? ''}-${forgeries}`)
      : null;
    // Not received yet: the queue counts a receive as it hands the record out.
    const record = sqsRecord(service, body, {
      sequenceNumber: String(sequence),
      receiveCount: 0,
      ...(signed ? { replayKey: signed.replayKey, claim: 'stored' as const } : {}),
    });
    queue.push(group, record);
    if (signed) {
      // The forgery goes to a group of its own (the ingest sets it aside), placed anywhere in the queue's order.
      sequence += 1n;
      const forgery = sqsRecord(service, signed.forgery, {
        sequenceNumber: String(sequence),
        receiveCount: 0,
        replayKey: signed.replayKey,
        claim: 'replayed',
      });
      queue.push(`aside/${seed}/${forgeries++}`, forgery);
    }
    const output = body.output as Record<string, unknown> | undefined;
    opts.trace?.(
      `${record.messageId}#${sequence} ${group} type ${body.type} code ${body.code} ` +
        `file ${output?.fileName ?? '-'} state ${output?.fileState ?? '-'} at ${body.timestamp}`,
    );
    sequence += BigInt(random.int(1, 3));
  }

  // One view of the table for every worker: its stale answers may come from any worker's earlier write.
  const stale = staleReads(table.client, { chance: opts.staleRate, strong: false, random: () => random.next() });
  const storeOn = (client: DynamoDBClient) => new DynamoTaskStore({ client, tableName: table.tableName });
  const published: TaskEvent[] = [];
  const events = { publish: async (batch: readonly TaskEvent[]) => void published.push(...batch) };
  let throttles = 0;
  const warm = Array.from({ length: WORKERS }, () =>
    storeOn(
      withThrottles(withLatency(stale.client, random, opts.maxLatencyMs), random, opts.throttleRate, () => {
        throttles += 1;
      }),
    ),
  );
  let batches = 0;
  let deaths = 0;
  let tracedEvents = 0;
  const worker = async (w: number) => {
    while (!queue.done()) {
      if (batches > MAX_ROUNDS) return;
      const taken = queue.take(random.int(1, TAKE));
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
      const res = await processBatch(sqsEvent(records), {
        store,
        log,
        concurrency: 3,
        events,
        maxReceiveCount: opts.maxReceiveCount,
      });
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
          ` -> ${died ? 'died' : `failed ${[...failed].join(' ') || 'none'}`}` +
          (died ? '' : ` outcomes ${res.outcomes.join(',')}`),
      );
      if (opts.trace) {
        const fresh = new TaskQueries(new TableReader(table.client, table.tableName), Date.now);
        for (const b of taken) {
          const id = b.group.slice(b.group.indexOf('/') + 1);
          const h = await fresh.findHeader(id).catch(() => null);
          opts.trace(`  header ${id}: ${h ? JSON.stringify(h) : 'none'}`);
        }
        for (const e of published.slice(tracedEvents))
          opts.trace(
            `  event ${e.type} ${e.task.id} seq ${e.sequence} ${e.task.status} ${JSON.stringify(e.task.files)}`,
          );
        tracedEvents = published.length;
      }
      for (const b of taken) queue.settle(b.group, b.records, failed);
    }
  };
  let deadLetters = 0;
  for (let redrive = 0; redrive <= MAX_REDRIVES; redrive++) {
    await Promise.all(Array.from({ length: WORKERS }, (_, w) => worker(w)));
    if (queue.deadLetters.length === 0) break;
    // `callbacks dlq redrive`: each dead letter back to its group as a new message, in order, nothing else.
    const letters = queue.deadLetters.splice(0);
    deadLetters += letters.length;
    opts.trace?.(`redrive ${letters.map((r) => r.messageId).join(' ')}`);
    for (const record of letters) {
      const body = JSON.parse(record.body) as Record<string, unknown>;
      const service = record.messageAttributes.service!.stringValue as 'recording' | 'screenshot';
      const copy = redriven(record, String(sequence));
      sequence += BigInt(random.int(1, 3));
      queue.push(`${body.appKey}/${body[ID_FIELD_OF[service]]}`, {
        ...copy,
        attributes: { ...copy.attributes, ApproximateReceiveCount: '0' },
      });
    }
  }

  const problems = await judge(tasks, published, table);
  if (batches > MAX_ROUNDS) problems.unshift(`the run did not settle in ${MAX_ROUNDS} batches`);
  if (queue.deadLetters.length > 0) problems.unshift(`dead letters left after ${MAX_REDRIVES} redrives`);
  return {
    seed,
    tasks: tasks.length,
    deliveries: deliveries.length,
    batches,
    deaths,
    staleAnswers: stale.staleAnswers(),
    throttles,
    deadLetters,
    forgeries,
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
    const counted = await countsAgainstRecount(queries, l.id);
    if (counted) problems.push(counted);
    const own = published.filter((e) => e.task.id === l.id);
    const sequences = own.map((e) => e.sequence);
    if (sequences.some((s, i) => i > 0 && s < sequences[i - 1]!))
      problems.push(`task ${l.id}: event sequence numbers went back: ${sequences.join(', ')}`);
    problems.push(...factsNotStored(l.id, own, oracle));
  }
  const check = checkPublished(expectedEvents(tasks.flatMap(callbacksOf)), published);
  for (const m of check.missing) problems.push(`event missing (MUST, not published): ${show(m)}`);
  for (const u of check.unexpected) problems.push(`event published outside MAY: ${show(u)}`);
  return problems;
}

/** A task's header counts against a recount of its items, read fresh: a sentence when they differ, else null. */
export async function countsAgainstRecount(queries: TaskQueries, id: string, appKey?: string): Promise<string | null> {
  const header = await queries.findHeader(id, appKey);
  if (!header) return `task ${id} has no header`;
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
  if (isDeepStrictEqual(counts, recount)) return null;
  return `task ${id}: header counts ${JSON.stringify(counts)}, a recount of its items ${JSON.stringify(recount)}`;
}

/**
 * What the events of a task report that the stored task (as the contract's fold of all its callbacks makes it)
 * does not hold: one task per sequence number, an end or a start that the task never got, a file it has not, a
 * completion with files not uploaded.
 */
export function factsNotStored(
  id: string,
  events: readonly TaskEvent[],
  task: ReturnType<typeof reduceTask>,
): string[] {
  const problems: string[] = [];
  const show = (v: unknown) => JSON.stringify(v);
  const bySequence = new Map<number, TaskEvent['task']>();
  for (const e of events) {
    const seen = bySequence.get(e.sequence);
    if (seen && !isDeepStrictEqual(seen, e.task))
      problems.push(`task ${id}: two tasks under sequence ${e.sequence}: ${show(seen)} and ${show(e.task)}`);
    bySequence.set(e.sequence, e.task);
    if (!task) continue;
    if (e.type === 'task.ended' && task.endedAt === null) problems.push(`task ${id}: task.ended, but no end stored`);
    if (e.type === 'task.started' && task.startedAt === null)
      problems.push(`task ${id}: task.started, but no start stored`);
    if (e.file && !task.files.some((f) => f.fileName === e.file!.fileName))
      problems.push(`task ${id}: ${e.type} of file ${e.file.fileName}, which the task has not`);
    if (e.type === 'task.completed' && (e.task.files.pending > 0 || e.task.files.failed > 0))
      problems.push(`task ${id}: task.completed with files not uploaded: ${show(e.task.files)}`);
    if (e.task.files.total > task.files.length)
      problems.push(`task ${id}: ${e.type} counts ${e.task.files.total} files, the task has ${task.files.length}`);
  }
  return problems;
}
