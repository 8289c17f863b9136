// A task's header, written at every count update, stays within the write units it is meant to cost whatever
// length of message, `extra` or config its callbacks carry: those are clipped where they enter the task
// (lib/domain/header-text.ts), so that the task JSON, its first events and a republication of them say the same
// clipped text, while the raw callback keeps the whole value.
import { Buffer } from 'node:buffer';
import { readFileSync } from 'node:fs';
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { itemBytes } from '../lib/aws/dynamo/table/limits.ts';
import { Keys } from '../lib/aws/dynamo/table/table.ts';
import { READABLE } from '../lib/aws/dynamo/table/readable.ts';
import { DynamoTaskStore } from '../lib/aws/dynamo/read/task-store.ts';
import { CLIP_MARK, HEADER_CONFIG_BYTES, HEADER_TEXT_BYTES } from '../lib/domain/header-text.ts';
import type { TaskEvent } from '../lib/domain/task-events.ts';
import { createLogger } from '../lib/log.ts';
import { RECORDING_UPLOAD_FAILURES, TASK_FAILURES } from '../lib/platform/failures.ts';
import { processBatch } from '../lib/worker/process-batch.ts';
import { receivedAgain, sqsEvent, sqsRecord } from './support/sqs-events.ts';
import { useQuietDynamo } from './support/quiet-dynamo.ts';

type Body = Record<string, unknown>;
const local = useQuietDynamo();
const log = createLogger('test');
const fixture = (name: string): Body =>
  JSON.parse(readFileSync(new URL(`fixtures/${name}`, import.meta.url), 'utf8')) as Body;

/** A recording whose end and upload failed, applied as one ordered batch; its header's bytes, its events. */
async function failedRecording(id: string, values: { extra: string; config: Body; end: string; upload: string }) {
  const bodies: Body[] = [
    { ...fixture('recording-1-start-mix.json'), recordId: id, extra: values.extra, config: values.config },
    { ...fixture('recording-3-end.json'), recordId: id, extra: values.extra, code: 500, errorMessage: values.end },
    { ...fixture('recording-4-upload-failed.json'), recordId: id, extra: values.extra, errorMessage: values.upload },
  ];
  const published: TaskEvent[] = [];
  const events = { publish: async (batch: readonly TaskEvent[]) => void published.push(...batch) };
  const store = new DynamoTaskStore({ client: local.db.client, tableName: local.db.tableName });
  const records = bodies.map((b, i) =>
    sqsRecord('recording', b, { groupId: id, sequenceNumber: String(10n ** 19n + BigInt(i)) }),
  );
  expect((await processBatch(sqsEvent(records), { store, log, events })).outcomes).toEqual([
    'applied',
    'applied',
    'applied',
  ]);
  const appKey = String(bodies[0]!.appKey);
  const key = { pk: { S: Keys.taskPk(id) }, sk: { S: Keys.headerSk(appKey) } };
  const header = (await local.db.client.send(new GetItemCommand({ TableName: local.db.tableName, Key: key }))).Item!;
  expect(header.seq?.S).toEqual(expect.any(String));
  const redeliverEnd = async () => {
    published.length = 0;
    const again = await processBatch(sqsEvent([receivedAgain(records[1]!)]), { store, log, events });
    expect(again.outcomes).toEqual(['duplicate']);
    return [...published];
  };
  const plain = Object.fromEntries(Object.entries(header).filter(([name]) => !READABLE_NAMES.has(name)));
  return {
    bytes: itemBytes(header),
    withoutReadable: itemBytes(plain),
    published: [...published],
    redeliverEnd,
    store,
    appKey,
    bodies,
  };
}

/** The text as a task keeps it: cut at a character within HEADER_TEXT_BYTES, then the mark. */
function clipped(text: string): string {
  let kept = '';
  for (const c of text) {
    if (Buffer.byteLength(kept + c, 'utf8') > HEADER_TEXT_BYTES) break;
    kept += c;
  }
  return `${kept}${CLIP_MARK}`;
}

const READABLE_NAMES = new Set<string>(Object.values(READABLE));

test('a failed end and a failed upload worded as the platform words them: one write unit, readable too', async () => {
  const start = fixture('recording-1-start-mix.json');
  const longest = (outcomes: readonly { message: string }[]) =>
    outcomes.map((o) => o.message).reduce((a, b) => (b.length > a.length ? b : a));
  const { bytes, withoutReadable } = await failedRecording('rec-size-real', {
    extra: String(start.extra),
    config: start.config as Body,
    end: longest(TASK_FAILURES),
    upload: longest(RECORDING_UPLOAD_FAILURES),
  });
  // Task id, appKey, status and three ISO times (lib/aws/dynamo/table/readable.ts) within the one write unit: the times
  // of the identity and the end are read off their ranks, an error's off its own, a failed start or end off its
  // failure, so none is kept twice.
  expect(bytes - withoutReadable).toBeLessThan(200);
  expect(bytes).toBeLessThanOrEqual(1024);
});

test('long messages, extra and config: the header stays within two write units; task and events agree', async () => {
  // The longest config a task keeps whole (its JSON at the limit): the largest header these values make.
  const config: Body = { a: '' };
  config.a = 'v'.repeat(HEADER_CONFIG_BYTES - JSON.stringify(config).length);
  const values = {
    extra: 'x'.repeat(5_000),
    config,
    end: `end failed: ${'e'.repeat(5_000)}`,
    upload: `upload failed: ${'ü'.repeat(5_000)}`,
  };
  const run = await failedRecording('rec-size-long', values);
  // Unclipped, the header would hold 20 KB of these values alone.
  expect(run.bytes).toBeLessThanOrEqual(2048);

  const task = (await run.store.getTask('rec-size-long', run.appKey))!;
  expect(task.lastError).toEqual({
    type: 4,
    code: 500,
    message: clipped(values.upload),
    at: run.bodies[2]!.timestamp,
  });
  expect(task.extra).toBe(clipped(values.extra));
  expect(task.config).toEqual(config);
  // The raw callbacks keep the whole values.
  const raws = (await run.store.listEvents('rec-size-long', run.appKey)).map((e) => JSON.parse(e.raw) as Body);
  expect(raws.map((r) => r.errorMessage).sort()).toEqual([values.end, values.upload, 'success'].sort());

  const failed = run.published.filter((e) => e.type === 'task.failed');
  expect(failed).toHaveLength(1);
  expect(failed[0]!.error).toEqual({ code: 500, message: clipped(values.end) });
  // The end again: its events are published again with the same id, time and clipped message.
  const again = (await run.redeliverEnd()).filter((e) => e.type === 'task.failed');
  expect(again).toHaveLength(1);
  expect(again[0]).toMatchObject({ id: failed[0]!.id, occurredAt: failed[0]!.occurredAt, error: failed[0]!.error });
});
