// Listings by the facts of time and by time of change or end, against dynalite: the tasks are written through
// the worker's batch logic at a clock the test moves (the count update keeps the CHG hour buckets),
// and the facts the sweeper writes are set on the items in the designed shapes (docs/task-store.md). What each
// listing must hold is stated from the plan below, not read back from the store.
import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { applyTasks, recordingTask, screenshotTask, type SeedTask } from '../../../../devkit/seeds/seed-tasks.ts';
import { InvalidCursorError, type TaskQuery } from '../../../domain/task-store.ts';
import type { TaskSummary } from '../../../domain/task-summary.ts';
import { screenshotStartOrEnd, screenshotUpload } from '../../../platform/bodies.ts';
import { SUCCESS } from '../../../platform/failures.ts';
import { startDynamo, type LocalDynamo } from '../../../../devkit/local/dynamo.ts';
import { FILE_MARK_ATTRS, TIME_ATTRS } from '../time/time-items.ts';
import { Keys } from '../table/table.ts';
import { DynamoTaskStore } from './task-store.ts';
import { TableReader } from '../table/table-client.ts';
import { bucketPk, readBucketEntries } from '../time/time-buckets.ts';

/** Under a loaded machine a test of several listings may take more than the default 5 s. */
const SLOW_MS = 30_000;
const HOUR = 3_600_000;
const H0 = Date.UTC(2026, 10, 20, 10, 0, 0);
let clock = H0 + 10 * 60_000;
let dynamo: LocalDynamo;
let store: DynamoTaskStore;

const shot = { appKey: 'app-t', sessionId: 'sess-mover', roomId: 'room-t', imageId: 'mover', extra: '' };
const config = { trigger: 1, slicesSec: 10, renderMode: 0, picResolution: '640x360' };
const rec = (id: string, at: number, outcome: 'running' | 'completed' | 'upload_failed'): SeedTask =>
  recordingTask({ id, appKey: 'app-t', roomId: 'room-t', sessionId: `sess-${id}`, userId: 'u-1', at, outcome });

// Hour 10: an old completed task, a task that will stall, one whose upload fails, a screenshot task that moves.
const early: SeedTask[] = [
  rec('old', H0, 'completed'),
  rec('stuck', H0 + 60_000, 'running'),
  rec('gone', H0 + 120_000, 'upload_failed'),
  screenshotTask({ id: 'soon', appKey: 'app-t', roomId: 'room-t', sessionId: 'sess-soon', at: H0, images: 3 }),
  screenshotTask({ id: 'mover', appKey: 'app-t', roomId: 'room-t', sessionId: 'sess-mover', at: H0, images: 1 }),
];
// Hour 13: a new completed task; the mover gets an image and its end.
const late: SeedTask[] = [
  rec('new', H0 + 3 * HOUR, 'completed'),
  {
    service: 'screenshot',
    id: 'mover',
    appKey: 'app-t',
    bodies: [
      screenshotUpload(shot, H0 + 3 * HOUR + 120_000, 'late.jpg', null),
      screenshotStartOrEnd(shot, 3, H0 + 3 * HOUR + 180_000, SUCCESS, config),
    ],
  },
];

async function setAttrs(key: { pk: string; sk: string }, values: Record<string, number>): Promise<void> {
  const names: Record<string, string> = {};
  const vals: Record<string, { N: string }> = {};
  const sets = Object.entries(values).map(([attr, n], i) => {
    names[`#a${i}`] = attr;
    vals[`:v${i}`] = { N: String(n) };
    return `#a${i} = :v${i}`;
  });
  await dynamo.client.send(
    new UpdateItemCommand({
      TableName: dynamo.tableName,
      Key: { pk: { S: key.pk }, sk: { S: key.sk } },
      UpdateExpression: `SET ${sets.join(', ')}`,
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: vals,
    }),
  );
}
const header = (id: string) => ({ pk: Keys.taskPk(id), sk: Keys.headerSk('app-t') });

