// One screenshot task with a great many images: a start, an upload callback per image (some fail while the
// storage is out and succeed 10 s later, some are delivered twice), and an end. Its header item must stay
// small and its counts exact however many images it holds.
import type { ScheduledSend } from '../../lib/emulator/lifecycles.ts';
import type { Random } from '../../lib/emulator/random.ts';

export function imageTaskSends(opts: {
  images: number;
  appKey: string;
  taskId: string;
  baseTime: number;
  random: Random;
}): ScheduledSend[] {
  const { images, appKey, taskId, baseTime, random } = opts;
  const base = { appKey, sessionId: 'soakSession01', roomId: 'room-soak', imageId: taskId, extra: 'soak=images' };
  const config = { trigger: 1, slicesSec: 5, renderMode: 0, picResolution: '640x360' };
  const sends: ScheduledSend[] = [];
  const push = (body: Record<string, unknown>, duplicate = false) =>
    sends.push({ service: 'screenshot', body, at: 0, taskId, duplicate });

  push({ timestamp: baseTime, type: 1, ...base, code: 200, errorMessage: 'success', config });
  for (let i = 0; i < images; i++) {
    const capturedAt = baseTime + (i + 1) * 5000;
    const fileName = `soakSession01_room-soak_user-soak_stream-soak_${capturedAt}.jpg`;
    const upload = (at: number, ok: boolean) => ({
      timestamp: at,
      type: 4,
      ...base,
      code: ok ? 200 : 10002,
      errorMessage: ok ? 'success' : 'storage unreachable',
      tag: '',
      output: ok
        ? { fileName, fileUrl: `https://storage.example.com/shots/${fileName}`, fileState: '10000', fileMsg: 'success' }
        : { fileName, fileUrl: '', fileState: '10002', fileMsg: 'storage unreachable' },
    });
    // One image in fifty meets a storage outage: a failure, then the success 10 s later.
    const failedFirst = random.chance(0.02);
    if (failedFirst) push(upload(capturedAt + 800, false));
    const ok = upload(capturedAt + (failedFirst ? 10_800 : 900), true);
    push(ok);
    if (random.chance(0.01)) push(structuredClone(ok), true);
  }
  push({ timestamp: baseTime + (images + 1) * 5000, type: 3, ...base, code: 200, errorMessage: 'success', config });
  return sends;
}
