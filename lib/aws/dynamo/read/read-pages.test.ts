// The paginated reads through the TaskStore interface, against dynalite: pages bounded in bytes and in
// requests still add up to the whole listing, exactly once and in order; ties in the sort time; cursors
// that were tampered with or belong to another listing are refused. What each listing must hold comes
// from the seeding plan.
import { Buffer } from 'node:buffer';
import { DeleteItemCommand, ScanCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import type { Page, PageRequest, TaskQuery, TaskStore } from '../../../domain/task-store.ts';
import type { TaskSummary } from '../../../domain/task-summary.ts';
import { InvalidCursorError } from '../../../domain/task-store.ts';
import {
  applyTasks,
  expectedTask,
  recordingTask,
  screenshotTask,
  type SeedTask,
} from '../../../../devkit/seeds/seed-tasks.ts';
import { meter, writeTask } from '../../../../bench/task-size.ts';
import { dynamoClient, startDynamo, type LocalDynamo } from '../../../../devkit/local/dynamo.ts';
import { Keys } from '../table/table.ts';
import { DynamoTaskStore } from './task-store.ts';
import { sized } from '../../../../test/support/size.ts';

const DAY = 86_400_000;
const now = Date.now();
let dynamo: LocalDynamo;
let store: DynamoTaskStore;

// Five tasks of one room and appKey sharing one first-callback time, in two statuses; five more spread
// over 200 days; a screenshot task with 40 images and long file names.
const tied = [0, 1, 2, 3, 4].map((i) =>
  recordingTask({
    id: `rec-tie-${i}`,
    appKey: 'app-tie',
    roomId: 'room-tie',
    sessionId: `s-tie-${i}`,
    userId: `u-${i}`,
    at: now - 5 * DAY,
    outcome: i % 2 === 0 ? 'running' : 'completed',
  }),
);
const spread = [0, 1, 2, 3, 4].map((i) =>
  recordingTask({
    id: `rec-spread-${i}`,
    appKey: 'app-spread',
    roomId: `room-spread-${i}`,
    sessionId: 's-spread',
    userId: '',
    at: now - (1 + i * 45) * DAY,
    outcome: 'ended',
  }),
);
const images = screenshotTask({
  id: 'img-wide',
  appKey: 'app-img',
  roomId: 'room-img',
  sessionId: `s-${'long'.repeat(60)}`,
  at: now - 3 * DAY,
  images: 40,
  failEvery: 3,
});
// Two screenshot tasks of 40 callbacks whose raw bodies expire (some, all) in the events tests.
const expiring = ['some', 'all'].map((which) =>
  screenshotTask({
    id: `img-expiring-${which}`,
    appKey: `app-expiring-${which}`,
    roomId: 'room-expiring',
    sessionId: 's-expiring',
    at: now - 4 * DAY,
    images: 39,
  }),
);
const all: SeedTask[] = [...tied, ...spread, images, ...expiring];

beforeAll(async () => {
  dynamo = await startDynamo();
  store = new DynamoTaskStore({ client: dynamo.client, tableName: dynamo.tableName });
  await applyTasks(store, all);
}, 60_000);
afterAll(() => dynamo.stop());

/** Follows cursors to the end, checking each page against its bounds. */
async function follow<T>(
  read: (page: PageRequest) => Promise<Page<T>>,
  page: Omit<PageRequest, 'cursor'>,
  sizeOf: (item: T) => number,
): Promise<{ items: T[]; pages: T[][] }> {
  const pages: T[][] = [];
  let cursor: string | undefined;
  do {
    const p = await read({ ...page, cursor });
    expect(p.items.length).toBeLessThanOrEqual(page.limit);
    if (page.maxBytes !== undefined && p.items.length > 1) {
      // The page stopped at the item that reached the budget, not later.
      const before = p.items.slice(0, -1).reduce((n, item) => n + sizeOf(item), 0);
      expect(before).toBeLessThan(page.maxBytes);
    }
    pages.push(p.items);
    cursor = p.next ?? undefined;
    expect(pages.length).toBeLessThan(500);
  } while (cursor);
  return { items: pages.flat(), pages };
}

const jsonBytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value), 'utf8');