beforeAll(async () => {
  dynamo = await startDynamo();
  store = new DynamoTaskStore({ client: dynamo.client, tableName: dynamo.tableName, now: () => clock });
  await applyTasks(store, early, clock);
  clock = H0 + 3 * HOUR + 10 * 60_000;
  await applyTasks(store, late, clock);
  // The sweeper's facts, as it writes them: `gone`'s file lost, `stuck` stalled, `soon` purged in 3 hours.
  const gone = (await store.getTask('gone', 'app-t'))!;
  const purgeAt = gone.files[0]!.purgeAt!;
  await setAttrs(header('gone'), { [TIME_ATTRS.lost]: 1 });
  await setAttrs(
    { pk: Keys.taskPk('gone'), sk: Keys.fileSk('app-t', gone.files[0]!.fileName) },
    {
      [FILE_MARK_ATTRS.lostAt]: purgeAt,
      [FILE_MARK_ATTRS.warnedAt]: purgeAt - 2 * HOUR,
    },
  );
  await setAttrs(header('stuck'), { [TIME_ATTRS.stalledSince]: H0 + 60_000 + 6 * HOUR });
  // `soon`: one image failed 21 hours ago (purged 24 hours after its first failure).
  const soon = (await store.getTask('soon', 'app-t'))!;
  await setAttrs(header('soon'), { nFailed: 1 });
  await dynamo.client.send(
    new UpdateItemCommand({
      TableName: dynamo.tableName,
      Key: { pk: { S: Keys.taskPk('soon') }, sk: { S: Keys.fileSk('app-t', soon.files[0]!.fileName) } },
      UpdateExpression: 'SET #u.#ok = :no, firstFailureAt = :t',
      ExpressionAttributeNames: { '#u': 'upload', '#ok': 'ok' },
      ExpressionAttributeValues: { ':no': { BOOL: false }, ':t': { N: String(clock + 3 * HOUR - 24 * HOUR) } },
    }),
  );
}, 60_000);
afterAll(() => dynamo.stop());

/** Every page of a listing, each page at most `limit` rows: the ids in order, and each page's size. */
async function listAll(query: TaskQuery, limit = 50): Promise<{ ids: string[]; rows: TaskSummary[] }> {
  const rows: TaskSummary[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const page = await store.listTasksPage(query, { limit, cursor });
    expect(page.items.length).toBeLessThanOrEqual(limit);
    rows.push(...page.items);
    cursor = page.next ?? undefined;
    pages += 1;
  } while (cursor && pages < 50);
  return { ids: rows.map((r) => r.id), rows };
}
const sorted = (ids: string[]) => [...ids].sort();

