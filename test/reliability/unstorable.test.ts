// Numbers DynamoDB can never store, end to end (gateway -> ingest -> fauxqs -> poller -> worker -> dynalite):
// the ingest's minimal check lets them through (200), and the worker keeps them aside as invalid_callback on
// the first delivery, naming the field, instead of failing until the dead-letter queue, where a redrive would
// fail the same way. A DynamoDB ValidationException or an item the SDK cannot marshal is as permanent.
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoTaskStore } from '../../lib/aws/dynamo/read/task-store.ts';
import { queueDepth } from '../../lib/aws/sqs/dlq.ts';
import { type Callback, parseCallback } from '../../lib/domain/callback.ts';
import type { QuarantineEntry, TaskStore } from '../../lib/domain/task-store.ts';
import { createLogger, setLogSink } from '../../lib/log.ts';
import { computeSignature } from '../../lib/platform/signing.ts';
import { processBatch } from '../../lib/worker/process-batch.ts';
import { sqsEvent, sqsRecord } from '../support/sqs-events.ts';
import { startPipeline, waitFor, type Pipeline } from './support/pipeline.ts';

const SECRET = 'unstorable-secret-91c4';
let pipeline: Pipeline;
let restoreSink: ReturnType<typeof setLogSink>;

beforeAll(async () => {
  // The pipeline's functions log as on Lambda; what they say is not what is checked here, and it is not printed.
  restoreSink = setLogSink(() => {});
  pipeline = await startPipeline({
    secretsJson: { 'demo-app': [SECRET] },
    // Without the fix, a few quick receives put each message in the dead-letter queue.
    maxReceiveCount: 2,
    retryDelaySeconds: 0,
  });
});
afterAll(async () => {
  await pipeline.stop();
  setLogSink(restoreSink);
});

let counter = 0;
function start(id: string, extra: Record<string, unknown> = {}) {
  return {
    timestamp: Date.now(),
    type: 1,
    appKey: 'demo-app',
    recordId: id,
    roomId: 'room-n',
    sessionId: 'sess-n',
    userId: '',
    mode: 3,
    extra: '',
    code: 200,
    errorMessage: 'success',
    config: { trigger: 0 },
    output: { fileName: `${id}.mp4` },
    ...extra,
  };
}

async function post(raw: string): Promise<number> {
  const nonce = `n-unstorable-${++counter}`;
  const ts = String(Math.floor(Date.now() / 1000));
  const res = await fetch(`${pipeline.url}/callbacks/recording`, {
    method: 'POST',
    body: raw,
    headers: {
      'content-type': 'application/json',
      'RC-Nonce': nonce,
      'RC-Timestamp': ts,
      'RC-Signature': computeSignature(SECRET, nonce, ts),
    },
  });
  await res.text();
  return res.status;
}

async function quarantine(store: TaskStore): Promise<QuarantineEntry[]> {
  const entries: QuarantineEntry[] = [];
  for await (const e of store.listQuarantine({ sinceDays: 2 })) entries.push(e);
  return entries;
}

