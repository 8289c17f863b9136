import { bodiesOf } from './plan-bodies.ts';
import type { TaskPlan } from './plans.ts';

const T0 = 1_763_798_400_000;

/** A screenshot task planned by hand, as the property tests, the bench's seeds and the soak build theirs. */
function screenshotPlan(): TaskPlan {
  const config = { trigger: 1, slicesSec: 5, renderMode: 0, picResolution: '640x360' };
  return {
    service: 'screenshot',
    index: 0,
    offset: 0,
    session: { sessionId: 'sess1', roomId: 'room-1', users: ['user-a'] },
    userId: 'user-a',
    extra: '',
    fileStarts: [5000],
    events: [
      { type: 1, rel: 0, code: 200, message: 'success' },
      { type: 4, rel: 5800, code: 200, message: 'success', file: 0, ok: false },
      {
        type: 4,
        rel: 15_800,
        code: 200,
        message: 'success',
        file: 0,
        ok: false,
        fileState: { state: '10003', message: 'bucket not found' },
      },
      { type: 4, rel: 25_800, code: 200, message: 'success', file: 0, ok: true },
      { type: 3, rel: 30_000, code: 200, message: 'success' },
    ],
    screenshot: { streamId: 'stream-1', config, endConfig: config },
  };
}

test('bodiesOf gives one body per planned event, in the plan order, at t0 + rel', () => {
  const bodies = bodiesOf(screenshotPlan(), T0, 'app-1', 'img-1');
  expect(bodies.map((b) => [b.type, b.timestamp, b.imageId, b.appKey])).toEqual([
    [1, T0, 'img-1', 'app-1'],
    [4, T0 + 5800, 'img-1', 'app-1'],
    [4, T0 + 15_800, 'img-1', 'app-1'],
    [4, T0 + 25_800, 'img-1', 'app-1'],
    [3, T0 + 30_000, 'img-1', 'app-1'],
  ]);
});

test("a failed screenshot upload reports the plan's fileState, else the sample body's first failure", () => {
  const uploads = bodiesOf(screenshotPlan(), T0, 'app-1', 'img-1').filter((b) => b.type === 4);
  const fileName = `sess1_room-1_user-a_stream-1_${T0 + 5000}.jpg`;
  expect(uploads.map((b) => [b.code, b.output])).toEqual([
    [10002, { fileName, fileUrl: '', fileState: '10002', fileMsg: 'storage unreachable' }],
    [10003, { fileName, fileUrl: '', fileState: '10003', fileMsg: 'bucket not found' }],
    [200, expect.objectContaining({ fileName, fileState: '10000', fileMsg: 'success' })],
  ]);
});
