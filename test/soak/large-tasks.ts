// The soak's large tasks: one screenshot task of many images (100,000 by default) and a day-long recording cut
// into one-minute slices (1,440 files), fed straight into the worker's batch path (`processBatch` over the
// DynamoDB store, on an emulator of their own) as the FIFO event source mapping hands them out: batches of
// 10 records, each task's records in order with growing sequence numbers, one batch of a task at a time.
// Through fauxqs the image task would drain one message per receive (it hands out one message of a group at
// a time), days for 100,000. Duplicates and failed-then-retried uploads are in the traffic, and now and then
// the worker dies at a write and its whole batch comes back to a fresh one.
//
// Checked at the end: nothing lost (every distinct callback stored), every task equal to `reduceTask`, the
// header's counts equal to a recount of its items, the events published between MUST and MAY with their
// sequence numbers growing. Reported: the worker's retained heap (after a collection) as the tasks grow,
// and the peak RSS while feeding; the emulator runs in a process of its own, so neither counts the table.
import { appendFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { isDeepStrictEqual } from 'node:util';
import { countsOf } from '../../lib/aws/dynamo/table/items.ts';
import { TaskQueries } from '../../lib/aws/dynamo/read/queries.ts';
import { TableReader } from '../../lib/aws/dynamo/table/table-client.ts';
import { DynamoTaskStore } from '../../lib/aws/dynamo/read/task-store.ts';
import { eventKey } from '../../lib/domain/canonical.ts';
import { reduceTask } from '../../lib/domain/reduce-task.ts';
import type { TaskEvent } from '../../lib/domain/task-events.ts';
import { checkPublished, expectedEvents } from '../../lib/domain/expected-events.ts';
import { countFiles } from '../../lib/domain/task-parts.ts';
import { createRandom, type Random } from '../../devkit/emulator/random.ts';
import { createLogger, setLogSink } from '../../lib/log.ts';
import {
  type Body,
  type RecordingTask,
  recordingFileClosed,
  recordingStart,
  recordingUpload,
} from '../../lib/platform/bodies.ts';
import { RECORDING_UPLOAD_FAILURES, SUCCESS } from '../../lib/platform/failures.ts';
import { recordingFileName } from '../../lib/platform/file-names.ts';
import { UPLOAD_RETRY_MS } from '../../lib/platform/delivery.ts';
import { processBatch } from '../../lib/worker/process-batch.ts';
import { startRestartableDynamo } from '../reliability/support/restartable-dynamo.ts';
import { dyingClient } from '../support/faulty-client.ts';
import { mustParse } from '../support/lifecycles.ts';
import { receivedAgain, sqsEvent, sqsRecord } from '../support/sqs-events.ts';
import type { SQSRecord } from 'aws-lambda';
import { imageTaskSends } from './images.ts';

const APP_KEY = 'soak-large';
const BATCH = 10;
const MINUTE = 60_000;

export interface LargeTaskFigures {
  label: string;
  id: string;
  /** Callbacks fed (duplicates included), distinct among them, and those with no stored raw callback. */
  fed: number;
  distinct: number;
  lost: number;
  files: number;
  expectedFiles: number;
  status: string;
  /** The header's counts and a recount of the task's items. */
  header: ReturnType<typeof countsOf>;
  recount: ReturnType<typeof countsOf>;
  equalsFold: boolean;
}

export interface LargeFigures {
  tasks: LargeTaskFigures[];
  batches: number;
  deaths: number;
  redelivered: number;
  events: { must: number; distinct: number; missing: number; unexpected: number; sequenceBackwards: number };
  /** Retained heap after a collection, MB, when the image task held the given number of images. */
  heap: { images: number; heapMb: number }[];
  feedRssPeakMb: number;
  feedS: number;
  verifyS: number;
  ok: boolean;
}

/** A recording of `hours` hours cut every minute: a start, a slice a minute, the end, an upload per file. */
export function recordingDayBodies(opts: { hours: number; taskId: string; baseTime: number; random: Random }): Body[] {
  const task: RecordingTask = {
    appKey: APP_KEY,
    recordId: opts.taskId,
    roomId: 'room-day',
    sessionId: 'daySession01',
    userId: 'user-day',
    mode: 1,
    extra: 'soak=day',
  };
  const files = opts.hours * 60;
  const name = (i: number) =>
    recordingFileName({
      sessionId: task.sessionId,
      roomId: task.roomId,
      userId: task.userId,
      streamTag: 'main',
      mode: task.mode,
      timestamp: opts.baseTime + i * MINUTE,
      format: 'mp4',
    });
  const config = { trigger: 0, slicesMin: 1, audioFormat: 'aac', videoFormat: 'mp4' };
  const bodies: Body[] = [
    recordingStart(task, opts.baseTime, SUCCESS, config, {
      fileName: name(0),
      audioSample: 48000,
      videoResoulation: '1280x720',
    }),
  ];
  for (let i = 0; i < files; i++) {
    const closedAt = opts.baseTime + (i + 1) * MINUTE;
    const output = { fileName: name(i), fileSize: 9_000_000 + opts.random.int(0, 999_999) };
    bodies.push(recordingFileClosed(task, i === files - 1 ? 3 : 2, closedAt, SUCCESS, output));
    // One upload in fifty fails first and succeeds on the retry.
    const failedFirst = opts.random.chance(0.02);
    if (failedFirst) bodies.push(recordingUpload(task, closedAt + 5000, RECORDING_UPLOAD_FAILURES[0]!, name(i)));
    bodies.push(recordingUpload(task, closedAt + 5000 + (failedFirst ? UPLOAD_RETRY_MS : 0), SUCCESS, name(i)));
    if (opts.random.chance(0.01)) bodies.push(structuredClone(bodies.at(-1)!));
  }
  return bodies;
}

/** A collection, then the heap in use: what the process retains. */
function retainedHeapMb(): number {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
  return Math.round(process.memoryUsage().heapUsed / 1048576);
}

export async function runLargeTasks(opts: {
  images: number;
  hours: number;
  seed: string;
  /** Chance that a batch goes to a worker that dies at one of its writes. */
  deathRate?: number;
  say?: (line: string) => void;
}): Promise<LargeFigures> {
  const random = createRandom(`${opts.seed}/large`);
  const stamp = Date.now().toString(36);
  const imageId = `img-large-${stamp}`;
  const recordId = `rec-day-${stamp}`;
  const baseTime = Date.now() - 2 * 86_400_000;
  const image = imageTaskSends({ images: opts.images, appKey: APP_KEY, taskId: imageId, baseTime, random });
  const day = recordingDayBodies({ hours: opts.hours, taskId: recordId, baseTime, random });
  const tasks = [
    {
      label: `screenshot task of ${opts.images.toLocaleString('en-US')} images`,
      id: imageId,
      service: 'screenshot' as const,
      bodies: image.map((s) => s.body),
      expectedFiles: opts.images,
    },
    {
      label: `recording of ${opts.hours} hours in 1-minute slices`,
      id: recordId,
      service: 'recording' as const,
      bodies: day,
      expectedFiles: opts.hours * 60,
    },
  ];
  // Each task is a message group: its records in order, sequence numbers growing.
  let sequence = 10n ** 19n;
  const groups = tasks.map((t) => ({
    task: t,
    next: 0,
    back: [] as SQSRecord[],
    record: (i: number) => {
      sequence += 1n;
      return sqsRecord(t.service, t.bodies[i]!, { groupId: t.id, sequenceNumber: String(sequence) });
    },
  }));

  // DynamoDB in a process of its own (on disk): the heap measured here is the worker's, not the table's.
  const dir = mkdtempSync(join(tmpdir(), 'callbacks-soak-large-'));
  const db = await startRestartableDynamo(join(dir, 'dynamodb'), 'tasks-large');
  const restore = setLogSink(() => undefined);
  const eventsFile = join(dir, 'events.jsonl');
  const log = createLogger('worker');
  const warm = new DynamoTaskStore({ client: db.client, tableName: db.tableName });
  // Published events go to a file, so that the process's heap is the worker's and the feed's alone.
  const lastSequence = new Map<string, number>();
  let sequenceBackwards = 0;
  const events = {
    publish: async (batch: readonly TaskEvent[]) => {
      for (const e of batch) {
        if (e.sequence < (lastSequence.get(e.task.id) ?? 0)) sequenceBackwards += 1;
        lastSequence.set(e.task.id, e.sequence);
      }
      appendFileSync(
        eventsFile,
        batch.map((e) => `${JSON.stringify({ id: e.id, type: e.type, task: { id: e.task.id } })}\n`).join(''),
      );
    },
  };
  const imageGroup = groups[0]!;
  const heap: LargeFigures['heap'] = [{ images: 0, heapMb: retainedHeapMb() }];
  const checkpoints = [0.01, 0.1, 0.25, 0.5, 0.75, 1].map((f) => Math.round(f * imageGroup.task.bodies.length));
  let feedRssPeak = 0;
  let batches = 0;
  let deaths = 0;
  let redelivered = 0;
  const feedStart = Date.now();
  try {
    // Each batch: up to 8 records of the image task and 2 of the recording, the heads of their groups.
    const quota = [8, 2];
    for (;;) {
      const taken = groups.map((g, i) => {
        const out = g.back.splice(0, quota[i]!);
        while (out.length < quota[i]! && g.next < g.task.bodies.length) out.push(g.record(g.next++));
        // A group whose share is used up by records coming back waits for the next batch.
        return out;
      });
      const records = taken.flat();
      if (records.length === 0) break;
      batches += 1;
      const plan = random.chance(opts.deathRate ?? 0.002)
        ? { failWrite: random.int(1, 2 * BATCH), when: random.chance(0.5) ? ('before' as const) : ('after' as const) }
        : null;
      const dying = plan ? dyingClient(db.client, plan) : null;
      const store = dying ? new DynamoTaskStore({ client: dying.client, tableName: db.tableName }) : warm;
      const res = await processBatch(sqsEvent(records), { store, log, concurrency: 4, events, maxReceiveCount: 1000 });
      const died = dying?.died() ?? false;
      if (died) deaths += 1;
      const failed = new Set(
        died ? records.map((r) => r.messageId) : res.batchItemFailures.map((f) => f.itemIdentifier),
      );
      groups.forEach((g, i) => {
        const mine = taken[i]!;
        const first = mine.findIndex((r) => failed.has(r.messageId));
        if (first < 0) return;
        redelivered += mine.length - first;
        g.back.unshift(...mine.slice(first).map(receivedAgain));
      });
      if (batches % 200 === 0) feedRssPeak = Math.max(feedRssPeak, process.memoryUsage().rss);
      const done = imageGroup.next - imageGroup.back.length;
      if (checkpoints.length && done >= checkpoints[0]! && imageGroup.back.length === 0) {
        checkpoints.shift();
        const images = Math.round((done / imageGroup.task.bodies.length) * opts.images);
        heap.push({ images, heapMb: retainedHeapMb() });
        opts.say?.(`large tasks: ${images} images fed in ${batches} batches, retained heap ${heap.at(-1)!.heapMb} MB`);
      }
    }
    const feedS = (Date.now() - feedStart) / 1000;
    feedRssPeak = Math.max(feedRssPeak, process.memoryUsage().rss);

    // --- verify -------------------------------------------------------------------------------------------
    const verifyStart = Date.now();
    const reader = new DynamoTaskStore({ client: db.client, tableName: db.tableName });
    const queries = new TaskQueries(new TableReader(db.client, db.tableName), Date.now);
    const figures: LargeTaskFigures[] = [];
    const allCallbacks = [];
    for (const t of tasks) {
      const callbacks = t.bodies.map((b) => mustParse(t.service, b));
      allCallbacks.push(...callbacks);
      const keys = new Set(t.bodies.map((b) => eventKey(b)));
      const stored = new Set((await reader.listEvents(t.id)).map((e) => e.key));
      const task = await reader.getTask(t.id);
      const header = (await queries.findHeader(t.id))!;
      const whole = (await queries.assembled(header)).parts;
      const files = countFiles(whole.files);
      figures.push({
        label: t.label,
        id: t.id,
        fed: t.bodies.length,
        distinct: keys.size,
        lost: [...keys].filter((k) => !stored.has(k)).length,
        files: task?.files.length ?? 0,
        expectedFiles: t.expectedFiles,
        status: task?.status ?? 'absent',
        header: countsOf(header),
        recount: {
          files: files.fileCount,
          pending: files.pendingFiles,
          uploaded: files.fileCount - files.pendingFiles - files.failedFiles,
          failed: files.failedFiles,
          events: whole.eventCount,
        },
        equalsFold: isDeepStrictEqual(task, reduceTask(callbacks)),
      });
    }
    const published = readFileSync(eventsFile, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { id: string; type: string; task: { id: string } });
    const expected = expectedEvents(allCallbacks);
    const check = checkPublished(expected, published);
    const eventFigures = {
      must: new Set(expected.must.map((r) => r.id)).size,
      distinct: check.distinct,
      missing: check.missing.length,
      unexpected: check.unexpected.length,
      sequenceBackwards,
    };
    const ok =
      figures.every(
        (f) =>
          f.lost === 0 &&
          f.equalsFold &&
          f.files === f.expectedFiles &&
          f.header !== null &&
          isDeepStrictEqual(f.header, f.recount) &&
          f.header.events === f.distinct,
      ) &&
      check.ok &&
      sequenceBackwards === 0;
    return {
      tasks: figures,
      batches,
      deaths,
      redelivered,
      events: eventFigures,
      heap,
      feedRssPeakMb: Math.round(feedRssPeak / 1048576),
      feedS,
      verifyS: (Date.now() - verifyStart) / 1000,
      ok,
    };
  } finally {
    setLogSink(restore);
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The part of test/soak/RESULTS.md these figures make. */
export function largeTasksMarkdown(f: LargeFigures): string[] {
  const n = (v: number) => v.toLocaleString('en-US');
  const c = (x: LargeTaskFigures['header']) =>
    x
      ? `${n(x.files)} files (${n(x.pending)} pending, ${n(x.uploaded)} uploaded, ${n(x.failed)} failed), ` +
        `${n(x.events)} callbacks`
      : '-';
  const rows: [string, string][] = [];
  for (const t of f.tasks) {
    rows.push([`${t.label}: callbacks fed / distinct / **lost**`, `${n(t.fed)} / ${n(t.distinct)} / **${n(t.lost)}**`]);
    rows.push([`${t.label}: files / expected / status`, `${n(t.files)} / ${n(t.expectedFiles)} / ${t.status}`]);
    rows.push([`${t.label}: header counts`, c(t.header)]);
    rows.push([`${t.label}: a recount of its items`, c(t.recount)]);
    rows.push([`${t.label}: equal to reduceTask`, t.equalsFold ? 'yes' : '**no**']);
  }
  rows.push([
    'batches (10 records) / worker deaths / records delivered again',
    `${n(f.batches)} / ${n(f.deaths)} / ${n(f.redelivered)}`,
  ]);
  rows.push([
    'task events: expected (MUST) / distinct published / **missing** / outside MAY / sequence going back',
    `${n(f.events.must)} / ${n(f.events.distinct)} / **${n(f.events.missing)}** / ${n(f.events.unexpected)} / ` +
      n(f.events.sequenceBackwards),
  ]);
  rows.push([
    "the worker's retained heap after a collection, by images applied",
    f.heap.map((h) => `${n(h.images)}: ${n(h.heapMb)} MB`).join(', '),
  ]);
  rows.push([
    'peak RSS of the process while feeding (worker and feed; DynamoDB runs apart)',
    `${n(f.feedRssPeakMb)} MB`,
  ]);
  rows.push(['feeding / verifying', `${f.feedS.toFixed(0)} s / ${f.verifyS.toFixed(0)} s`]);
  return ['| Figure | Value |', '|---|---|', ...rows.map(([k, v]) => `| ${k} | ${v} |`)];
}
