// Puts held within a batch (lib/aws/dynamo/write/held-puts.ts): the records of one file share one put, a start's or an
// end's put of the header is the batch's count, and a held header put over a copy that another worker has
// overtaken since is joined again into the header as stored. The oracle is reduceTask over the callbacks.
import { readFileSync } from 'node:fs';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSRecord } from 'aws-lambda';
import { DynamoTaskStore } from '../lib/aws/dynamo/read/task-store.ts';
import { reduceTask } from '../lib/domain/reduce-task.ts';
import { checkPublished, expectedEvents } from '../lib/domain/expected-events.ts';
import type { TaskEvent } from '../lib/domain/task-events.ts';
import { createLogger } from '../lib/log.ts';
import { processBatch } from '../lib/worker/process-batch.ts';
import { mustParse } from './support/lifecycles.ts';
import { useQuietDynamo } from './support/quiet-dynamo.ts';
import { expectStoredTask } from './support/expect-stored.ts';
import { receivedAgain, sqsEvent, sqsRecord } from './support/sqs-events.ts';

const local = useQuietDynamo();
const log = createLogger('test');
const fixture = (name: string) =>
  JSON.parse(readFileSync(new URL(`fixtures/${name}.json`, import.meta.url), 'utf8')) as Record<string, any>;

let sequence = 10n ** 19n;
const records = (bodies: object[]) =>
  bodies.map((b) => sqsRecord('screenshot', JSON.stringify(b), { sequenceNumber: String(++sequence) }));

/** The client, with the puts of each item counted by sort key. */
function countingPuts(client: DynamoDBClient): { client: DynamoDBClient; puts: Map<string, number> } {
  const puts = new Map<string, number>();
  const counted = new Proxy(client, {
    get(target, prop, receiver) {
      if (prop !== 'send') return Reflect.get(target, prop, receiver);
      const send = Reflect.get(target, prop, receiver) as (c: unknown) => Promise<unknown>;
      return (command: { constructor: { name: string }; input: { Key?: any; Item?: any } }) => {
        const name = command.constructor.name;
        if (name === 'PutItemCommand' || name === 'UpdateItemCommand') {
          const sk = String((command.input.Key ?? command.input.Item)?.sk?.S);
          puts.set(sk, (puts.get(sk) ?? 0) + 1);
        }
        return send.call(target, command);
      };
    },
  });
  return { client: counted, puts };
}

/** A screenshot task's bodies: its start, `images` uploads (a failed one first for the first image), its end. */
function task(imageId: string, images: number) {
  const start: Record<string, any> = { ...fixture('screenshot-1-start'), imageId };
  const ok = fixture('screenshot-4-upload-ok');
  const failed = fixture('screenshot-4-upload-failed');
  const image = (i: number, body: Record<string, any>, at: number) => ({
    ...body,
    imageId,
    timestamp: start.timestamp + at,
    output: { ...body.output, fileName: `${imageId}-${i}.jpg` },
  });
  const uploads = Array.from({ length: images }, (_, i) => image(i, ok, 10_000 * (i + 1)));
  const retried = image(0, failed, 5_000);
  const end = { ...fixture('screenshot-3-end'), imageId, timestamp: start.timestamp + 10_000 * (images + 1) };
  return { start, retried, uploads, end };
}

const expectTask = (id: string, bodies: object[]) => expectStoredTask(local.db, 'screenshot', id, bodies);

test('the records of one file in a batch put it once, and the start is written by the count', async () => {
  const t = task('held-once', 2);
  const bodies = [t.start, t.retried, t.uploads[0]!, t.uploads[1]!];
  const { client, puts } = countingPuts(local.db.client);
  const store = new DynamoTaskStore({ client, tableName: local.db.tableName });
  const res = await processBatch(sqsEvent(records(bodies)), { store, log, concurrency: 3 });
  expect(res.batchItemFailures).toEqual([]);
  expect(res.outcomes).toEqual(['applied', 'applied', 'applied', 'applied']);
  const of = (part: string) => [...puts.entries()].filter(([sk]) => sk.includes(part)).map(([, n]) => n);
  // The failed upload and its retry: one put of the image; the start and the count: one write of the header.
  expect(of('held-once-0.jpg')).toEqual([1]);
  expect(of('held-once-1.jpg')).toEqual([1]);
  expect(of('H#')).toEqual([1]);
  await expectTask('held-once', bodies);
});

