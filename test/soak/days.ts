// The soak's days part: the receiver over several simulated days on a fake clock. The emulator's traffic
// (./days-traffic.ts: lost uploads, stalled tasks, outages that end or outlast the 24 h hold, late, duplicated
// and reordered callbacks, tasks over midnight) is fed through the worker's batch path (`processBatch` over the
// DynamoDB store on dynalite, as the large part does) at the receiver time each callback arrives, and the
// sweeper (`sweep`, as the function runs it) every 5 simulated minutes: now and then two at once, now and then
// one that dies at one of its writes (before or after it reaches the table; nothing it sends arrives after
// that), now and then both. Bucket entries whose TTL has passed are deleted, as DynamoDB would.
//
// At every simulated midnight and at the end, ./days-checks.ts holds the store, the events published and the
// listings against the brute force of ./days-oracle.ts.
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DeleteItemCommand } from '@aws-sdk/client-dynamodb';
import { startDynamo, type LocalDynamo } from '../../devkit/local/dynamo.ts';
import { TableClient } from '../../lib/aws/dynamo/table/table-client.ts';
import { DynamoTaskStore } from '../../lib/aws/dynamo/read/task-store.ts';
import { TaskSweeps } from '../../lib/aws/dynamo/time/task-sweeps.ts';
import { TIME_ATTRS } from '../../lib/aws/dynamo/time/time-items.ts';
import { BUCKET_KINDS, type BucketKind, bucketPk, bucketStart } from '../../lib/aws/dynamo/time/time-buckets.ts';
import { defaultTimeSettings } from '../../lib/domain/deadlines.ts';
import type { TaskEvent } from '../../lib/domain/task-events.ts';
import type { EventPublisher } from '../../lib/domain/event-publisher.ts';
import { createLogger, setLogSink } from '../../lib/log.ts';
import { sweep } from '../../lib/sweeper/sweep.ts';
import { processBatch } from '../../lib/worker/process-batch.ts';
import { createRandom, type Random } from '../../devkit/emulator/random.ts';
import { dyingClient } from '../support/faulty-client.ts';
import { mustParse } from '../support/lifecycles.ts';
import { sqsEvent, sqsRecord } from '../support/sqs-events.ts';
import { checkAt, type CheckResult, TIME_TYPES } from './days-checks.ts';
import type { AppliedCallback, OracleSettings } from './days-oracle.ts';
import { DAY_MS, generateTraffic } from './days-traffic.ts';

const APP_KEY = 'soak-days';
const TICK_MS = 5 * 60_000;
const BATCH = 10;
/** Midnight UTC of the first simulated day. */
const START = Date.UTC(2026, 0, 5);

export interface DaysOptions {
  days: number;
  tasksPerDay: number;
  seed: string;
  /** The emulator's `--lose` and `--stall` rates. */
  lose?: number;
  stall?: number;
  /** Hours without any sweep on the third day from 03:00 (when there is one): the sweeper catches up after. */
  outageHours?: number;
  say?: (line: string) => void;
  /** A task id whose deliveries, sweeps and events are told to `say`, to follow a problem. */
  trace?: string;
}

export interface DaysFigures {
  days: number;
  tasks: { recording: number; screenshot: number };
  callbacks: { delivered: number; distinct: number; duplicates: number; late: number; batches: number };
  /** Failed files that succeeded hours later: after their purge warning, after their purgeAt. */
  lateSuccesses: { afterWarning: number; afterPurge: number };
  sweeps: {
    ticks: number;
    runs: number;
    twoAtOnce: number;
    crashed: number;
    crashedHolding: number;
    /** Ticks without a sweep (the outage). */
    skipped: number;
  };
  /** The facts of time the brute force counts at the end, those held too briefly to be found included. */
  facts: CheckResult['facts'];
  events: {
    published: number;
    distinct: number;
    byType: Record<string, number>;
    /** Facts of time published again by the sweep after a crashed one. */
    republishedAfterCrash: number;
    /** Events of callbacks published again (at least once: a later callback of the same fact). */
    republishedByWorker: number;
  };
  ttl: Record<BucketKind, number>;
  checks: number;
  problems: number;
  firstProblems: string[];
  realS: number;
  ok: boolean;
}

type SweepKind = 'one' | 'two' | 'crash' | 'one-and-crash';

function sweepKindOf(rng: Random, previous: SweepKind): SweepKind {
  const p = rng.next();
  // Never two crashes in a row: a fact is then found one sweep late at most.
  const crashes = previous !== 'crash' && previous !== 'one-and-crash';
  if (p < 0.05) return 'two';
  if (crashes && p < 0.09) return 'crash';
  if (crashes && p < 0.11) return 'one-and-crash';
  return 'one';
}

