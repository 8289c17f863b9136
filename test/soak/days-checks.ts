// The days part's checks at a moment (./days.ts): every task as the store holds it against the brute force
// (./days-oracle.ts), every event of a fact of time published as often as the facts say (exactly once when the
// fact held long enough to be found, at most once when it held briefly, never when it never held; once more per
// sweep that crashed holding the task), no event published twice otherwise, the listings `GET /tasks?lost=true`,
// `?stalled=true` and `?purgeBefore=6h` through the read API's handler, and every armed task's DUE entry still in
// the table (entries past their TTL are deleted, as DynamoDB would).
import { listTasksEvent } from '../support/api-events.ts';
import { isDeepStrictEqual } from 'node:util';
import { handleApiRequest } from '../../lib/api/handle-request.ts';
import type { TableClient } from '../../lib/aws/dynamo/table/table-client.ts';
import type { DynamoTaskStore } from '../../lib/aws/dynamo/read/task-store.ts';
import type { TaskSweeps } from '../../lib/aws/dynamo/time/task-sweeps.ts';
import { timeOf } from '../../lib/aws/dynamo/time/time-items.ts';
import { readBucketEntries } from '../../lib/aws/dynamo/time/time-buckets.ts';
import { taskEventId, type TaskEvent } from '../../lib/domain/task-events.ts';
import type { Logger } from '../../lib/log.ts';
import {
  type AppliedCallback,
  type Certainty,
  certaintyOf,
  expectedTaskAt,
  holdingAt,
  type OracleSettings,
  strongest,
  taskFactsAt,
} from './days-oracle.ts';

const HOUR = 3_600_000;

export interface CheckInput {
  now: number;
  appKey: string;
  settings: OracleSettings;
  store: DynamoTaskStore;
  sweeps: TaskSweeps;
  table: TableClient;
  log: Logger;
  /** Each task's callbacks applied, by task id. */
  applied: ReadonlyMap<string, AppliedCallback[]>;
  /** Every publication so far, in order. */
  published: readonly TaskEvent[];
  /** Per task, the sweeps that crashed holding it (each may make the next sweep publish its facts once more). */
  crashLeases: ReadonlyMap<string, number>;
}

/** What a check found: its problems, and the facts the brute force counts by then (held long enough or not). */
export interface CheckResult {
  problems: string[];
  facts: { lost: number; warned: number; stalled: number; resumed: number; settled: number };
}

export const TIME_TYPES = new Set(['file.purge_warning', 'file.lost', 'task.stalled', 'task.resumed', 'task.settled']);

/** How many times an event may be published: exactly once, at most once, never (plus the crashes' allowance). */
function countProblem(what: string, c: Certainty, n: number, allowance: number): string | null {
  if (c === 'must' && n >= 1 && n <= 1 + allowance) return null;
  if (c === 'may' && n <= 1 + allowance) return null;
  if (c === 'not' && n === 0) return null;
  return `${what}: published ${n} times, expected ${c === 'must' ? 'once' : c === 'may' ? 'at most once' : 'never'}`;
}

