// Tasks for the read paths' bench and tests: callback bodies as the platform sends them (the lifecycle
// generator's bodiesOf, devkit/emulator/plans.ts), written through the worker's own logic (processBatch with the
// DynamoDB task store, records as the ingest enqueues them), and what each task must read back as, from the
// domain's oracle (reduceTask) rather than from the store.
import { parseCallback, type Callback } from '../../lib/domain/callback.ts';
import { reduceTask } from '../../lib/domain/reduce-task.ts';
import type { TaskStore } from '../../lib/domain/task-store.ts';
import type { BatchWriter } from '../../lib/domain/batch.ts';
import type { Task } from '../../lib/domain/task.ts';
import type { Logger } from '../../lib/log.ts';
import { bodiesOf } from '../emulator/plan-bodies.ts';
import type { PlannedEvent, TaskPlan } from '../emulator/plans.ts';
import type { Body } from '../../lib/platform/bodies.ts';
import { RECORDING_UPLOAD_FAILURES, START_FAILURES, SUCCESS } from '../../lib/platform/failures.ts';
import type { Service } from '../../lib/platform/services.ts';
import { processBatch } from '../../lib/worker/process-batch.ts';
import { toSqsRecord } from './sqs-record.ts';
import { chunks } from '../../lib/in-parallel.ts';

export interface SeedTask {
  service: Service;
  id: string;
  appKey: string;
  bodies: Body[];
}

export type Outcome = 'running' | 'ended' | 'failed' | 'completed' | 'upload_failed';

export interface RecordingPlan {
  id: string;
  appKey: string;
  roomId: string;
  sessionId: string;
  /** "" for the mixed modes, as the platform sends it. */
  userId: string;
  /** Time of the start callback; the others follow a second apart. */
  at: number;
  outcome: Outcome;
}

/** A recording with one file: start, then (unless it failed or still runs) its end and its upload. */
export function recordingTask(p: RecordingPlan): SeedTask {
  const mode = p.userId === '' ? 3 : 0;
  const events: PlannedEvent[] = [
    { type: 1, rel: 0, ...(p.outcome === 'failed' ? START_FAILURES.recording[0]! : SUCCESS) },
  ];
  if (p.outcome !== 'failed' && p.outcome !== 'running') {
    events.push({ type: 3, rel: 1000, ...SUCCESS, file: 0, size: 1024 * 1024 });
    if (p.outcome === 'completed') events.push({ type: 4, rel: 2000, ...SUCCESS, file: 0, ok: true });
    if (p.outcome === 'upload_failed')
      events.push({ type: 4, rel: 2000, ...RECORDING_UPLOAD_FAILURES[0]!, file: 0, ok: false });
  }
  const plan: TaskPlan = {
    service: 'recording',
    index: 0,
    offset: 0,
    session: { sessionId: p.sessionId, roomId: p.roomId, users: [p.userId] },
    userId: p.userId,
    extra: '',
    events,
    fileStarts: [0],
    recording: {
      mode,
      streamTag: 'camera',
      ext: 'mp4',
      config: { trigger: '1', slicesMin: '30' },
      audioSample: '',
      resolution: '1280x720',
    },
  };
  return { service: 'recording', id: p.id, appKey: p.appKey, bodies: bodiesOf(plan, p.at, p.appKey, p.id) };
}

export interface ScreenshotPlan {
  id: string;
  appKey: string;
  roomId: string;
  sessionId: string;
  at: number;
  /** Images uploaded, one upload callback each, 10 s apart. */
  images: number;
  /** Every this-many-th image fails to upload (0: none). */
  failEvery?: number;
  ended?: boolean;
}

export function screenshotTask(p: ScreenshotPlan): SeedTask {
  const config = { trigger: 1, slicesSec: 10, renderMode: 0, picResolution: '640x360' };
  const events: PlannedEvent[] = [{ type: 1, rel: 0, ...SUCCESS }];
  const fileStarts: number[] = [];
  for (let i = 0; i < p.images; i++) {
    const takenAt = 10_000 * (i + 1);
    const failed = p.failEvery ? (i + 1) % p.failEvery === 0 : false;
    fileStarts.push(takenAt);
    // A failed upload reports the first of SCREENSHOT_UPLOAD_FAILURES.
    events.push({ type: 4, rel: takenAt + 500, ...SUCCESS, file: i, ok: !failed });
  }
  if (p.ended) events.push({ type: 3, rel: 10_000 * (p.images + 1), ...SUCCESS });
  const plan: TaskPlan = {
    service: 'screenshot',
    index: 0,
    offset: 0,
    session: { sessionId: p.sessionId, roomId: p.roomId, users: ['user-alice'] },
    userId: 'user-alice',
    extra: '',
    events,
    fileStarts,
    screenshot: { streamId: 'stream-01', config, endConfig: config },
  };
  return { service: 'screenshot', id: p.id, appKey: p.appKey, bodies: bodiesOf(plan, p.at, p.appKey, p.id) };
}

export function callbacksOf(task: SeedTask): Callback[] {
  return task.bodies.map((body) => {
    const parsed = parseCallback(task.service, body);
    if (!parsed.ok) throw new Error(`seed body of ${task.id} does not parse: ${parsed.errors.join('; ')}`);
    return parsed.callback;
  });
}

/** The task the receiver must hold once every callback of `task` is applied (the domain's oracle). */
export function expectedTask(task: SeedTask): Task {
  return reduceTask(callbacksOf(task))!;
}

const silent: Logger = { debug() {}, info() {}, warn() {}, error() {} };

/** Records seeded in this process so far: each call's are numbered on from the last. */
let seededRecords = 0;

/** Applies every body through the worker's batch logic, as SQS records would arrive, 100 per batch. */
export async function applyTasks(
  store: TaskStore & BatchWriter,
  tasks: readonly SeedTask[],
  receivedAt = Date.now(),
): Promise<void> {
  // Numbered on from every earlier call: a record's nonce, and so its replay key, is its number's, and two calls in
  // one second would otherwise sign different bodies alike (the second a replay).
  const records = tasks
    .flatMap((t) => t.bodies.map((body) => ({ service: t.service, body })))
    .map((send) => toSqsRecord(send, seededRecords++, receivedAt));
  for (const Records of chunks(records, 100)) {
    const res = await processBatch({ Records }, { store, log: silent, concurrency: 5 });
    if (res.batchItemFailures.length > 0)
      throw new Error(`${res.batchItemFailures.length} seed records failed to apply`);
  }
}
