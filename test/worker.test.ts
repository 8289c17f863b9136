import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { DynamoTaskStore } from '../lib/aws/dynamo/task-store.ts';
import { parseCallback } from '../lib/domain/callback.ts';
import { reduceTask } from '../lib/domain/reduce-task.ts';
import { createLogger, setLogSink } from '../lib/log.ts';
import { processBatch } from '../lib/worker/process-batch.ts';
import type { Service } from '../lib/domain/services.ts';
import { startDynamo, type LocalDynamo } from '../lib/local/dynamo.ts';
import { sqsEvent, sqsRecord } from './support/sqs-events.ts';

const fixturesDir = new URL('./fixtures/', import.meta.url).pathname;
const fixtures = readdirSync(fixturesDir).filter((f) => f.endsWith('.json'));
const load = (name: string) => readFileSync(join(fixturesDir, name), 'utf8');
const serviceOf = (name: string) => (name.startsWith('recording') ? 'recording' : 'screenshot') as Service;

let db: LocalDynamo;
const lines: string[] = [];
let restoreSink: ReturnType<typeof setLogSink>;

beforeAll(async () => {
  db = await startDynamo();
  restoreSink = setLogSink((line) => lines.push(line));
});
afterAll(async () => {
  setLogSink(restoreSink);
  await db.stop();
});

function newStore() {
  return new DynamoTaskStore({ client: db.client, tableName: db.tableName });
}

describe('worker against dynalite', () => {
  test('the fixture stories end in the tasks the fold says, delivered in reverse and twice', async () => {
    const store = newStore();
    const records = [...fixtures]
      .reverse()
      .flatMap((f) => [sqsRecord(serviceOf(f), load(f)), sqsRecord(serviceOf(f), load(f))]);
    const res = await processBatch(sqsEvent(records), { store, log: createLogger('test') });
    expect(res.batchItemFailures).toEqual([]);
    for (const id of ['7nQ2f0vB-rec-001', 'Kp4e-rec-002', 'img-5c1d9e']) {
      const bodies = fixtures.filter((f) => load(f).includes(`"${id}"`));
      const expected = reduceTask(
        bodies.map((f) => {
          const r = parseCallback(serviceOf(f), load(f));
          if (!r.ok) throw new Error(r.errors.join());
          return r.callback;
        }),
      );
      expect(await store.getTask(id)).toEqual(expected);
    }
    const rec = await store.getTask('7nQ2f0vB-rec-001');
    expect(rec?.status).toBe('upload_failed');
    expect(rec?.eventCount).toBe(5);
    const failed = rec!.files.find((f) => f.upload === 'failed')!;
    expect(failed.purgeAt).toBe(1763803810000 + 24 * 3600 * 1000);
  });
});