async function tasks(s: TaskStore, query: TaskQuery, page: Omit<PageRequest, 'cursor'>) {
  return follow<TaskSummary>((p) => s.listTasksPage(query, p), page, jsonBytes);
}

describe('pages bounded in bytes', () => {
  test('files: every page stops at the item that reaches maxBytes, and the pages add up to the task', async () => {
    const expected = expectedTask(images);
    const maxBytes = 1500;
    const { items, pages } = await follow(
      async (page) => {
        const p = await store.getTaskPage({ id: 'img-wide' }, page);
        return { items: p!.task.files, next: p!.nextFilesCursor };
      },
      { limit: 1000, maxBytes },
      jsonBytes,
    );
    expect(items).toEqual(expected.files);
    expect(pages.length).toBeGreaterThan(5);
    expect(pages.every((p) => p.length >= 1)).toBe(true);
  });

  test('events and tasks: the same', async () => {
    const events = await follow(
      async (page) => (await store.listEventsPage({ id: 'img-wide' }, page))!,
      { limit: 500, maxBytes: 3000 },
      jsonBytes,
    );
    expect(events.items).toEqual(await store.listEvents('img-wide'));
    expect(events.items).toHaveLength(41);
    expect(events.pages.length).toBeGreaterThan(5);

    const listed = await tasks(store, { since: now - 300 * DAY }, { limit: 100, maxBytes: 900 });
    expect(listed.pages.length).toBeGreaterThan(3);
    expect(listed.items.map((s) => s.id)).toEqual(
      (await tasks(store, { since: now - 300 * DAY }, { limit: 100 })).items.map((s) => s.id),
    );
  });
});

describe('listings bounded in requests', () => {
  test('two index queries per page over 300 day partitions: short or empty pages, then every task once', async () => {
    const frugal = new DynamoTaskStore({
      client: dynamo.client,
      tableName: dynamo.tableName,
      readBudget: { queriesPerPage: 2 },
    });
    const { items, pages } = await tasks(frugal, { since: now - 300 * DAY }, { limit: 50 });
    expect(new Set(items.map((s) => s.id))).toEqual(new Set(all.map((t) => t.id)));
    expect(items).toHaveLength(all.length);
    expect(items.map((s) => s.sortAt)).toEqual([...items.map((s) => s.sortAt)].sort((a, b) => b - a));
    // 300 days, at most two queries a page: well over a hundred pages, most of them empty.
    expect(pages.length).toBeGreaterThan(100);
    expect(pages.filter((p) => p.length === 0).length).toBeGreaterThan(90);
  });

  test('a filter no index serves, with few headers per page: every match once, in order', async () => {
    const frugal = new DynamoTaskStore({
      client: dynamo.client,
      tableName: dynamo.tableName,
      readBudget: { headersPerPage: 2 },
    });
    const { items } = await tasks(frugal, { since: now - 300 * DAY, status: 'ended' }, { limit: 50 });
    expect(items.map((s) => s.id)).toEqual(spread.map((t) => t.id));
  });
});

describe('ties and moves between index partitions', () => {
  test(
    'five tasks with one sort time, a page of one at a time, by room and by appKey (two statuses ' + 'merged)',
    async () => {
      const byRoom = await tasks(store, { roomId: 'room-tie' }, { limit: 1 });
      const byApp = await tasks(store, { appKey: 'app-tie' }, { limit: 1 });
      const ids = tied.map((t) => t.id).sort();
      for (const listed of [byRoom, byApp]) {
        expect(listed.items.map((s) => s.id).sort()).toEqual(ids);
        expect(listed.pages.filter((p) => p.length > 0)).toHaveLength(5);
      }
      // The same order on every listing: the pages are a stable sequence.
      expect((await tasks(store, { roomId: 'room-tie' }, { limit: 2 })).items).toEqual(byRoom.items);
      expect((await tasks(store, { appKey: 'app-tie' }, { limit: 3 })).items).toEqual(byApp.items);
      expect(
        (await tasks(store, { appKey: 'app-tie', status: 'completed' }, { limit: 1 })).items.map((s) => s.id),
      ).toEqual(expect.arrayContaining(['rec-tie-1', 'rec-tie-3']));
    },
  );

  test('since after until: an empty last page', async () => {
    expect(await store.listTasksPage({ since: now, until: now - DAY }, { limit: 10 })).toEqual({
      items: [],
      next: null,
    });
  });
});