test('the three bodies: answered 200, quarantined naming the field, never in the dead-letter queue', async () => {
  const cases: [string, string, RegExp][] = [
    // JSON.stringify writes 1e200 as 1e+200.
    ['rec-num-1e200', JSON.stringify(start('rec-num-1e200', { code: 1e200 })), /^code /],
    // A numeric string that becomes Infinity once turned into a number.
    ['rec-num-huge-string', JSON.stringify(start('rec-num-huge-string', { code: `1${'0'.repeat(400)}` })), /^code /],
    ['rec-num-tiny-config', JSON.stringify(start('rec-num-tiny-config', { config: { x: 1e-200 } })), /^config\.x /],
  ];
  for (const [, raw] of cases) expect(await post(raw)).toBe(200);
  // A genuine callback alongside, to show the pipeline applies what it can.
  expect(await post(JSON.stringify(start('rec-num-fine', { code: 1e125, config: { x: 1e-130, y: -0 } })))).toBe(200);
  await waitFor('the queue to drain', () => pipeline.idle());

  expect(await queueDepth(pipeline.sqs, pipeline.dlqUrl)).toEqual({ visible: 0, inFlight: 0 });
  const entries = await quarantine(pipeline.store);
  for (const [id, raw, field] of cases) {
    const mine = entries.filter((e) => e.taskId === id);
    expect(mine.map((e) => [e.reason, e.raw])).toEqual([['invalid_callback', raw]]);
    expect(mine[0]!.detail).toMatch(field);
    expect(mine[0]!.detail).toMatch(/DynamoDB/);
    expect(await pipeline.store.getTask(id)).toBeNull();
  }
  // Each was received once: kept aside on the first delivery, not retried.
  expect(pipeline.poller.stats.failed).toBe(0);
  const fine = await pipeline.store.getTask('rec-num-fine');
  expect(fine).toMatchObject({ status: 'failed', config: { x: 1e-130, y: 0 }, lastError: { code: 1e125 } });
});

describe('refusals the check cannot foresee are permanent too', () => {
  function callback(id: string): Callback {
    const r = parseCallback('recording', JSON.stringify(start(id)));
    if (!r.ok) throw new Error(r.errors.join());
    return r.callback;
  }

  test('a DynamoDB ValidationException: quarantined as invalid_callback naming it, never retried', async () => {
    // dynalite refuses what DynamoDB refuses only in part (item size, for one): the refusal is injected into
    // the first write of a task item, as the SDK throws it.
    let refusals = 0;
    const send = pipeline.dynamo.client.send.bind(pipeline.dynamo.client) as (command: any) => Promise<any>;
    const client = new Proxy(pipeline.dynamo.client, {
      get(target, prop, receiver) {
        if (prop !== 'send') return Reflect.get(target, prop, receiver);
        return async (command: any) => {
          if (command?.constructor?.name === 'PutItemCommand' && command.input.Item?.pk?.S?.startsWith('TASK#')) {
            refusals += 1;
            throw Object.assign(new Error('Item size has exceeded the maximum allowed size'), {
              name: 'ValidationException',
              $fault: 'client',
            });
          }
          return send(command);
        };
      },
    }) as DynamoDBClient;
    const store = new DynamoTaskStore({ client, tableName: pipeline.dynamo.tableName });
    const record = sqsRecord('recording', JSON.stringify(callback('rec-num-validation').body), {
      receivedAt: Date.now(),
    });
    const res = await processBatch(sqsEvent([record]), { store, log: createLogger('test') });
    expect(res.batchItemFailures).toEqual([]);
    expect(res.outcomes).toEqual(['quarantined']);
    expect(refusals).toBe(1);
    const entry = (await quarantine(pipeline.store)).find((e) => e.taskId === 'rec-num-validation');
    expect(entry).toMatchObject({ reason: 'invalid_callback' });
    expect(entry!.detail).toMatch(/ValidationException: Item size has exceeded the maximum allowed size/);
    expect(await pipeline.store.getTask('rec-num-validation')).toBeNull();
  });

  test('an item the SDK cannot marshal: the store reports it as unstorable, which the worker keeps aside', async () => {
    // A value no JSON body can hold, the one way to make marshalling itself fail past the number check.
    const cb = callback('rec-num-marshal');
    cb.config = { when: new Date(0) };
    await expect(
      pipeline.store.applyCallback({
        callback: cb,
        raw: JSON.stringify(cb.body),
        receivedAt: Date.now(),
        verdict: 'valid',
        mode: 'enforce',
        requestId: null,
        messageId: 'msg-marshal',
        replayKey: null,
      }),
    ).rejects.toMatchObject({ name: 'UnstorableCallbackError' });
    expect(await pipeline.store.getTask('rec-num-marshal')).toBeNull();
  });
});