export async function checkAt(input: CheckInput): Promise<CheckResult> {
  const { now, settings: s, applied, appKey } = input;
  const lag = s;
  const problems: string[] = [];
  const facts = { lost: 0, warned: 0, stalled: 0, resumed: 0, settled: 0 };
  const count = new Map<string, number>();
  const byTask = new Map<string, TaskEvent[]>();
  for (const e of input.published) {
    count.set(e.id, (count.get(e.id) ?? 0) + 1);
    const list = byTask.get(e.task.id) ?? [];
    byTask.set(e.task.id, list);
    list.push(e);
  }
  const expectedLists = { lost: new Map<string, Certainty>(), stalled: new Map(), purge: new Map() } as Record<
    'lost' | 'stalled' | 'purge',
    Map<string, Certainty>
  >;
  const raise = (list: Map<string, Certainty>, id: string, c: Certainty) => {
    const was = list.get(id) ?? 'not';
    if (c === 'must' || (c === 'may' && was === 'not')) list.set(id, c);
  };

  for (const [id, callbacks] of applied) {
    const f = taskFactsAt(callbacks, now, s);
    if (!f.task) continue;
    const actual = await input.store.getTask(id);
    const expected = expectedTaskAt(f, actual, now, lag);
    if (!isDeepStrictEqual(actual, expected))
      problems.push(`task ${id}: stored ${brief(actual)}, expected ${brief(expected)}`);
    const service = f.task.service;
    const allowance = input.crashLeases.get(id) ?? 0;
    const eventId = (type: Parameters<typeof taskEventId>[1], file: string | null, instance?: string) =>
      taskEventId({ appKey, service, id }, type, file, instance);
    const n = (eid: string) => count.get(eid) ?? 0;
    const mine = (byTask.get(id) ?? []).filter((e) => TIME_TYPES.has(e.type));
    const known = new Set<string>();
    const expect = (what: string, eid: string, c: Certainty) => {
      known.add(eid);
      const p = countProblem(`${what} of ${id}`, c, n(eid), allowance);
      if (p) problems.push(p);
    };

    for (const [moment, w] of f.stalls) {
      const c = certaintyOf(w, now, lag);
      if (c !== 'not') facts.stalled += 1;
      expect(`task.stalled ${moment}`, eventId('task.stalled', null, String(moment)), c);
      const resumed = eventId('task.resumed', null, String(moment));
      // Resumed when the change that ended the stall found it stored: after a stall found, at most one after.
      if (w.to === null || w.to > now) expect(`task.resumed ${moment}`, resumed, 'not');
      else {
        if (c !== 'not') facts.resumed += 1;
        expect(
          `task.resumed ${moment}`,
          resumed,
          c === 'must' ? 'must' : n(eventId('task.stalled', null, String(moment))) ? 'may' : 'not',
        );
      }
      if (c !== 'not' && (w.to === null || w.to > now)) raise(expectedLists.stalled, id, c);
    }
    for (const [settledAt, w] of f.settles) {
      const c = certaintyOf(w, now, lag);
      if (c !== 'not') facts.settled += 1;
      const ids = new Set(mine.filter((e) => e.type === 'task.settled' && e.settledAt === settledAt).map((e) => e.id));
      for (const eid of ids) known.add(eid);
      const published = [...ids].reduce((sum, eid) => sum + n(eid), 0);
      const p = countProblem(`task.settled ${settledAt} of ${id}`, c, ids.size, 0);
      if (p) problems.push(p);
      if (published > ids.size * (1 + allowance))
        problems.push(`task.settled ${settledAt} of ${id}: published ${published} times`);
    }
    const fileNames = new Set([...f.warnings.keys(), ...f.losses.keys(), ...f.task.files.map((x) => x.fileName)]);
    for (const name of fileNames) {
      const warned = strongest(f.warnings.get(name), now, lag);
      const lost = strongest(f.losses.get(name), now, lag);
      if (warned !== 'not') facts.warned += 1;
      if (lost !== 'not') facts.lost += 1;
      expect(`file.purge_warning ${name}`, eventId('file.purge_warning', name), warned);
      expect(`file.lost ${name}`, eventId('file.lost', name), lost);
      const file = f.task.files.find((x) => x.fileName === name);
      if (file?.upload !== 'failed' || file.purgeAt === null) continue;
      const lostNow = certaintyOf(holdingAt(f.losses.get(name), now), now, lag);
      if (lostNow !== 'not') raise(expectedLists.lost, id, lostNow);
      // Listed by the purge window while failed and not lost: certain while purgeAt is ahead of now.
      if (file.purgeAt <= now + 6 * HOUR && lostNow !== 'must')
        raise(
          expectedLists.purge,
          id,
          file.purgeAt > now && Math.abs(file.purgeAt - now - 6 * HOUR) > 60_000 ? 'must' : 'may',
        );
    }
    for (const e of mine)
      if (!known.has(e.id))
        problems.push(`${e.type} of ${id} that no fact explains (${JSON.stringify(e).slice(0, 300)})`);
  }

  // No fact of time published twice, but a crashed sweep's facts once more. (The worker's events of callbacks are
  // at least once by design: a later callback of a failed file publishes its `file.upload_failed` again.)
  for (const [eid, times] of count) {
    if (times <= 1) continue;
    const e = input.published.find((x) => x.id === eid)!;
    if (!TIME_TYPES.has(e.type)) continue;
    if (times > 1 + (input.crashLeases.get(e.task.id) ?? 0))
      problems.push(`${e.type} of ${e.task.id} (${eid}) published ${times} times`);
  }

  for (const [name, query] of [
    ['lost', 'lost=true'],
    ['stalled', 'stalled=true'],
    ['purge', 'purgeBefore=6h'],
  ] as const) {
    const listed = await listAll(input, query);
    const want = expectedLists[name];
    for (const [id, c] of want)
      if (c === 'must' && !listed.has(id)) problems.push(`GET /tasks?${query}: ${id} missing`);
    for (const id of listed) if (!want.has(id)) problems.push(`GET /tasks?${query}: ${id} listed, expected not`);
  }

  // The invariant of the arms: a task armed at a bucket has an entry there (TTL has not removed it).
  for (const id of applied.keys()) {
    const header = await input.sweeps.header({ appKey, id }, { read: 0, write: 0 });
    const armed = header ? timeOf(header).armed : null;
    if (armed === null) continue;
    let found = false;
    for await (const entry of readBucketEntries(input.table, 'DUE', armed, armed)) if (entry.id === id) found = true;
    if (!found) problems.push(`task ${id} armed at ${new Date(armed).toISOString()} without a DUE entry there`);
  }
  return { problems, facts };
}

function brief(t: unknown): string {
  if (!t || typeof t !== 'object') return String(t);
  const task = t as { status?: string; stalledSince?: unknown; settledAt?: unknown; files?: { upload: string }[] };
  const uploads = (task.files ?? []).map((f) => f.upload[0]).join('');
  return JSON.stringify({ status: task.status, stalledSince: task.stalledSince, settledAt: task.settledAt, uploads });
}

/** Every task of a listing, page after page, through the read API's handler. */
async function listAll(input: CheckInput, query: string): Promise<Set<string>> {
  const ids = new Set<string>();
  let cursor: string | null = null;
  do {
    const q: string = `${query}&limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const res = await handleApiRequest(listTasksEvent(q, 'soak'), {
      store: input.store,
      log: input.log,
      now: () => input.now,
    });
    const body = JSON.parse(typeof res.body === 'string' ? res.body : '{}');
    if (res.statusCode !== 200) throw new Error(`GET /tasks?${query}: ${res.statusCode} ${JSON.stringify(body)}`);
    for (const t of body.tasks as { id: string }[]) ids.add(t.id);
    cursor = body.nextCursor;
  } while (cursor);
  return ids;
}