describe('cursors', () => {
  const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const decode = (cursor: string) => JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));

  test('one made for another listing, or altered, is refused; an unaltered one is taken', async () => {
    const first = await store.listTasksPage({ appKey: 'app-tie' }, { limit: 2 });
    const cursor = decode(first.next!);
    expect((await store.listTasksPage({}, { limit: 2, cursor: first.next! })).items).toHaveLength(2);
    const altered = [
      { ...cursor, p: cursor.p.slice(1) },
      { ...cursor, p: cursor.p.map(() => ({ i: 5 })) },
      { ...cursor, p: cursor.p.map((p: any) => (p ? { ...p, s: cursor.q.to + 1 } : p)) },
      { ...cursor, p: cursor.p.map((p: any) => (p?.k ? { ...p, k: 'SIG#x' } : { i: 0, k: 'TASK#x' })) },
      { ...cursor, q: { ...cursor.q, from: cursor.q.to + 1 } },
      { ...cursor, q: { ...cursor.q, st: 'done' } },
    ];
    for (const value of altered) {
      await expect(store.listTasksPage({}, { limit: 2, cursor: encode(value) })).rejects.toThrow(InvalidCursorError);
    }
    for (const query of [{ appKey: 'app-other' }, { roomId: 'room-tie' }, { service: 'screenshot' as const }]) {
      await expect(store.listTasksPage(query, { limit: 2, cursor: first.next! })).rejects.toThrow(
        /another (appKey|roomId|service) filter/,
      );
    }
  });

  test('a file or event cursor stays inside its own task and kind', async () => {
    const page = await store.getTaskPage({ id: 'img-wide' }, { limit: 5 });
    const next = page!.nextFilesCursor!;
    // Another task's partition from the same position: its files after that name, none of img-wide's.
    const other = await store.getTaskPage({ id: 'rec-tie-1' }, { limit: 5, cursor: next });
    expect(other!.task.id).toBe('rec-tie-1');
    await expect(store.listEventsPage({ id: 'img-wide' }, { limit: 5, cursor: next })).rejects.toThrow(
      InvalidCursorError,
    );
    await expect(
      store.getTaskPage({ id: 'img-wide' }, { limit: 5, cursor: encode({ f: 'x'.repeat(1025) }) }),
    ).rejects.toThrow(InvalidCursorError);
  });
});

