import type { Task } from '../../lib/domain/task.ts';
import { diffTask } from './diff.ts';

const file = (fileName: string, over: Partial<Task['files'][number]> = {}): Task['files'][number] => ({
  fileName,
  size: 100,
  url: `https://s/${fileName}`,
  upload: 'uploaded',
  code: 200,
  message: 'success',
  attempts: 1,
  purgeAt: null,
  ...over,
});

const expected: Task = {
  service: 'recording',
  id: 'rec-1',
  appKey: 'demo-app',
  roomId: 'room-1',
  sessionId: 's1',
  userId: null,
  status: 'completed',
  startedAt: 1000,
  endedAt: 5000,
  updatedAt: 6000,
  extra: null,
  config: { slicesMin: 60, trigger: 1 },
  mode: 3,
  modeName: 'mix-audio-video',
  startFileName: 'a.mp4',
  counts: { total: 3, pending: 0, uploaded: 3, failed: 0, lost: 0 },
  files: [file('a.mp4'), file('b.mp4'), file('name.mp4')],
  lastError: null,
  eventCount: 7,
  stalledSince: null,
  settledAt: null,
};
const copy = (): Task => JSON.parse(JSON.stringify(expected));

test('equal tasks have no difference, whatever the file order and extra top-level fields', () => {
  const actual = copy() as Task & { createdAt?: number };
  actual.files.reverse();
  actual.createdAt = 1;
  expect(diffTask(expected, actual)).toEqual([]);
});

test('a missing task is one line', () => {
  expect(diffTask(expected, null)).toEqual(['rec-1: missing']);
});

test('one line per differing field, named by its path', () => {
  const actual = copy();
  actual.status = 'ended';
  actual.userId = 'user-a';
  actual.config = { slicesMin: '60', trigger: 1, extra: true };
  actual.lastError = { type: 4, code: 500, message: 'upload failed', at: 6000 };
  actual.files = [file('a.mp4'), file('b.mp4', { upload: 'failed', code: 500, url: null }), file('zzz.mp4')];
  expect(diffTask(expected, actual)).toEqual([
    'rec-1: userId: expected null, got "user-a"',
    'rec-1: status: expected "completed", got "ended"',
    'rec-1: config.slicesMin: expected 60, got "60"',
    'rec-1: config.extra: expected nothing, got true',
    'rec-1: files[1] (b.mp4).url: expected "https://s/b.mp4", got null',
    'rec-1: files[1] (b.mp4).upload: expected "uploaded", got "failed"',
    'rec-1: files[1] (b.mp4).code: expected 200, got 500',
    'rec-1: files[2] (name.mp4): missing',
    'rec-1: files (zzz.mp4): unexpected, upload "uploaded"',
    'rec-1: lastError: expected null, got {"type":4,"code":500,"message":"upload failed","at":6000}',
  ]);
});

test('a field the store leaves out is reported, long values are cut', () => {
  const actual = copy() as Partial<Task>;
  delete actual.eventCount;
  const long = copy();
  long.extra = 'x'.repeat(500);
  expect(diffTask(expected, actual as Task)).toEqual(['rec-1: eventCount: expected 7, got nothing']);
  const [line] = diffTask(expected, long);
  expect(line!.length).toBeLessThan(200);
  expect(line).toMatch(/^rec-1: extra: expected null, got "x+…$/);
});
