// `GET /tasks` with the filters of the facts of time (`lost`, `stalled`, `purgeBefore`) and of time of change
// and end (`updatedSince`, `endedSince`), through the handler against the store on dynalite: the answers are
// the ones docs/openapi.yaml documents (test/support/openapi.ts), the rows the tasks the plan below says.
import { QueryCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { listTasksEvent } from '../../test/support/api-events.ts';
import { applyTasks, recordingTask, type SeedTask } from '../../devkit/seeds/seed-tasks.ts';
import { conformance } from '../../test/support/openapi.ts';
import { FILE_MARK_ATTRS, TIME_ATTRS } from '../aws/dynamo/time/time-items.ts';
import { Keys } from '../aws/dynamo/table/table.ts';
import { DynamoTaskStore } from '../aws/dynamo/read/task-store.ts';
import { startDynamo, type LocalDynamo } from '../../devkit/local/dynamo.ts';
import type { Logger } from '../log.ts';
import { handleApiRequest } from './handle-request.ts';
import { ApiRoutes } from './routes.ts';

/** Under a loaded machine a test of several listings may take more than the default 5 s. */
const SLOW_MS = 30_000;
const HOUR = 3_600_000;
const H0 = Date.UTC(2026, 10, 20, 10, 0, 0);
let clock = H0 + 5 * 60_000;
let dynamo: LocalDynamo;
let store: DynamoTaskStore;
const silent: Logger = { debug() {}, info() {}, warn() {}, error() {} };

const rec = (id: string, at: number, outcome: 'running' | 'completed' | 'upload_failed'): SeedTask =>
  recordingTask({ id, appKey: 'app-q', roomId: 'room-q', sessionId: `s-${id}`, userId: `u-${id}`, at, outcome });

async function setNumbers(pk: string, sk: string, values: Record<string, number>): Promise<void> {
  const entries = Object.entries(values);
  await dynamo.client.send(
    new UpdateItemCommand({
      TableName: dynamo.tableName,
      Key: { pk: { S: pk }, sk: { S: sk } },
      UpdateExpression: `SET ${entries.map((_, i) => `#a${i} = :v${i}`).join(', ')}`,
      ExpressionAttributeNames: Object.fromEntries(entries.map(([a], i) => [`#a${i}`, a])),
      ExpressionAttributeValues: Object.fromEntries(entries.map(([, n], i) => [`:v${i}`, { N: String(n) }])),
    }),
  );
}

/** The sort key of a task's one file item, read off the table. */
async function fileSkOf(id: string): Promise<string> {
  const res = await dynamo.client.send(
    new QueryCommand({
      TableName: dynamo.tableName,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :f)',
      ExpressionAttributeValues: { ':pk': { S: Keys.taskPk(id) }, ':f': { S: `${Keys.partsPrefix('app-q')}F#` } },
    }),
  );
  return res.Items![0]!.sk!.S!;
}

beforeAll(async () => {
  dynamo = await startDynamo();
  store = new DynamoTaskStore({ client: dynamo.client, tableName: dynamo.tableName, now: () => clock });
  await applyTasks(
    store,
    [rec('done', H0, 'completed'), rec('stuck', H0, 'running'), rec('gone', H0, 'upload_failed')],
    clock,
  );
  clock = H0 + 26 * HOUR;
  // Received at another time than the first batch: the same nonces with another timestamp, not a replay.
  await applyTasks(store, [rec('fresh', H0 + 26 * HOUR - 60_000, 'upload_failed')], clock);
  // A seeded recording's upload comes 2 s after its start: its purgeAt is 24 h after that.
  const purgeAtOf = (at: number) => at + 2000 + 24 * HOUR;
  await setNumbers(Keys.taskPk('gone'), Keys.headerSk('app-q'), { [TIME_ATTRS.lost]: 1 });
  await setNumbers(Keys.taskPk('gone'), await fileSkOf('gone'), { [FILE_MARK_ATTRS.lostAt]: purgeAtOf(H0) });
  await setNumbers(Keys.taskPk('stuck'), Keys.headerSk('app-q'), { [TIME_ATTRS.stalledSince]: H0 + 6 * HOUR });
}, 60_000);
afterAll(() => dynamo.stop());

async function list(query: string): Promise<{ status: number; body: any }> {
  const res = await handleApiRequest(listTasksEvent(query), { store, log: silent, now: () => clock });
  const body = JSON.parse(res.body);
  expect({ query, errors: conformance(ApiRoutes.tasks, res.statusCode, body) }).toEqual({ query, errors: [] });
  return { status: res.statusCode, body };
}
const ids = (body: any) => (body.tasks as { id: string }[]).map((t) => t.id).sort();

test(
  'lost, stalled and purgeBefore list the tasks whose headers say so, rows as documented',
  async () => {
    const lost = await list('lost=true');
    expect(ids(lost.body)).toEqual(['gone']);
    expect(lost.body.tasks[0]).toMatchObject({ lostFiles: 1, failedFiles: 1, status: 'upload_failed' });
    const stalled = await list('stalled=true');
    expect(stalled.body.tasks.map((t: any) => [t.id, t.stalledSince])).toEqual([['stuck', H0 + 6 * HOUR]]);
    // `fresh` failed 1 minute before now: purged in 23 h 59 min.
    expect(ids((await list('purgeBefore=24h')).body)).toEqual(['fresh']);
    expect(ids((await list('purgeBefore=23h')).body)).toEqual([]);
    expect(ids((await list('lost=true&service=screenshot')).body)).toEqual([]);
  },
  SLOW_MS,
);

test(
  'updatedSince and endedSince list by time of change and of end; rows carry duration and user',
  async () => {
    expect(ids((await list('updatedSince=2h')).body)).toEqual(['fresh']);
    expect(ids((await list(`updatedSince=${H0}`)).body)).toEqual(['done', 'fresh', 'gone', 'stuck']);
    const ended = await list(`endedSince=${H0}&status=completed`);
    expect(ended.body.tasks).toHaveLength(1);
    expect(ended.body.tasks[0]).toMatchObject({ id: 'done', endedAt: H0 + 1000, durationMs: 1000, userId: 'u-done' });
    // Paged one row at a time, with the cursor alone.
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { body: any } = await list(`updatedSince=${H0}&limit=1${cursor ? `&cursor=${cursor}` : ''}`);
      seen.push(...page.body.tasks.map((t: any) => t.id));
      cursor = page.body.nextCursor;
    } while (cursor && seen.length < 10);
    expect(seen.sort()).toEqual(['done', 'fresh', 'gone', 'stuck']);
  },
  SLOW_MS,
);

test(
  'bad values are refused with 400 invalid_query naming the parameter',
  async () => {
    for (const [query, parameter] of [
      ['lost=yes', 'lost'],
      ['lost=false', 'lost'],
      ['stalled=', 'stalled'],
      ['purgeBefore=soon', 'purgeBefore'],
      ['purgeBefore=2000d', 'purgeBefore'],
      ['updatedSince=yesterday', 'updatedSince'],
      ['endedSince=2025-13-45', 'endedSince'],
    ] as const) {
      const res = await list(query);
      expect({ query, status: res.status, code: res.body.error.code }).toEqual({
        query,
        status: 400,
        code: 'invalid_query',
      });
      expect(res.body.error.message).toContain(`"${parameter}"`);
    }
  },
  SLOW_MS,
);