describe('events whose raw bodies have expired', () => {
  /** The deliveries (raw bodies) of an appKey's task, in timestamp order: dynalite has no TTL, tests delete them. */
  async function deliveriesOf(appKey: string): Promise<Record<string, AttributeValue>[]> {
    const found: Record<string, AttributeValue>[] = [];
    let start: Record<string, AttributeValue> | undefined;
    do {
      const page = await dynamo.client.send(
        new ScanCommand({
          TableName: dynamo.tableName,
          FilterExpression: 'begins_with(pk, :p)',
          ExpressionAttributeValues: { ':p': { S: Keys.deliveryPk(appKey, '') } },
          ExclusiveStartKey: start,
        }),
      );
      found.push(...(page.Items ?? []));
      start = page.LastEvaluatedKey;
    } while (start);
    return found.sort((a, b) => Number(a.timestamp!.N) - Number(b.timestamp!.N));
  }
  const expire = (items: Record<string, AttributeValue>[]) =>
    Promise.all(
      items.map((i) =>
        dynamo.client.send(new DeleteItemCommand({ TableName: dynamo.tableName, Key: { pk: i.pk!, sk: i.sk! } })),
      ),
    );

  test('limit 10 over 40 callbacks, a few bodies expired: a full page and a cursor; the pages add up', async () => {
    const [task] = expiring;
    const bodies = await deliveriesOf(task!.appKey);
    expect(bodies).toHaveLength(40);
    const gone = bodies.filter((_, i) => i === 1 || i === 2 || i % 10 === 7);
    await expire(gone);
    const left = bodies.filter((b) => !gone.includes(b)).map((b) => Number(b.timestamp!.N));

    const first = (await store.listEventsPage({ id: task!.id }, { limit: 10 }))!;
    expect(first.items).toHaveLength(10);
    expect(first.next).toEqual(expect.any(String));
    const { items, pages } = await follow(
      async (page) => (await store.listEventsPage({ id: task!.id }, page))!,
      { limit: 10 },
      jsonBytes,
    );
    expect(items.map((e) => e.timestamp)).toEqual(left);
    expect(left).toHaveLength(34);
    expect(pages.map((p) => p.length)).toEqual([10, 10, 10, 4]);
    expect(await store.listEvents(task!.id)).toEqual(items);
  });

  test('all bodies expired: one empty page, no cursor', async () => {
    const [, task] = expiring;
    await expire(await deliveriesOf(task!.appKey));
    // Keyed by time, a body gone is gone from the index too: nothing to look up, no cursor.
    expect(await store.listEventsPage({ id: task!.id }, { limit: 500 })).toMatchObject({ items: [], next: null });
    expect(await store.listEvents(task!.id)).toEqual([]);
  });
});

describe('a page of callbacks whatever the size of its task', () => {
  // 1,000 images in npm test, ten pages of the largest page and more: what a page costs cannot grow with them.
  const LARGE = sized(1_000, 3_000);
  test(`a page costs the same read units and requests on a task of ${LARGE} callbacks as on a small one`, async () => {
    // Tasks written in the store's own item shapes, each callback with its delivery: 10, 100 and LARGE images,
    // under ids of one length (an item's size is what its read units count).
    for (const [id, images] of [
      ['img-size-s', 10],
      ['img-size-m', 100],
      ['img-size-l', LARGE],
    ] as const)
      await writeTask(dynamo.client, dynamo.tableName, id, `app-${id}`, images);
    const client = dynamoClient(dynamo.endpoint);
    const metered = meter(client);
    const reader = new DynamoTaskStore({ client, tableName: dynamo.tableName });
    const cost = async (id: string, page: PageRequest) => {
      metered.take();
      const read = (await reader.listEventsPage({ id }, page))!;
      return { cost: metered.take(), read };
    };
    // A page as full on each: 10 of the task of 10 images (11 callbacks), 100 of the task of 100.
    const small = await cost('img-size-s', { limit: 10 });
    const mid = await cost('img-size-m', { limit: 100 });
    const large10 = await cost('img-size-l', { limit: 10 });
    const large100 = await cost('img-size-l', { limit: 100 });
    expect(small.read.items).toHaveLength(10);
    expect(large100.read.items).toHaveLength(100);
    expect(large10.cost).toEqual(small.cost);
    expect(large100.cost).toEqual(mid.cost);
    // The header's Query and one of the page: no read of the task's recorded keys, no BatchGetItem.
    expect(large100.cost.requests).toBe(2);
    expect(large100.cost.rcu).toBeLessThan(15);
    // In timestamp order, the next page from the cursor, the same order as the whole task's callbacks.
    const stamps = large100.read.items.map((e) => e.timestamp);
    expect(stamps).toEqual([...stamps].sort((a, b) => a - b));
    const next = (await reader.listEventsPage({ id: 'img-size-l' }, { limit: 100, cursor: large100.read.next! }))!;
    expect(next.items[0]!.timestamp).toBeGreaterThanOrEqual(stamps.at(-1)!);
    const whole = await reader.listEvents('img-size-l');
    expect(whole).toHaveLength(LARGE + 1);
    expect(whole.slice(0, 200)).toEqual([...large100.read.items, ...next.items]);
    client.destroy();
  }, 60_000);
});
