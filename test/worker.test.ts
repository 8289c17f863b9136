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

describe('control characters in names', () => {
  const slice = (appKey: string, recordId: string, fileName: string, timestamp: number) => ({
    timestamp,
    type: 2,
    appKey,
    recordId,
    roomId: 'room-1',
    sessionId: 'session-1',
    userId: '',
    mode: 3,
    code: 200,
    errorMessage: 'success',
    output: { fileName, fileSize: 1024 },
  });

  test(
    'NUL in recordId and fileName: group keys do not collide, the bad records are quarantined and the innocent ' +
      'records of another appKey in the same batch are applied',
    async () => {
      const store = newStore();
      // With a publisher, the worker reads each task once all of its records are applied.
      const events = { publish: async () => undefined };
      // Joined with NUL, (x, file y\0z) and (x\0y, file z) were one item; x\0y's second file made a group of
      // its own that finished first, and the batch's events read a record not applied yet.
      const bad = [
        slice('app-nul', 'x', 'y\u0000z', 1763800000000),
        slice('app-nul', 'x', 'y\u0000z', 1763800001000),
        slice('app-nul', 'x', 'y\u0000z', 1763800002000),
        slice('app-nul', 'x\u0000y', 'z', 1763800003000),
        slice('app-nul', 'x\u0000y', 'w', 1763800004000),
      ];
      const innocent = [
        slice('app-innocent', 'rec-innocent', 'a.mp4', 1763800000000),
        slice('app-innocent', 'rec-innocent', 'b.mp4', 1763800001000),
        slice('app-innocent', 'rec-innocent-2', 'c.mp4', 1763800002000),
      ];
      const records = [...bad, ...innocent].map((body) => sqsRecord('recording', body));
      const res = await processBatch(sqsEvent(records), { store, log: createLogger('test'), events });

      expect(res.batchItemFailures).toEqual([]);
      expect(res.outcomes).toEqual([...bad.map(() => 'quarantined'), ...innocent.map(() => 'applied')]);
      expect((await store.getTask('rec-innocent', 'app-innocent'))?.files.map((f) => f.fileName)).toEqual([
        'a.mp4',
        'b.mp4',
      ]);
      expect((await store.getTask('rec-innocent-2', 'app-innocent'))?.eventCount).toBe(1);
      expect(await store.getTask('x', 'app-nul')).toBeNull();
      expect(await store.getTask('x\u0000y', 'app-nul')).toBeNull();
      const ids = new Set(records.slice(0, bad.length).map((r) => r.messageId));
      const entries = [];
      for await (const e of store.listQuarantine({ since: 1763800000000, until: 1763800000000 }))
        if (ids.has(e.messageId)) entries.push(e);
      expect(entries).toHaveLength(bad.length);
      for (const e of entries) {
        expect(e.reason).toBe('invalid_callback');
        expect(e.detail).toMatch(/^(recordId|output\.fileName): must not contain control/);
      }
    },
  );
});