/** A client that notes the partitions its writes touch (reads pass through). */
function notingClient(client: DynamoDBClient, touched: Set<string>): DynamoDBClient {
  const send = client.send.bind(client) as (command: any) => Promise<any>;
  return new Proxy(client, {
    get(target, prop, receiver) {
      if (prop !== 'send') return Reflect.get(target, prop, receiver);
      return (command: any) => {
        const pk = command?.input?.Key?.pk?.S ?? command?.input?.Item?.pk?.S;
        if (typeof pk === 'string') touched.add(pk);
        return send(command);
      };
    },
  });
}

export async function runDays(o: DaysOptions, shared?: LocalDynamo): Promise<DaysFigures> {
  const say = o.say ?? (() => undefined);
  const started = Date.now();
  const db = shared ?? (await startDynamo('tasks-days'));
  // Every partition a request names by key, so that TTL's deletions read only the buckets that hold entries.
  const written = new Set<string>();
  const client = notingClient(db.client, written);
  const restoreLog = setLogSink(() => undefined);
  const log = createLogger('soak-days');
  const outageFrom = START + 2 * DAY_MS + 3 * 3_600_000;
  const outage = { from: outageFrom, to: outageFrom + (o.outageHours ?? 6) * 3_600_000 };
  const outages = o.days >= 3 && outage.to > outage.from ? [outage] : [];
  // The first sweep after a fact's moment, a bucket more for a deadline armed that close, a sweep more after a
  // crashed one, and a minute.
  const settings: OracleSettings = { ...defaultTimeSettings, lagMs: 3 * TICK_MS + 60_000, outages };
  const clock = { now: START };
  const store = new DynamoTaskStore({ client, tableName: db.tableName, now: () => clock.now });
  const table = new TableClient(client, db.tableName);
  const sweeps = new TaskSweeps(table);
  const published: TaskEvent[] = [];
  const iso = (ms: number) => new Date(ms).toISOString().slice(5, 19);
  const trace = (id: string, line: string) => id === o.trace && say(`trace ${iso(clock.now)} ${line}`);
  const publisher: EventPublisher = {
    publish: async (batch: readonly TaskEvent[]) => {
      published.push(...batch);
      for (const e of batch) trace(e.task.id, `published ${e.type} ${e.id.slice(0, 8)} ${e.occurredAt}`);
    },
  };
  const rng = createRandom(`${o.seed}/sweeps`);
  const trafficDays = Math.max(1, o.days - 1);
  const traffic = generateTraffic({
    start: START,
    days: trafficDays,
    tasksPerDay: o.tasksPerDay,
    seed: o.seed,
    appKey: APP_KEY,
    lose: o.lose ?? 0.1,
    stall: o.stall ?? 0.1,
  });
  const { deliveries } = traffic;
  say(
    `days: ${o.days} days, ${traffic.tasks.recording + traffic.tasks.screenshot} tasks, ${deliveries.length} ` +
      'callbacks delivered on a fake clock, swept every 5 minutes',
  );
  const applied = new Map<string, AppliedCallback[]>();
  const seen = new Set<string>();
  const crashLeases = new Map<string, number>();
  const f: DaysFigures = {
    days: o.days,
    tasks: traffic.tasks,
    callbacks: {
      delivered: deliveries.length,
      distinct: 0,
      duplicates: deliveries.filter((d) => d.duplicate).length,
      late: deliveries.filter((d) => d.late).length,
      batches: 0,
    },
    lateSuccesses: traffic.lateSuccesses,
    sweeps: { ticks: 0, runs: 0, twoAtOnce: 0, crashed: 0, crashedHolding: 0, skipped: 0 },
    facts: { lost: 0, warned: 0, stalled: 0, resumed: 0, settled: 0 },
    events: { published: 0, distinct: 0, byType: {}, republishedAfterCrash: 0, republishedByWorker: 0 },
    ttl: { DUE: 0, CHG: 0 },
    checks: 0,
    problems: 0,
    firstProblems: [],
    realS: 0,
    ok: false,
  };
  const problem = (p: string) => {
    f.problems += 1;
    if (f.firstProblems.length < 20) f.firstProblems.push(p);
  };
  const sweeperDeps = (client: DynamoDBClient, events: EventPublisher) => ({
    sweeps: new TaskSweeps(new TableClient(client, db.tableName)),
    events,
    time: defaultTimeSettings,
    log,
    lookBackMs: DAY_MS,
  });

  /** A sweep by a process that dies at one of its first writes; the tasks it died holding are noted. */
  const crashingSweep = async (now: number) => {
    const touched = new Set<string>();
    const plan = { failWrite: rng.int(1, 6), when: rng.chance(0.5) ? ('before' as const) : ('after' as const) };
    const dying = dyingClient(notingClient(client, touched), plan);
    const events: EventPublisher = {
      publish: async (batch: readonly TaskEvent[]) => {
        if (dying.died()) throw Object.assign(new Error('the sweeper died'), { name: 'SweeperDied' });
        await publisher.publish(batch);
      },
    };
    await sweep(now, sweeperDeps(dying.client, events)).catch(() => undefined);
    if (!dying.died()) return;
    f.sweeps.crashed += 1;
    for (const pk of touched) {
      if (!pk.startsWith('TASK#')) continue;
      const id = pk.slice('TASK#'.length);
      const header = await sweeps.header({ appKey: APP_KEY, id }, { read: 0, write: 0 });
      if (header?.[TIME_ATTRS.lease] === undefined) continue;
      crashLeases.set(id, (crashLeases.get(id) ?? 0) + 1);
      trace(id, 'a crashed sweep left its lease');
      f.sweeps.crashedHolding += 1;
    }
  };

  // Entries whose TTL has passed are gone, as DynamoDB deletes them: bucket after bucket as each expires.
  const nextToExpire: Record<BucketKind, number> = {
    DUE: bucketStart('DUE', START - 2 * DAY_MS),
    CHG: bucketStart('CHG', START - 2 * DAY_MS),
  };
  const expire = async (now: number) => {
    for (const kind of ['DUE', 'CHG'] as const) {
      const { width, ttlMs } = BUCKET_KINDS[kind];
      for (; nextToExpire[kind] + width + ttlMs <= now; nextToExpire[kind] += width) {
        const pk = bucketPk(kind, nextToExpire[kind]);
        if (!written.has(pk)) continue;
        const items = table.queryAll({
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': { S: pk } },
        });
        for await (const item of items) {
          if (typeof item.expiresAt !== 'number' || item.expiresAt * 1000 > now) {
            problem(`${pk} ${String(item.sk)}: expiresAt ${String(item.expiresAt)} later than its bucket's TTL`);
            continue;
          }
          await db.client.send(
            new DeleteItemCommand({ TableName: db.tableName, Key: { pk: { S: pk }, sk: { S: String(item.sk) } } }),
          );
          f.ttl[kind] += 1;
        }
      }
    }
  };

  const check = async (now: number) => {
    const result = await checkAt({
      now,
      appKey: APP_KEY,
      settings,
      store,
      sweeps,
      table,
      log,
      applied,
      published,
      crashLeases,
    });
    f.checks += 1;
    f.facts = result.facts;
    for (const p of result.problems) problem(`day ${(now - START) / DAY_MS}: ${p}`);
    say(
      `days: day ${(now - START) / DAY_MS} checked, ${result.problems.length} problems; facts so far ` +
        `${JSON.stringify(result.facts)}, ${published.length} events published`,
    );
  };

  let sequence = 10n ** 19n;
  let next = 0;
  let previous: SweepKind = 'one';
  try {
    for (let tick = START + TICK_MS; tick <= START + o.days * DAY_MS; tick += TICK_MS) {
      const due = [];
      while (next < deliveries.length && deliveries[next]!.at <= tick) due.push(deliveries[next++]!);
      for (let i = 0; i < due.length; i += BATCH) {
        const batch = due.slice(i, i + BATCH);
        clock.now = Math.max(clock.now, batch.at(-1)!.at);
        const records = batch.map((d) =>
          sqsRecord(d.service, d.body, {
            groupId: d.taskId,
            sequenceNumber: String(sequence++),
            receivedAt: clock.now,
          }),
        );
        const res = await processBatch(sqsEvent(records), {
          store,
          log,
          events: publisher,
          now: () => clock.now,
          time: defaultTimeSettings,
        });
        f.callbacks.batches += 1;
        if (res.batchItemFailures.length) problem(`a batch at ${clock.now} failed ${res.batchItemFailures.length}`);
        for (const d of batch) {
          const cb = mustParse(d.service, d.body);
          const key = `${cb.id}|${cb.key}`;
          trace(cb.id, `delivered type ${cb.type} ts ${cb.timestamp} ${seen.has(key) ? 'duplicate' : 'new'}`);
          if (seen.has(key)) continue;
          seen.add(key);
          const list = applied.get(cb.id) ?? [];
          applied.set(cb.id, list);
          list.push({ cb, at: clock.now });
        }
      }
      clock.now = tick;
      await expire(tick);
      f.sweeps.ticks += 1;
      if (outages.some((w) => tick >= w.from && tick < w.to!)) {
        f.sweeps.skipped += 1;
        if ((tick - START) % DAY_MS === 0) await check(tick);
        continue;
      }
      const kind = sweepKindOf(rng, previous);
      previous = kind;
      if (o.trace) trace(o.trace, `sweep ${kind}`);
      if (kind === 'one') await sweep(tick, sweeperDeps(client, publisher));
      if (kind === 'two') {
        f.sweeps.twoAtOnce += 1;
        await Promise.all([sweep(tick, sweeperDeps(client, publisher)), sweep(tick, sweeperDeps(client, publisher))]);
      }
      if (kind === 'crash') await crashingSweep(tick);
      if (kind === 'one-and-crash')
        await Promise.all([sweep(tick, sweeperDeps(client, publisher)), crashingSweep(tick)]);
      f.sweeps.runs += kind === 'one' || kind === 'crash' ? 1 : 2;
      if ((tick - START) % DAY_MS === 0) await check(tick);
    }
  } finally {
    setLogSink(restoreLog);
    if (!shared) await db.stop();
  }
  f.callbacks.distinct = seen.size;
  const ids = new Set<string>();
  for (const e of published) {
    f.events.byType[e.type] = (f.events.byType[e.type] ?? 0) + 1;
    if (ids.has(e.id)) f.events[TIME_TYPES.has(e.type) ? 'republishedAfterCrash' : 'republishedByWorker'] += 1;
    ids.add(e.id);
  }
  f.events.published = published.length;
  f.events.distinct = ids.size;
  f.realS = (Date.now() - started) / 1000;
  f.ok = f.problems === 0 && f.checks === o.days;
  return f;
}