describe('listings by time of change and of end', () => {
  it(
    'lists the tasks whose latest callback is that late, each once, whatever hours they changed in',
    async () => {
      expect(sorted((await listAll({ updatedSince: H0 + 3 * HOUR })).ids)).toEqual(['mover', 'new']);
      const all = (await listAll({ updatedSince: H0 })).ids;
      expect(sorted(all)).toEqual(['gone', 'mover', 'new', 'old', 'soon', 'stuck']);
    },
    SLOW_MS,
  );

  it(
    'pages of one row add up to the same listing, newest hour first',
    async () => {
      const { ids } = await listAll({ updatedSince: H0 }, 1);
      expect(sorted(ids)).toEqual(['gone', 'mover', 'new', 'old', 'soon', 'stuck']);
      expect(ids.slice(0, 2).sort()).toEqual(['mover', 'new']);
    },
    SLOW_MS,
  );

  it(
    'lists ended tasks by their end, with the other filters',
    async () => {
      expect(sorted((await listAll({ endedSince: H0 + 3 * HOUR })).ids)).toEqual(['mover', 'new']);
      expect(sorted((await listAll({ endedSince: H0 })).ids)).toEqual(['gone', 'mover', 'new', 'old']);
      expect((await listAll({ endedSince: H0, status: 'upload_failed' })).ids).toEqual(['gone']);
      expect((await listAll({ endedSince: H0, service: 'screenshot' })).ids).toEqual(['mover']);
    },
    SLOW_MS,
  );

  it(
    'the mover has an entry in each hour it changed in, and its header names the latest',
    async () => {
      const item = await dynamo.client.send(
        new UpdateItemCommand({
          TableName: dynamo.tableName,
          Key: { pk: { S: header('mover').pk }, sk: { S: header('mover').sk } },
          UpdateExpression: 'SET #x = :x',
          ExpressionAttributeNames: { '#x': 'probe' },
          ExpressionAttributeValues: { ':x': { N: '1' } },
          ReturnValues: 'ALL_NEW',
        }),
      );
      // Its last change (`ca`, whole minutes) in the 13 h bucket.
      const ca = Number(item.Attributes?.[TIME_ATTRS.changedAt]?.N);
      expect(Math.floor((ca * 60_000 - 1) / HOUR) * HOUR).toBe(H0 + 3 * HOUR);
      const named: string[] = [];
      for await (const e of readBucketEntries(new TableReader(dynamo.client, dynamo.tableName), 'CHG', H0, clock))
        named.push(`${new Date(e.bucket).toISOString().slice(11, 13)}h ${e.id}`);
      // One entry per task and hour it changed in (the receiver's clock: 10 h, then 13 h).
      expect(named.sort()).toEqual([
        '10h gone',
        '10h mover',
        '10h old',
        '10h soon',
        '10h stuck',
        '13h mover',
        '13h new',
      ]);
      expect(bucketPk('CHG', H0 + 3 * HOUR)).toBe('CHG#2026-11-20T13:00');
    },
    SLOW_MS,
  );

  it(
    'rows carry the end time, the duration and the user',
    async () => {
      const row = (await listAll({ endedSince: H0, service: 'recording', status: 'completed' })).rows.find(
        (r) => r.id === 'old',
      )!;
      expect(row.endedAt).toBe(H0 + 1000);
      expect(row.durationMs).toBe(1000);
      expect(row.userId).toBe('u-1');
    },
    SLOW_MS,
  );

  it(
    'refuses a cursor resumed with other filters',
    async () => {
      const first = await store.listTasksPage({ updatedSince: H0 }, { limit: 1 });
      expect(first.next).not.toBeNull();
      await expect(
        store.listTasksPage({ updatedSince: H0, status: 'completed' }, { limit: 1, cursor: first.next! }),
      ).rejects.toBeInstanceOf(InvalidCursorError);
    },
    SLOW_MS,
  );
});

describe('listings by the facts of time', () => {
  it(
    'lost: the tasks with lost files, their rows counting them, their files shown lost',
    async () => {
      const { rows } = await listAll({ lost: true });
      expect(rows.map((r) => r.id)).toEqual(['gone']);
      expect(rows[0]!.lostFiles).toBe(1);
      expect(rows[0]!.failedFiles).toBe(1);
      expect(rows[0]!.status).toBe('upload_failed');
      const task = (await store.getTask('gone', 'app-t'))!;
      expect(task.files[0]!.upload).toBe('lost');
    },
    SLOW_MS,
  );

  it(
    'stalled: the stalled tasks with their stalledSince',
    async () => {
      const { rows } = await listAll({ stalled: true });
      expect(rows.map((r) => [r.id, r.stalledSince])).toEqual([['stuck', H0 + 60_000 + 6 * HOUR]]);
      expect((await store.getTask('stuck', 'app-t'))!.stalledSince).toBe(H0 + 60_000 + 6 * HOUR);
      expect((await store.getTask('old', 'app-t'))!.stalledSince).toBeNull();
    },
    SLOW_MS,
  );

  it(
    'purge window: failed files not lost purged within it; a lost file is not',
    async () => {
      expect((await listAll({ purgeWithinMs: 6 * HOUR })).ids).toEqual(['soon']);
      expect((await listAll({ purgeWithinMs: 2 * HOUR })).ids).toEqual([]);
    },
    SLOW_MS,
  );

  it(
    'pages through a filter with one row a page, and keeps the filter in the cursor',
    async () => {
      const first = await store.listTasksPage({ lost: true }, { limit: 1 });
      expect(first.items.map((r) => r.id)).toEqual(['gone']);
      if (first.next) {
        const rest = await store.listTasksPage({}, { limit: 1, cursor: first.next });
        expect(rest.items).toEqual([]);
        await expect(store.listTasksPage({ stalled: true }, { limit: 1, cursor: first.next })).rejects.toBeInstanceOf(
          InvalidCursorError,
        );
      }
    },
    SLOW_MS,
  );
});

