// The ingest's request id (API Gateway's, the `requestId` of its `callback_request` line) travels with the
// message, and every worker line about that callback names it: one search follows a callback from the door
// to its task, whatever became of it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { batchWriterOf } from '../lib/aws/dynamo/batch/apply-batch.ts';
import type { BatchSteps } from '../lib/aws/dynamo/batch/steps.ts';
import { createLogger, setLogSink } from '../lib/log.ts';
import { startLocalStack, type LocalStack } from '../devkit/local/stack.ts';
import { Attr } from '../lib/queue-message.ts';
import { processBatch } from '../lib/worker/process-batch.ts';
import { postSigned } from './support/cli-process.ts';
import { sqsEvent, sqsRecord } from './support/sqs-events.ts';
import { eventually } from './support/eventually.ts';

type Line = Record<string, unknown>;

const start = (recordId: string) => ({
  timestamp: Date.now(),
  type: 1,
  appKey: 'demo-app',
  recordId,
  roomId: 'room-rid',
  sessionId: 'session-rid',
  userId: '',
  mode: 3,
  code: 200,
  errorMessage: 'success',
  config: {},
  output: { fileName: 'session-rid_room-rid.mp4' },
});

describe('the local stack: worker lines carry the request id of the ingest that took the callback', () => {
  let dir: string;
  let stack: LocalStack;
  const lines: Line[] = [];
  let restoreSink: ReturnType<typeof setLogSink>;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'callbacks-request-id-'));
    restoreSink = setLogSink((line) => lines.push(JSON.parse(line) as Line));
    stack = await startLocalStack({ port: 0, memory: true, cwd: dir, signatureMode: 'report' });
  }, 60_000);

  afterAll(async () => {
    await stack?.stop();
    setLogSink(restoreSink);
    rmSync(dir, { recursive: true, force: true });
  });

  async function workerLinesOf(messageId: string, event: string): Promise<Line[]> {
    return eventually(
      `a ${event} line for message ${messageId}`,
      () => lines.filter((l) => l.function === 'worker' && l.messageId === messageId),
      (found) => found.some((l) => l.event === event),
    );
  }

  test.each([
    ['applied', 'demo-secret', 'callback_applied'],
    ['set aside', 'not-the-secret', 'callback_quarantined'],
  ])('a callback %s: its worker line names the ingest request id', async (_what, secret, event) => {
    const id = `rec-rid-${event}`;
    expect((await postSigned(stack.url, 'recording', start(id), secret)).status).toBe(200);
    const request = lines.find((l) => l.event === 'callback_request' && l.id === id);
    expect(request).toBeDefined();
    expect(request!.requestId).toEqual(expect.any(String));
    const worker = await workerLinesOf(request!.messageId as string, event);
    for (const line of worker) expect(line.requestId).toBe(request!.requestId);
  });
});

/** A store whose writes fail or are refused as a test says; what it does not say is never reached. */
function writerOf(faults: Partial<BatchSteps>) {
  const notReached = async (): Promise<never> => {
    throw new Error('not reached');
  };
  return batchWriterOf<BatchSteps>({
    applyUncounted: notReached,
    quarantine: notReached,
    absorbedSequence: notReached,
    countTask: notReached,
    recountTask: notReached,
    ...faults,
  });
}

describe('processBatch: every line about a record names its request id', () => {
  const capture = () => {
    const lines: Line[] = [];
    const restore = setLogSink((line) => lines.push(JSON.parse(line) as Line));
    return { lines, restore: () => setLogSink(restore) };
  };
  const requestIdOf = (r: ReturnType<typeof sqsRecord>) => r.messageAttributes[Attr.requestId]!.stringValue;

  test('a record the store failed to apply: callback_failed names it', async () => {
    const throttled = async (): Promise<never> => {
      throw new Error('throttled');
    };
    const store = writerOf({ applyUncounted: throttled });
    const record = sqsRecord('recording', start('rec-rid-failed'));
    const { lines, restore } = capture();
    try {
      const result = await processBatch(sqsEvent([record]), { store, log: createLogger('worker') });
      expect(result.outcomes).toEqual(['failed']);
    } finally {
      restore();
    }
    const failed = lines.find((l) => l.event === 'callback_failed');
    expect(failed).toMatchObject({ messageId: record.messageId, requestId: requestIdOf(record) });
  });

  test('a record unreadable as a callback message: its quarantine line and entry keep the request id', async () => {
    const kept: unknown[] = [];
    const store = writerOf({
      quarantine: async (entry) => {
        kept.push(entry);
        return { read: 0, write: 1 };
      },
    });
    const record = sqsRecord('recording', start('rec-rid-unreadable'));
    delete record.messageAttributes[Attr.service];
    const { lines, restore } = capture();
    try {
      expect((await processBatch(sqsEvent([record]), { store, log: createLogger('worker') })).outcomes).toEqual([
        'quarantined',
      ]);
    } finally {
      restore();
    }
    expect(lines.find((l) => l.event === 'callback_quarantined')).toMatchObject({ requestId: requestIdOf(record) });
    expect(kept).toEqual([expect.objectContaining({ requestId: requestIdOf(record) })]);
  });
});
