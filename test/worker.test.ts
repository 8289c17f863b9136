import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { DynamoTaskStore } from '../lib/aws/dynamo/read/task-store.ts';
import { parseCallback } from '../lib/domain/callback.ts';
import { reduceTask } from '../lib/domain/reduce-task.ts';
import { createLogger, setLogSink } from '../lib/log.ts';
import { taskGroupId } from '../lib/fifo-ids.ts';
import { failedInGroupOrder, processBatch } from '../lib/worker/process-batch.ts';
import { replayKeyOf } from '../lib/signature/verify.ts';
import { computeSignature } from '../lib/platform/signing.ts';
import type { Service } from '../lib/platform/services.ts';
import { startDynamo, type LocalDynamo } from '../devkit/local/dynamo.ts';
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

describe('FIFO partial batch failure', () => {
  const slice = (recordId: string, fileName: string, timestamp: number) => ({
    timestamp,
    type: 2,
    appKey: 'app-fifo',
    recordId,
    roomId: 'room-1',
    sessionId: 'session-1',
    userId: '',
    mode: 3,
    code: 200,
    errorMessage: 'success',
    output: { fileName, fileSize: 1024 },
  });

  test('a failed record fails the later records of its message group in the batch, not the earlier ones', () => {
    const g1 = taskGroupId('app-fifo', 'rec-g1');
    const g2 = taskGroupId('app-fifo', 'rec-g2');
    const groups = [g1, g2, g1, g2, g1, g1];
    const records = groups.map((groupId, i) =>
      sqsRecord('recording', slice(groupId === g1 ? 'rec-g1' : 'rec-g2', `${i}.mp4`, 1763800000000 + i), { groupId }),
    );
    // The third (group 1) failed: the fifth and sixth follow it in its group, reported too, or Lambda would delete
    // them before it is applied; the first, of the same group, came before it and stays done.
    expect(failedInGroupOrder(records, [false, false, true, false, false, false])).toEqual([
      false,
      false,
      true,
      false,
      true,
      true,
    ]);
  });

  test('a record of a task that fails fails its task in the batch, and no other group', async () => {
    const inner = newStore();
    // The store refuses one callback, once: a transient fault.
    const store = Object.assign(Object.create(inner) as DynamoTaskStore, {
      applyUncounted: async (delivered: Parameters<DynamoTaskStore['applyUncounted']>[0]) => {
        if (delivered.raw.includes('"b.mp4"')) throw new Error('throttled');
        return inner.applyUncounted(delivered);
      },
    });
    const g1 = taskGroupId('app-fifo', 'rec-g1');
    const g2 = taskGroupId('app-fifo', 'rec-g2');
    const records = [
      sqsRecord('recording', slice('rec-g1', 'a.mp4', 1763800000000), { groupId: g1 }),
      sqsRecord('recording', slice('rec-g2', 'x.mp4', 1763800000500), { groupId: g2 }),
      sqsRecord('recording', slice('rec-g1', 'b.mp4', 1763800001000), { groupId: g1 }),
      sqsRecord('recording', slice('rec-g2', 'y.mp4', 1763800001500), { groupId: g2 }),
      sqsRecord('recording', slice('rec-g1', 'c.mp4', 1763800002000), { groupId: g1 }),
      sqsRecord('recording', slice('rec-g1', 'd.mp4', 1763800003000), { groupId: g1 }),
    ];
    const res = await processBatch(sqsEvent(records), { store, log: createLogger('test') });
    // b failed: every record of its task fails with it, so that the batch that brings them again counts what
    // they wrote; the other task's group is applied.
    expect(res.batchItemFailures.map((f) => f.itemIdentifier)).toEqual(
      [records[0]!, records[2]!, records[4]!, records[5]!].map((r) => r.messageId),
    );
    expect(res.outcomes).toEqual(['failed', 'applied', 'failed', 'applied', 'failed', 'failed']);
  });

  test('on a standard queue (no message group) only the failed record is reported', async () => {
    const flags = [false, true, false];
    const records = ['a', 'b', 'c'].map((f) => sqsRecord('recording', slice('rec-std', `${f}.mp4`, 1763800000000)));
    expect(failedInGroupOrder(records, flags)).toEqual(flags);
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

describe('replay keys', () => {
  const recording = (id: string, type: 1 | 3, timestamp: number, change: Record<string, unknown> = {}) => ({
    ...JSON.parse(load(type === 1 ? 'recording-1-start-mix.json' : 'recording-3-end.json')),
    recordId: id,
    timestamp,
    ...change,
  });
  const secret = 'demo-secret';

  test(
    'replay key bypass: the same signature split elsewhere between nonce and timestamp is one claim, and the ' +
      'forged end (code 500) it carries is quarantined as replayed_signature',
    async () => {
      const store = newStore();
      // At this time the millisecond timestamp's first three digits, moved to the nonce, leave a timestamp in
      // seconds 771 ms away: the signed string, and so the signature, are the same.
      const at = 1_771_771_771_771;
      const genuine = { nonce: 'n-1', timestamp: String(at) };
      const signature = computeSignature(secret, genuine.nonce, genuine.timestamp);
      const resplit = { nonce: 'n-1177', timestamp: '1771771771', signature };
      expect(computeSignature(secret, resplit.nonce, resplit.timestamp)).toBe(signature);
      const id = 'rec-replay-resplit';
      const start = sqsRecord('recording', recording(id, 1, at - 60_000), { receivedAt: at - 60_000 });
      const end = recording(id, 3, at);
      const forged = recording(id, 3, at, { code: 500, errorMessage: 'forged failure' });
      const log = createLogger('test');
      await processBatch(sqsEvent([start]), { store, log });
      const first = await processBatch(
        sqsEvent([sqsRecord('recording', end, { receivedAt: at, replayKey: replayKeyOf({ ...genuine, signature })! })]),
        { store, log },
      );
      expect(first.outcomes).toEqual(['applied']);
      const before = await store.getTask(id);
      expect(before?.status).toBe('ended');

      const second = await processBatch(
        sqsEvent([sqsRecord('recording', forged, { receivedAt: at + 1000, replayKey: replayKeyOf(resplit)! })]),
        { store, log },
      );
      expect(second.outcomes).toEqual(['quarantined']);
      expect(await store.getTask(id)).toEqual(before);
      const entries = [];
      for await (const e of store.listQuarantine({ since: at, until: at + 1000, taskId: id })) entries.push(e);
      expect(entries.map((e) => [e.reason, e.raw])).toEqual([['replayed_signature', JSON.stringify(forged)]]);
    },
  );

  test(
    'a callback claimed under the earlier key form (nonce, timestamp and signature) and delivered again ' +
      'under the signature key is a duplicate, counted once, not a replay',
    async () => {
      const store = newStore();
      const id = 'rec-replay-upgrade';
      const at = 1_763_800_000_000;
      const values = { nonce: 'n-upgrade', timestamp: String(at) };
      const signature = computeSignature(secret, values.nonce, values.timestamp);
      const earlierForm = createHash('sha256')
        .update(JSON.stringify([values.nonce, values.timestamp, signature]), 'utf8')
        .digest('hex');
      const body = recording(id, 1, at);
      const log = createLogger('test');
      const before = await processBatch(
        sqsEvent([sqsRecord('recording', body, { receivedAt: at, replayKey: earlierForm })]),
        { store, log },
      );
      const after = await processBatch(
        sqsEvent([
          sqsRecord('recording', body, { receivedAt: at + 1000, replayKey: replayKeyOf({ ...values, signature })! }),
        ]),
        { store, log },
      );
      expect([...before.outcomes, ...after.outcomes]).toEqual(['applied', 'duplicate']);
      expect((await store.getTask(id))?.eventCount).toBe(1);
      expect((await store.listEvents(id)).map((e) => e.raw)).toEqual([JSON.stringify(body)]);
    },
  );
});