test('an end held over a header another worker has written since is joined into the header as stored', async () => {
  const t = task('held-stale', 3);
  const a = new DynamoTaskStore({ client: local.db.client, tableName: local.db.tableName });
  const b = new DynamoTaskStore({ client: local.db.client, tableName: local.db.tableName });
  // Worker a meets the task, b applies its next batch, then a (its copy of the header now stale) the last.
  for (const [store, bodies] of [
    [a, [t.start, t.uploads[0]!]],
    [b, [t.uploads[1]!]],
    [a, [t.uploads[2]!, t.end]],
  ] as const) {
    const res = await processBatch(sqsEvent(records([...bodies])), { store, log, concurrency: 2 });
    expect(res.batchItemFailures).toEqual([]);
  }
  await expectTask('held-stale', [t.start, ...t.uploads, t.end]);
});

/**
 * A worker process that stops at the first request `at` matches: `before` it goes out (it never arrives), or `after`
 * it has landed. Nothing the process sends later arrives.
 */
function diesAt(
  client: DynamoDBClient,
  when: 'before' | 'after',
  at: (command: string, key: Record<string, any> | undefined) => boolean,
): { client: DynamoDBClient; died(): boolean } {
  let dead = false;
  const dying = new Proxy(client, {
    get(target, prop, receiver) {
      if (prop !== 'send') return Reflect.get(target, prop, receiver);
      const send = Reflect.get(target, prop, receiver) as (c: unknown) => Promise<unknown>;
      return async (command: { constructor: { name: string }; input: { Item?: any; Key?: any } }) => {
        const matched = !dead && at(command.constructor.name, command.input.Item ?? command.input.Key);
        if (matched && when === 'before') dead = true;
        if (dead) throw Object.assign(new Error('the worker died'), { name: 'WorkerDied' });
        const out = await send.call(target, command);
        if (matched) dead = true;
        return out;
      };
    },
  });
  return { client: dying, died: () => dead };
}

/** A recording task's bodies as records of its message group, and the events the worker publishes for them. */
function recordingStory(recordId: string, names: string[]) {
  const bodies = names.map((name) => ({ ...fixture(name), recordId }));
  const records = bodies.map((b) => sqsRecord('recording', JSON.stringify(b), { sequenceNumber: String(++sequence) }));
  const published: TaskEvent[] = [];
  const events = { publish: async (batch: readonly TaskEvent[]) => void published.push(...batch) };
  const callbacks = bodies.map((b) => mustParse('recording', b));
  return { records, published, events, callbacks };
}

const storeOn = (client: DynamoDBClient) => new DynamoTaskStore({ client, tableName: local.db.tableName });

test("a failed upload carried by its end's file put, uncounted: the end, back alone, publishes it", async () => {
  const story = recordingStory('held-unpublished', ['recording-4-upload-failed', 'recording-3-end']);
  const [u, e] = story.records as [SQSRecord, SQSRecord];
  const { events, published } = story;
  // The failure's put is held for the end's join of the same file, which carries it; the process stops there,
  // before its batch is counted or its events are out.
  const dying = diesAt(
    local.db.client,
    'after',
    (c, key) => c === 'PutItemCommand' && String(key?.sk?.S).includes('#F#'),
  );
  const first = await processBatch(sqsEvent([u, e]), { store: storeOn(dying.client), log, concurrency: 2, events });
  expect(dying.died()).toBe(true);
  expect(first.batchItemFailures).toHaveLength(2);
  expect(published).toEqual([]);
  // The failure comes back alone: found recorded, a duplicate; its file is left to the end's batch to count.
  // Then the end, alone, finds its join in place.
  for (const record of [u, e]) {
    const res = await processBatch(sqsEvent([receivedAgain(record)]), { store: storeOn(local.db.client), log, events });
    expect(res.batchItemFailures).toEqual([]);
  }
  expect(checkPublished(expectedEvents(story.callbacks), published)).toMatchObject({ missing: [], unexpected: [] });
  expect(published.map((ev) => ev.type)).toContain('file.upload_failed');
});

