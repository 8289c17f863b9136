// One screenshot task with a great many images: a start, an upload callback per image (some fail while the
// storage is out and succeed 10 s later, some are delivered twice), and an end. Its header item must stay
// small and its counts exact however many images it holds.
import type { ScheduledSend } from '../../lib/emulator/lifecycles.ts';
import type { Random } from '../../lib/emulator/random.ts';
import { type Body, type ScreenshotTask, screenshotStartOrEnd, screenshotUpload } from '../../lib/platform/bodies.ts';
import { UPLOAD_RETRY_MS } from '../../lib/platform/delivery.ts';
import { SCREENSHOT_UPLOAD_FAILURES, SUCCESS } from '../../lib/platform/failures.ts';
import { screenshotFileName } from '../../lib/platform/file-names.ts';

export function imageTaskSends(opts: {
  images: number;
  appKey: string;
  taskId: string;
  baseTime: number;
  random: Random;
}): ScheduledSend[] {
  const { images, appKey, taskId, baseTime, random } = opts;
  const task: ScreenshotTask = {
    appKey,
    sessionId: 'soakSession01',
    roomId: 'room-soak',
    imageId: taskId,
    extra: 'soak=images',
  };
  const config = { trigger: 1, slicesSec: 5, renderMode: 0, picResolution: '640x360' };
  const sends: ScheduledSend[] = [];
  const push = (body: Body, duplicate = false) => sends.push({ service: 'screenshot', body, at: 0, taskId, duplicate });

  push(screenshotStartOrEnd(task, 1, baseTime, SUCCESS, config));
  for (let i = 0; i < images; i++) {
    const capturedAt = baseTime + (i + 1) * 5000;
    const { sessionId, roomId } = task;
    const fileName = screenshotFileName({
      sessionId,
      roomId,
      userId: 'user-soak',
      streamId: 'stream-soak',
      timestamp: capturedAt,
    });
    // One image in fifty meets a storage outage: a failure, then the success 10 s later.
    const failedFirst = random.chance(0.02);
    if (failedFirst) push(screenshotUpload(task, capturedAt + 800, fileName, SCREENSHOT_UPLOAD_FAILURES[0]!));
    const ok = screenshotUpload(task, capturedAt + 800 + (failedFirst ? UPLOAD_RETRY_MS : 100), fileName, null);
    push(ok);
    if (random.chance(0.01)) push(structuredClone(ok), true);
  }
  push(screenshotStartOrEnd(task, 3, baseTime + (images + 1) * 5000, SUCCESS, config));
  return sends;
}