/** The part of test/soak/RESULTS.md these figures make. */
export function daysMarkdown(f: DaysFigures): string[] {
  const n = (v: number) => v.toLocaleString('en-US');
  const types = Object.entries(f.events.byType)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([t, c]) => `${t} ${n(c)}`)
    .join(', ');
  const rows: [string, string][] = [
    [
      'days simulated / checks (each midnight and the end) / real time',
      `${f.days} / ${f.checks} / ${f.realS.toFixed(0)} s`,
    ],
    ['tasks: recordings / screenshots', `${n(f.tasks.recording)} / ${n(f.tasks.screenshot)}`],
    [
      'callbacks delivered / distinct / duplicates / late (a minute to 12 hours) / worker batches',
      `${n(f.callbacks.delivered)} / ${n(f.callbacks.distinct)} / ${n(f.callbacks.duplicates)} / ` +
        `${n(f.callbacks.late)} / ${n(f.callbacks.batches)}`,
    ],
    [
      'failed files that succeeded hours later: after their purge warning / after their purgeAt',
      `${n(f.lateSuccesses.afterWarning)} / ${n(f.lateSuccesses.afterPurge)}`,
    ],
    [
      'sweeper ticks / sweeps / two at once / crashed (holding a task) / ticks of the outage, without a sweep',
      `${n(f.sweeps.ticks)} / ${n(f.sweeps.runs)} / ${n(f.sweeps.twoAtOnce)} / ${n(f.sweeps.crashed)} ` +
        `(${n(f.sweeps.crashedHolding)}) / ${n(f.sweeps.skipped)}`,
    ],
    [
      'facts of time (brute force): lost files / purge warnings / stalls / resumes / settles',
      `${n(f.facts.lost)} / ${n(f.facts.warned)} / ${n(f.facts.stalled)} / ${n(f.facts.resumed)} / ` +
        n(f.facts.settled),
    ],
    [
      'events published / distinct ids / facts of time published again after a crashed sweep / events of ' +
        'callbacks published again (at least once)',
      `${n(f.events.published)} / ${n(f.events.distinct)} / ${n(f.events.republishedAfterCrash)} / ` +
        `${n(f.events.republishedByWorker)}`,
    ],
    ['events by type', types],
    ['bucket entries deleted at their TTL: DUE / CHG', `${n(f.ttl.DUE)} / ${n(f.ttl.CHG)}`],
    ['**problems**', `**${n(f.problems)}**`],
  ];
  return [
    'Each midnight and at the end: every task equal to the brute force of its callbacks and the clock (lost files, ' +
      'stalls, settles), every fact that held a sweep and a bucket long published exactly once (a briefer one at ' +
      'most once, one that never held never), `task.resumed` once per stall ended, nothing published twice but ' +
      'after a crashed sweep held its task, the listings `lost`, `stalled` and `purgeBefore=6h` as the facts say, ' +
      "every armed task's DUE entry still there once entries past their TTL are deleted.",
    '',
    '| Figure | Value |',
    '|---|---|',
    ...rows.map(([k, v]) => `| ${k} | ${v} |`),
    ...(f.firstProblems.length ? ['', 'First problems:', '', ...f.firstProblems.map((p) => `- ${p}`)] : []),
  ];
}
