// Tasks for the read paths' bench and tests: callback bodies as the platform sends them (lib/platform's
// builders), written through the worker's own logic (processBatch with the DynamoDB task store, records
// as the ingest enqueues them), and what each task must read back as, from the domain's oracle
// (reduceTask) rather than from the store.
import { parseCallback, type Callback } from '../lib/domain/callback.ts';
import { reduceTask } from '../lib/domain/reduce-task.ts';
import type { TaskStore } from '../lib/domain/task-store.ts';
import type { Task } from '../lib/domain/task.ts';
import type { Logger } from '../lib/log.ts';
import {
  recordingFileClosed,
  recordingStart,
  recordingUpload,
  screenshotStartOrEnd,
  screenshotUpload,
  type Body,
} from '../lib/platform/bodies.ts';
import { recordingFileName, screenshotFileName } from '../lib/platform/file-names.ts';
import {
  RECORDING_UPLOAD_FAILURES,
  SCREENSHOT_UPLOAD_FAILURES,
  START_FAILURES,
  SUCCESS,
} from '../lib/platform/failures.ts';
import type { Service } from '../lib/domain/services.ts';
import { processBatch } from '../lib/worker/process-batch.ts';
import { toSqsRecord } from './callbacks.ts';
import { chunks } from '../lib/in-parallel.ts';

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
  const task = {
    appKey: p.appKey,
    recordId: p.id,
    roomId: p.roomId,
    sessionId: p.sessionId,
    userId: p.userId,
    mode,
    extra: '',
  };
  const fileName = recordingFileName({ ...p, streamTag: 'camera', mode, timestamp: p.at, format: 'mp4' });
  const started = p.outcome === 'failed' ? START_FAILURES.recording[0]! : SUCCESS;
  const output = { fileName, audioSample: '', videoResoulation: '1280x720' };
  const bodies = [recordingStart(task, p.at, started, { trigger: '1', slicesMin: '30' }, output)];
  if (p.outcome !== 'failed' && p.outcome !== 'running') {
    bodies.push(recordingFileClosed(task, 3, p.at + 1000, SUCCESS, { fileName, fileSize: 1024 * 1024 }));
    if (p.outcome === 'completed') bodies.push(recordingUpload(task, p.at + 2000, SUCCESS, fileName));
    if (p.outcome === 'upload_failed')
      bodies.push(recordingUpload(task, p.at + 2000, RECORDING_UPLOAD_FAILURES[0]!, fileName));
  }
  return { service: 'recording', id: p.id, appKey: p.appKey, bodies };
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
  const task = { appKey: p.appKey, sessionId: p.sessionId, roomId: p.roomId, imageId: p.id, extra: '' };
  const config = { trigger: 1, slicesSec: 10, renderMode: 0, picResolution: '640x360' };
  const bodies = [screenshotStartOrEnd(task, 1, p.at, SUCCESS, config)];
  for (let i = 0; i < p.images; i++) {
    const takenAt = p.at + 10_000 * (i + 1);
    const fileName = screenshotFileName({ ...p, userId: 'user-alice', streamId: 'stream-01', timestamp: takenAt });
    const failed = p.failEvery ? (i + 1) % p.failEvery === 0 : false;
    bodies.push(screenshotUpload(task, takenAt + 500, fileName, failed ? SCREENSHOT_UPLOAD_FAILURES[0]! : null));
  }
  if (p.ended) bodies.push(screenshotStartOrEnd(task, 3, p.at + 10_000 * (p.images + 1), SUCCESS, config));
  return { service: 'screenshot', id: p.id, appKey: p.appKey, bodies };
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

/** Applies every body through the worker's batch logic, as SQS records would arrive, 100 per batch. */
export async function applyTasks(store: TaskStore, tasks: readonly SeedTask[], receivedAt = Date.now()): Promise<void> {
  const records = tasks
    .flatMap((t) => t.bodies.map((body) => ({ service: t.service, body })))
    .map((send, i) => toSqsRecord(send, i, receivedAt));
  for (const Records of chunks(records, 100)) {
    const res = await processBatch({ Records }, { store, log: silent, concurrency: 5 });
    if (res.batchItemFailures.length > 0)
      throw new Error(`${res.batchItemFailures.length} seed records failed to apply`);
  }
}
