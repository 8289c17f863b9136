// Tasks for the read paths' tests and bench: callback bodies as the platform sends them, written through
// the worker's own logic (processBatch with the DynamoDB task store), and what each task should read back
// as, from the domain's oracle (reduceTask) rather than from the store.
import { parseCallback, type Callback } from '../../lib/domain/callback.ts';
import type { TaskStore } from '../../lib/domain/task-store.ts';
import { reduceTask } from '../../lib/domain/reduce-task.ts';
import type { Task } from '../../lib/domain/task.ts';
import type { Logger } from '../../lib/log.ts';
import type { Service } from '../../lib/queue-message.ts';
import { processBatch } from '../../lib/worker/process-batch.ts';
import { sqsEvent, sqsRecord } from './sqs-events.ts';

export type Body = Record<string, unknown>;

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

export function recordingTask(p: RecordingPlan): SeedTask {
  const mix = p.userId === '';
  const common = {
    appKey: p.appKey,
    recordId: p.id,
    roomId: p.roomId,
    sessionId: p.sessionId,
    userId: p.userId,
    mode: mix ? 3 : 0,
    extra: '',
  };
  const fileName = `${p.sessionId}_${p.roomId}_${p.at}.mp4`;
  const ok = { code: 200, errorMessage: 'success' };
  const bodies: Body[] = [
    {
      timestamp: p.at,
      type: 1,
      ...common,
      ...(p.outcome === 'failed' ? { code: 1004, errorMessage: 'room not found' } : ok),
      config: { trigger: '1', slicesMin: '30' },
      output: { fileName },
    },
  ];
  if (p.outcome === 'failed' || p.outcome === 'running')
    return { service: 'recording', id: p.id, appKey: p.appKey, bodies };
  bodies.push({ timestamp: p.at + 1000, type: 3, ...common, ...ok, output: { fileName, fileSize: 1024 * 1024 } });
  if (p.outcome === 'completed' || p.outcome === 'upload_failed') {
    const failed = p.outcome === 'upload_failed';
    bodies.push({
      timestamp: p.at + 2000,
      type: 4,
      ...common,
      ...(failed ? { code: 500, errorMessage: 'upload to storage failed' } : ok),
      output: { fileName, fileUrl: failed ? '' : `https://storage.example.com/${fileName}` },
    });
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
  const common = { appKey: p.appKey, sessionId: p.sessionId, roomId: p.roomId, imageId: p.id, extra: '' };
  const config = { trigger: 1, slicesSec: 10, renderMode: 0, picResolution: '640x360' };
  const bodies: Body[] = [{ timestamp: p.at, type: 1, ...common, code: 200, errorMessage: 'success', config }];
  for (let i = 0; i < p.images; i++) {
    const at = p.at + 10_000 * (i + 1);
    const fileName = `${p.sessionId}_${p.roomId}_stream-01_${String(i).padStart(6, '0')}.jpg`;
    const failed = p.failEvery ? (i + 1) % p.failEvery === 0 : false;
    bodies.push({
      timestamp: at + 500,
      type: 4,
      ...common,
      code: failed ? 10002 : 200,
      errorMessage: failed ? 'storage unreachable' : 'success',
      tag: '',
      output: {
        fileName,
        fileUrl: failed ? '' : `https://storage.example.com/shots/${fileName}`,
        fileState: failed ? '10002' : '10000',
        fileMsg: failed ? 'storage unreachable' : 'success',
      },
    });
  }
  if (p.ended) {
    bodies.push({
      timestamp: p.at + 10_000 * (p.images + 1),
      type: 3,
      ...common,
      code: 200,
      errorMessage: 'success',
      config,
    });
  }
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
  const records = tasks.flatMap((t) =>
    t.bodies.map((body) => sqsRecord(t.service, JSON.stringify(body), { receivedAt, verdict: 'valid' })),
  );
  for (let i = 0; i < records.length; i += 100) {
    const res = await processBatch(sqsEvent(records.slice(i, i + 100)), { store, log: silent, concurrency: 5 });
    if (res.batchItemFailures.length > 0)
      throw new Error(`${res.batchItemFailures.length} seed records failed to apply`);
  }
}