describe('a page bounded in headers read', () => {
  it(
    'a budget of 2 headers a page still adds up to the whole listing, each task once',
    async () => {
      const tight = new DynamoTaskStore({
        client: dynamo.client,
        tableName: dynamo.tableName,
        now: () => clock,
        readBudget: { headersPerPage: 2 },
      });
      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = await tight.listTasksPage({ updatedSince: H0 }, { limit: 50, cursor });
        seen.push(...page.items.map((r) => r.id));
        cursor = page.next ?? undefined;
        pages += 1;
      } while (cursor && pages < 50);
      expect(seen.sort()).toEqual(['gone', 'mover', 'new', 'old', 'soon', 'stuck']);
      // Seven entries read two at a time.
      expect(pages).toBeGreaterThanOrEqual(4);
    },
    SLOW_MS,
  );
});

describe('what the hour entries cost the worker', () => {
  it(
    'one CHG entry per task and hour, the end included, and no write of its own for the hour',
    async () => {
      const sent: { name: string; input: any }[] = [];
      const client = new Proxy(dynamo.client, {
        get(target, prop, receiver) {
          if (prop !== 'send') return Reflect.get(target, prop, receiver);
          return (command: any) => {
            sent.push({ name: command.constructor.name, input: command.input });
            return target.send(command);
          };
        },
      });
      let now = H0 + 30 * HOUR + 60_000;
      const counted = new DynamoTaskStore({ client, tableName: dynamo.tableName, now: () => now });
      // Entries written alone (PutItem) or with the batch's others (BatchWriteItem).
      const written = () =>
        sent.flatMap((c): { pk: { S: string } }[] => {
          if (c.name === 'PutItemCommand') return [c.input.Item];
          if (c.name !== 'BatchWriteItemCommand') return [];
          return Object.values(c.input.RequestItems as Record<string, { PutRequest: { Item: any } }[]>)
            .flat()
            .map((w) => w.PutRequest.Item);
        });
      const entries = (kind: string) => written().filter((item) => String(item.pk.S).startsWith(`${kind}#`)).length;
      // The hour is recorded by the count update itself, never by an update of its own.
      const hourWrites = () =>
        sent.filter((c) => c.name === 'UpdateItemCommand' && /#ca = :ca, ver/.test(c.input.UpdateExpression)).length;
      await applyTasks(counted, [rec('costly', H0 + 30 * HOUR, 'completed')], now);
      expect([entries('CHG'), entries('END'), hourWrites()]).toEqual([1, 0, 0]);
      // Later callbacks of the same hour: nothing more; of another hour: one more CHG entry.
      const more = rec('costly', H0 + 30 * HOUR + 5 * 60_000, 'running');
      await applyTasks(counted, [more], now + 10 * 60_000);
      expect([entries('CHG'), entries('END')]).toEqual([1, 0]);
      now += 2 * HOUR;
      const again = rec('costly', H0 + 30 * HOUR + 10 * 60_000, 'running');
      await applyTasks(counted, [again], now);
      expect([entries('CHG'), entries('END'), hourWrites()]).toEqual([2, 0, 0]);
    },
    SLOW_MS,
  );
});
