// One screenshot task with a great many images: a start, an upload callback per image (some fail while the
// storage is out and succeed 10 s later, some are delivered twice), and an end. Its header item must stay
// small and its counts exact however many images it holds. The bodies come from the lifecycle generator
// (devkit/emulator/plans.ts, bodiesOf).
import type { ScheduledSend } from '../../devkit/emulator/lifecycles.ts';
import { bodiesOf } from '../../devkit/emulator/plan-bodies.ts';
import type { PlannedEvent, TaskPlan } from '../../devkit/emulator/plans.ts';
import type { Random } from '../../devkit/emulator/random.ts';
import { UPLOAD_RETRY_MS } from '../../lib/platform/delivery.ts';
import { SUCCESS } from '../../lib/platform/failures.ts';

export function imageTaskSends(opts: {
  images: number;
  appKey: string;
  taskId: string;
  baseTime: number;
  random: Random;
}): ScheduledSend[] {
  const { images, appKey, taskId, baseTime, random } = opts;
  const config = { trigger: 1, slicesSec: 5, renderMode: 0, picResolution: '640x360' };
  const events: PlannedEvent[] = [{ type: 1, rel: 0, ...SUCCESS }];
  const fileStarts: number[] = [];
  /** Which events are a second delivery of the one before them. */
  const repeated = new Set<number>();
  for (let i = 0; i < images; i++) {
    const capturedAt = (i + 1) * 5000;
    fileStarts.push(capturedAt);
    // One image in fifty meets a storage outage: a failure, then the success 10 s later.
    const failedFirst = random.chance(0.02);
    if (failedFirst) events.push({ type: 4, rel: capturedAt + 800, ...SUCCESS, file: i, ok: false });
    events.push({
      type: 4,
      rel: capturedAt + 800 + (failedFirst ? UPLOAD_RETRY_MS : 100),
      ...SUCCESS,
      file: i,
      ok: true,
    });
    if (random.chance(0.01)) repeated.add(events.length - 1);
  }
  events.push({ type: 3, rel: (images + 1) * 5000, ...SUCCESS });
  const plan: TaskPlan = {
    service: 'screenshot',
    index: 0,
    offset: 0,
    session: { sessionId: 'soakSession01', roomId: 'room-soak', users: ['user-soak'] },
    userId: 'user-soak',
    extra: 'soak=images',
    events,
    fileStarts,
    screenshot: { streamId: 'stream-soak', config, endConfig: config },
  };
  return bodiesOf(plan, baseTime, appKey, taskId).flatMap((body, i) => {
    const send: ScheduledSend = { service: 'screenshot', body, at: 0, taskId, duplicate: false };
    return repeated.has(i) ? [send, { ...send, body: structuredClone(body), duplicate: true }] : [send];
  });
}