// A batch received again writes its ends' header puts at once (they are held for the count only on a first
// receive), so it can stop between them and its count. The start, back alone, must not read the task completed
// off counts that have not charged the end's file yet (the soak's chaos run met it at seeds 1003709 and 1006316).
test('an end a redelivered batch wrote before its count: no completion as the start comes back', async () => {
  // The end names a file no upload follows: the task can never complete.
  const story = recordingStory('ended-uncounted', ['recording-1-start-single', 'recording-3-end']);
  const { events, published } = story;
  // Received again (a first receive died before writing): the start's and the end's header puts go out at once,
  // the end's file join between them; the process stops as the count is about to go out.
  const dying = diesAt(local.db.client, 'before', (c, key) => c === 'UpdateItemCommand' && /^H#/.test(key?.sk?.S));
  const again = story.records.map(receivedAgain);
  const first = await processBatch(sqsEvent(again), { store: storeOn(dying.client), log, concurrency: 1, events });
  expect(dying.died()).toBe(true);
  expect(first.batchItemFailures).toHaveLength(2);
  // Meanwhile a read of the task, or of a listing, shows it as its counts have it: ended, not completed.
  const reads = storeOn(local.db.client);
  const statusNow = async () => {
    const listed = [];
    for await (const s of reads.listTasks({ since: story.callbacks[0]!.timestamp - 60_000, limit: 10 }))
      if (s.id === 'ended-uncounted') listed.push(s.status);
    return { task: (await reads.getTask('ended-uncounted'))?.status, listed };
  };
  expect(await statusNow()).toEqual({ task: 'ended', listed: ['ended'] });
  // The start comes back alone, then the end.
  for (const [i, record] of again.entries()) {
    const res = await processBatch(sqsEvent([receivedAgain(record)]), { store: storeOn(local.db.client), log, events });
    expect(res.batchItemFailures).toEqual([]);
    if (i === 0) expect(await statusNow()).toEqual({ task: 'ended', listed: ['ended'] });
  }
  expect(checkPublished(expectedEvents(story.callbacks), published)).toMatchObject({ missing: [], unexpected: [] });
  expect(published.map((ev) => ev.type)).not.toContain('task.completed');
  expect(await storeOn(local.db.client).getTask('ended-uncounted')).toEqual(reduceTask(story.callbacks));
});

test('a file a later message wrote before its batch came apart keeps a batch missing it from completing', async () => {
  // The end names a file whose only upload, later in the group, fails. The first delivery stops once that upload's
  // put of the file has landed: the file is marked by the later message, which charges it. The batch comes back in
  // pieces: the start and the end, then another file's upload alone, whose count does not touch the end's file and
  // does not charge it: by the counts alone the task would complete, though the end's file never uploads.
  const story = recordingStory('later-mark-completion', [
    'recording-1-start-mix',
    'recording-3-end',
    'recording-4-upload-ok',
    'recording-4-upload-failed',
  ]);
  const [s0, e, ok, failed] = story.records as [SQSRecord, SQSRecord, SQSRecord, SQSRecord];
  const { events, published } = story;
  expect(story.callbacks[3]!.upload?.fileName).toBe(story.callbacks[1]!.file?.fileName);
  expect(story.callbacks[2]!.upload?.fileName).not.toBe(story.callbacks[1]!.file?.fileName);
  const endFile = story.callbacks[1]!.file!.fileName;
  // The end joins its file first; the failed upload's put of it, second, lands, and the process stops.
  let endFilePuts = 0;
  const dying = diesAt(
    local.db.client,
    'after',
    (c, key) => c === 'PutItemCommand' && String(key?.sk?.S).endsWith(endFile) && ++endFilePuts === 2,
  );
  await processBatch(sqsEvent([s0, e, ok, failed]), { store: storeOn(dying.client), log, concurrency: 4, events });
  expect(dying.died()).toBe(true);
  for (const batch of [[s0, e], [ok], [failed]]) {
    const res = await processBatch(sqsEvent(batch.map(receivedAgain)), {
      store: storeOn(local.db.client),
      log,
      events,
    });
    expect(res.batchItemFailures).toEqual([]);
  }
  expect(published.map((ev) => ev.type)).not.toContain('task.completed');
  expect(checkPublished(expectedEvents(story.callbacks), published)).toMatchObject({ missing: [], unexpected: [] });
  expect(await storeOn(local.db.client).getTask('later-mark-completion')).toEqual(reduceTask(story.callbacks));
});
