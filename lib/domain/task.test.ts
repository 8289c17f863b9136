// docs/contract.md §4, rule by rule. Every test runs against the incremental fold (in the given order and in
// reverse) and against the declarative oracle, so a rule broken in either breaks a test.
import { readFileSync } from 'node:fs';
import { foldTask } from '../../test/support/fold-task.ts';
import { reduceTask } from './reduce-task.ts';
import type { Task, TaskStatus } from './task.ts';
import { eventKey } from './canonical.ts';
import { mustParse } from '../../test/support/lifecycles.ts';
import type { Service } from '../platform/services.ts';

type Body = Record<string, unknown>;

const DAY = 86_400_000;
const T0 = 1_763_798_400_000;
const MIN = 60_000;

const fixture = (name: string): Body =>
  JSON.parse(readFileSync(new URL(`../../test/fixtures/${name}.json`, import.meta.url), 'utf8'));

// --- bodies ---------------------------------------------------------------------------------------

const recCommon = {
  appKey: 'demo-app',
  recordId: 'rec-1',
  roomId: 'room-1',
  sessionId: 'sess-1',
  userId: '',
  mode: 3,
  extra: 'x',
  code: 200,
  errorMessage: 'success',
};
const rec = {
  start: (t: number, over: Body = {}): Body => ({
    ...recCommon,
    timestamp: t,
    type: 1,
    config: { trigger: 1, slicesMin: 60 },
    output: { fileName: 'A.mp4', audioSample: 48000, videoResoulation: '1280x720' },
    ...over,
  }),
  slice: (t: number, fileName: string, fileSize: number, over: Body = {}): Body => ({
    ...recCommon,
    timestamp: t,
    type: 2,
    output: { fileName, fileSize },
    ...over,
  }),
  end: (t: number, fileName: string, fileSize: number, over: Body = {}): Body => ({
    ...recCommon,
    timestamp: t,
    type: 3,
    output: { fileName, fileSize },
    ...over,
  }),
  uploaded: (t: number, fileName: string, over: Body = {}): Body => ({
    ...recCommon,
    timestamp: t,
    type: 4,
    output: { fileName, fileUrl: `https://s.example/${fileName}` },
    ...over,
  }),
  uploadFailed: (t: number, fileName: string, code = 500, message = 'upload failed', over: Body = {}): Body => ({
    ...recCommon,
    timestamp: t,
    type: 4,
    code,
    errorMessage: message,
    output: { fileName, fileUrl: '' },
    ...over,
  }),
};
const failedWith = (code: number, errorMessage: string) => ({ code, errorMessage });

const shotCommon = {
  appKey: 'demo-app',
  imageId: 'img-1',
  roomId: 'room-1',
  sessionId: 'sess-1',
  extra: '',
  code: 200,
  errorMessage: 'success',
};
const shotConfig = { trigger: 1, slicesSec: 10, renderMode: 0, picResolution: '640x360' };
const shot = {
  start: (t: number, over: Body = {}): Body => ({ ...shotCommon, timestamp: t, type: 1, config: shotConfig, ...over }),
  end: (t: number, over: Body = {}): Body => ({ ...shotCommon, timestamp: t, type: 3, config: shotConfig, ...over }),
  upload: (t: number, fileName: string, fileState: string, over: Body = {}): Body => {
    const ok = fileState === '10000';
    const message = ok ? 'success' : `state ${fileState}`;
    return {
      ...shotCommon,
      timestamp: t,
      type: 4,
      code: ok ? 200 : Number(fileState),
      errorMessage: message,
      tag: '',
      output: { fileName, fileUrl: ok ? `https://s.example/${fileName}` : '', fileState, fileMsg: message },
      ...over,
    };
  },
};

/** The same JSON with the keys of every object in reverse order. */
function reversedKeys<T>(value: T): T {
  if (Array.isArray(value)) return value.map(reversedKeys) as T;
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value)
      .reverse()
      .map(([k, v]) => [k, reversedKeys(v)]),
  ) as T;
}

/** A variant of a body (an extra unknown field) whose event key sorts as asked against `other`'s. */
function withKeyAgainst(make: (salt: number) => Body, other: Body, order: 'below' | 'above'): Body {
  const otherKey = eventKey(other);
  for (let salt = 0; salt < 1000; salt++) {
    const body = make(salt);
    if (order === 'below' ? eventKey(body) < otherKey : eventKey(body) > otherKey) return body;
  }
  throw new Error('no variant found');
}

// --- the three ways of building a task --------------------------------------------------------------

type Build = (service: Service, bodies: Body[]) => Task | null;
const builds: [string, Build][] = [
  ['foldTask, in the given order', (service, bodies) => foldTask(bodies.map((b) => mustParse(service, b)))],
  ['foldTask, in reverse order', (service, bodies) => foldTask(bodies.map((b) => mustParse(service, b)).reverse())],
  ['reduceTask', (service, bodies) => reduceTask(bodies.map((b) => mustParse(service, b)))],
];

describe.each(builds)('%s', (_name, build) => {
  const recording = (...bodies: Body[]): Task => build('recording', bodies)!;
  const screenshot = (...bodies: Body[]): Task => build('screenshot', bodies)!;
  const fileOf = (task: Task, fileName: string) => {
    const file = task.files.find((f) => f.fileName === fileName);
    if (!file) throw new Error(`no file ${fileName} in ${JSON.stringify(task.files)}`);
    return file;
  };

  test('no callbacks, no task', () => {
    expect(build('recording', [])).toBeNull();
  });

  // --- the fixture stories -----------------------------------------------------------------------

  describe('the recording story of the fixtures', () => {
    const FILE_A = 'sN3kL9xQ2aT7_room-1024_1763798400000.mp4';
    const FILE_B = 'sN3kL9xQ2aT7_room-1024_1763802000000.mp4';
    const story = [
      'recording-1-start-mix',
      'recording-2-slice',
      'recording-4-upload-ok',
      'recording-3-end',
      'recording-4-upload-failed',
    ].map(fixture);

    test('start, slice, upload ok, end, upload failed: upload_failed, with both files', () => {
      expect(recording(...story)).toStrictEqual({
        service: 'recording',
        id: '7nQ2f0vB-rec-001',
        appKey: 'demo-app',
        roomId: 'room-1024',
        sessionId: 'sN3kL9xQ2aT7',
        userId: null,
        status: 'upload_failed',
        startedAt: 1763798400000,
        endedAt: 1763803800000,
        updatedAt: 1763803810000,
        extra: 'meeting=abc',
        config: { trigger: 0, mixLayout: 2, slicesMin: 60, audioFormat: 'aac', videoFormat: 'mp4' },
        mode: 3,
        modeName: 'mix-audio-video',
        startFileName: FILE_A,
        counts: { total: 2, pending: 0, uploaded: 1, failed: 1, lost: 0 },
        files: [
          {
            fileName: FILE_A,
            size: 734003200,
            url: `https://storage.example.com/recordings/${FILE_A}`,
            upload: 'uploaded',
            code: 200,
            message: 'success',
            attempts: 1,
            purgeAt: null,
          },
          {
            fileName: FILE_B,
            size: 367001600,
            url: null,
            upload: 'failed',
            code: 500,
            message: 'upload to storage failed',
            attempts: 1,
            purgeAt: 1763803810000 + DAY,
          },
        ],
        lastError: { type: 4, code: 500, message: 'upload to storage failed', at: 1763803810000 },
        eventCount: 5,
        stalledSince: null,
        settledAt: null,
      });
    });

    test('a later successful retry of the failed file completes the task; lastError stays', () => {
      const retry = {
        ...fixture('recording-4-upload-ok'),
        timestamp: 1763803820000,
        output: { fileName: FILE_B, fileUrl: `https://s.example/${FILE_B}` },
      };
      const task = recording(...story, retry);
      expect(task.status).toBe('completed');
      expect(fileOf(task, FILE_B)).toStrictEqual({
        fileName: FILE_B,
        size: 367001600,
        url: `https://s.example/${FILE_B}`,
        upload: 'uploaded',
        code: 200,
        message: 'success',
        attempts: 2,
        purgeAt: null,
      });
      expect(task.lastError).toStrictEqual({
        type: 4,
        code: 500,
        message: 'upload to storage failed',
        at: 1763803810000,
      });
      expect(task.eventCount).toBe(6);
      expect(task.updatedAt).toBe(1763803820000);
    });

    test('the single-mode start alone: recording, with its user, mode and config', () => {
      expect(recording(fixture('recording-1-start-single'))).toStrictEqual({
        service: 'recording',
        id: 'Kp4e-rec-002',
        appKey: 'demo-app',
        roomId: 'room-1024',
        sessionId: 'sN3kL9xQ2aT7',
        userId: 'user-alice',
        status: 'recording',
        startedAt: 1763798460000,
        endedAt: null,
        updatedAt: 1763798460000,
        extra: '',
        config: { trigger: 1, slicesMin: 30, audioFormat: 'aac', videoFormat: 'mp4' },
        mode: 0,
        modeName: 'single-audio-video',
        startFileName: 'sN3kL9xQ2aT7_room-1024_user-alice_screen_1763798460000.mp4',
        counts: { total: 0, pending: 0, uploaded: 0, failed: 0, lost: 0 },
        files: [],
        lastError: null,
        eventCount: 1,
        stalledSince: null,
        settledAt: null,
      });
    });
  });

  describe('the screenshot story of the fixtures', () => {
    const SHOT_OK = 'sN3kL9xQ2aT7_room-1024_user-alice_stream-01_1763798410000.jpg';
    const SHOT_FAILED = 'sN3kL9xQ2aT7_room-1024_user-alice_stream-01_1763798420000.jpg';
    const story = [
      'screenshot-1-start',
      'screenshot-4-upload-ok',
      'screenshot-4-upload-failed',
      'screenshot-3-end',
    ].map(fixture);

    test('start, upload ok, upload failed, end: upload_failed, with both images', () => {
      const task = screenshot(...story);
      expect(task).toStrictEqual({
        service: 'screenshot',
        id: 'img-5c1d9e',
        appKey: 'demo-app',
        roomId: 'room-1024',
        sessionId: 'sN3kL9xQ2aT7',
        userId: null,
        status: 'upload_failed',
        startedAt: 1763798400500,
        endedAt: 1763798700000,
        updatedAt: 1763798700000,
        extra: '',
        config: { trigger: 1, slicesSec: 10, renderMode: 0, picResolution: '640x360' },
        counts: { total: 2, pending: 0, uploaded: 1, failed: 1, lost: 0 },
        files: [
          {
            fileName: SHOT_OK,
            size: null,
            url: `https://storage.example.com/shots/${SHOT_OK}`,
            upload: 'uploaded',
            code: 200,
            message: 'success',
            attempts: 1,
            purgeAt: null,
          },
          {
            fileName: SHOT_FAILED,
            size: null,
            url: null,
            upload: 'failed',
            code: 10002,
            message: 'storage unreachable',
            attempts: 1,
            purgeAt: 1763798421000 + DAY,
          },
        ],
        lastError: { type: 4, code: 10002, message: 'storage unreachable', at: 1763798421000 },
        eventCount: 4,
        stalledSince: null,
        settledAt: null,
      });
      // Recording-only fields are absent from a screenshot task (toStrictEqual above also says so).
      for (const key of ['mode', 'modeName', 'startFileName']) expect(Object.keys(task)).not.toContain(key);
    });

    test('a later successful retry of the failed image completes the task', () => {
      const retry = shot.upload(1763798431000, SHOT_FAILED, '10000', {
        imageId: 'img-5c1d9e',
        sessionId: 'sN3kL9xQ2aT7',
        roomId: 'room-1024',
      });
      const task = screenshot(...story, retry);
      expect(task.status).toBe('completed');
      expect(fileOf(task, SHOT_FAILED)).toMatchObject({
        upload: 'uploaded',
        code: 200,
        attempts: 2,
        purgeAt: null,
        url: `https://s.example/${SHOT_FAILED}`,
      });
      expect(task.lastError).toMatchObject({ code: 10002, at: 1763798421000 });
    });
  });

  // --- rule: same event = equal JSON, key order ignored ---------------------------------------------

  describe('two callbacks are the same event when their bodies are equal as JSON', () => {
    test('a duplicate with its keys in another order (at every depth) changes nothing', () => {
      const bodies = [rec.start(T0), rec.slice(T0 + 60 * MIN, 'A.mp4', 100), rec.uploadFailed(T0 + 61 * MIN, 'A.mp4')];
      const reordered = bodies.map(reversedKeys);
      for (const [a, b] of bodies.map((body, i) => [body, reordered[i]]))
        expect(JSON.stringify(a)).not.toBe(JSON.stringify(b));
      const once = recording(...bodies);
      expect(once.eventCount).toBe(3);
      expect(recording(...bodies, ...reordered)).toStrictEqual(once);
      expect(recording(...reordered, ...bodies, ...bodies)).toStrictEqual(once);
      expect(fileOf(recording(...bodies, reordered[2]!), 'A.mp4').attempts).toBe(1);
    });

    test('bodies that differ in any value are different events, even a number sent as a string', () => {
      const failure = rec.uploadFailed(T0, 'A.mp4', 500, 'timeout');
      const otherMessage = rec.uploadFailed(T0, 'A.mp4', 500, 'timed out');
      const stringCode = { ...failure, code: '500' };
      const task = recording(failure, otherMessage, stringCode);
      expect(task.eventCount).toBe(3);
      expect(fileOf(task, 'A.mp4').attempts).toBe(3);
    });
  });

  // --- rule: which files a task has ----------------------------------------------------------------

  describe('a file is known from a slice, end or upload callback; the start names none', () => {
    test('the start output.fileName is kept as startFileName, not as a file', () => {
      const task = recording(rec.start(T0));
      expect(task.files).toEqual([]);
      expect(task.startFileName).toBe('A.mp4');
    });

    test('a slice names a file: pending, with its size', () => {
      expect(recording(rec.start(T0), rec.slice(T0 + 60 * MIN, 'A.mp4', 100)).files).toStrictEqual([
        {
          fileName: 'A.mp4',
          size: 100,
          url: null,
          upload: 'pending',
          code: null,
          message: null,
          attempts: 0,
          purgeAt: null,
        },
      ]);
    });

    test('an end names a file', () => {
      expect(recording(rec.end(T0, 'B.mp4', 50)).files).toStrictEqual([
        {
          fileName: 'B.mp4',
          size: 50,
          url: null,
          upload: 'pending',
          code: null,
          message: null,
          attempts: 0,
          purgeAt: null,
        },
      ]);
    });

    test('an upload alone names a file, of unknown size', () => {
      expect(recording(rec.uploaded(T0, 'C.mp4')).files).toStrictEqual([
        {
          fileName: 'C.mp4',
          size: null,
          url: 'https://s.example/C.mp4',
          upload: 'uploaded',
          code: 200,
          message: 'success',
          attempts: 1,
          purgeAt: null,
        },
      ]);
      expect(screenshot(shot.upload(T0, 'x.jpg', '10000')).files.map((f) => f.fileName)).toEqual(['x.jpg']);
    });

    test('the start file, once a slice names it, is one file; the start still keeps its name', () => {
      const task = recording(
        rec.start(T0),
        rec.slice(T0 + 60 * MIN, 'A.mp4', 100),
        rec.end(T0 + 90 * MIN, 'B.mp4', 50),
      );
      expect(task.files.map((f) => f.fileName)).toEqual(['A.mp4', 'B.mp4']);
      expect(task.startFileName).toBe('A.mp4');
    });

    test('startFileName comes from the earliest start', () => {
      const task = recording(
        rec.start(T0 + 5, { output: { fileName: 'late.mp4' } }),
        rec.start(T0, { output: { fileName: 'early.mp4' } }),
      );
      expect(task.startFileName).toBe('early.mp4');
      expect(task.files).toEqual([]);
    });

    test("a file's size is the latest reported", () => {
      const task = recording(rec.slice(T0 + 2, 'A.mp4', 200), rec.slice(T0 + 1, 'A.mp4', 100));
      expect(fileOf(task, 'A.mp4').size).toBe(200);
    });
  });

  // --- rule: a file's upload outcome ---------------------------------------------------------------

  describe("a file's outcome is that of its upload callback with the greatest timestamp", () => {
    test('a later failure beats an earlier success, whatever the arrival order', () => {
      const file = fileOf(
        recording(rec.uploadFailed(T0 + 20, 'A.mp4', 503, 'down'), rec.uploaded(T0 + 10, 'A.mp4')),
        'A.mp4',
      );
      expect(file).toStrictEqual({
        fileName: 'A.mp4',
        size: null,
        url: null,
        upload: 'failed',
        code: 503,
        message: 'down',
        attempts: 2,
        purgeAt: T0 + 20 + DAY,
      });
    });

    test('a later success beats an earlier failure, whatever the arrival order', () => {
      const file = fileOf(
        recording(rec.uploaded(T0 + 20, 'A.mp4'), rec.uploadFailed(T0 + 10, 'A.mp4', 503, 'down')),
        'A.mp4',
      );
      expect(file).toStrictEqual({
        fileName: 'A.mp4',
        size: null,
        url: 'https://s.example/A.mp4',
        upload: 'uploaded',
        code: 200,
        message: 'success',
        attempts: 2,
        purgeAt: null,
      });
    });

    test('the latest of several failures gives the code and message', () => {
      const file = fileOf(
        recording(
          rec.uploadFailed(T0 + 30, 'A.mp4', 504, 'third'),
          rec.uploadFailed(T0 + 10, 'A.mp4', 500, 'first'),
          rec.uploadFailed(T0 + 20, 'A.mp4', 503, 'second'),
        ),
        'A.mp4',
      );
      expect(file).toMatchObject({ upload: 'failed', code: 504, message: 'third', attempts: 3 });
    });

    test('uploads of one file do not decide another', () => {
      const task = recording(rec.uploaded(T0 + 20, 'A.mp4'), rec.uploadFailed(T0 + 30, 'B.mp4'));
      expect(fileOf(task, 'A.mp4').upload).toBe('uploaded');
      expect(fileOf(task, 'B.mp4').upload).toBe('failed');
    });

    test.each(['below', 'above'] as const)('success wins a tie (success event key %s the failure key)', (order) => {
      const failure = rec.uploadFailed(T0 + 10, 'A.mp4', 500, 'down');
      const success = withKeyAgainst((salt) => rec.uploaded(T0 + 10, 'A.mp4', { salt }), failure, order);
      for (const bodies of [
        [failure, success],
        [success, failure],
      ]) {
        expect(fileOf(recording(...bodies), 'A.mp4')).toMatchObject({
          upload: 'uploaded',
          code: 200,
          url: 'https://s.example/A.mp4',
          attempts: 2,
          purgeAt: null,
        });
        expect(recording(...bodies).status).not.toBe('upload_failed');
      }
    });

    test('screenshot: fileState "10000" is a success with code 200', () => {
      expect(fileOf(screenshot(shot.upload(T0, 'x.jpg', '10000')), 'x.jpg')).toMatchObject({
        upload: 'uploaded',
        code: 200,
      });
    });

    test('screenshot: another fileState is a failure with that code', () => {
      expect(fileOf(screenshot(shot.upload(T0, 'x.jpg', '10003')), 'x.jpg')).toMatchObject({
        upload: 'failed',
        code: 10003,
        message: 'state 10003',
      });
    });

    test('screenshot: fileState decides even when the body code says 200', () => {
      const contradiction = shot.upload(T0 + 5, 'x.jpg', '10003', { code: 200, errorMessage: 'success' });
      const task = screenshot(shot.start(T0), contradiction);
      expect(fileOf(task, 'x.jpg')).toMatchObject({ upload: 'failed', code: 10003 });
      expect(task.status).toBe('upload_failed');
      expect(task.lastError).toStrictEqual({ type: 4, code: 10003, message: 'state 10003', at: T0 + 5 });
    });

    test('screenshot: the latest attempt wins, success on a tie', () => {
      expect(
        fileOf(screenshot(shot.upload(T0 + 20, 'x.jpg', '10002'), shot.upload(T0 + 10, 'x.jpg', '10000')), 'x.jpg')
          .upload,
      ).toBe('failed');
      expect(
        fileOf(screenshot(shot.upload(T0 + 10, 'x.jpg', '10000'), shot.upload(T0 + 10, 'x.jpg', '10002')), 'x.jpg')
          .upload,
      ).toBe('uploaded');
    });
  });

  // --- rule: purgeAt -------------------------------------------------------------------------------

  describe('purgeAt: first failure + 24 h, while the file is failed', () => {
    test('is the first failure + 24 h, not the latest', () => {
      const file = fileOf(
        recording(
          rec.uploadFailed(T0 + 20_000, 'A.mp4'),
          rec.uploadFailed(T0 + 10_000, 'A.mp4'),
          rec.uploadFailed(T0 + 30_000, 'A.mp4'),
        ),
        'A.mp4',
      );
      expect(file.purgeAt).toBe(T0 + 10_000 + 86_400_000);
    });

    test('a failure after an earlier success: that failure + 24 h', () => {
      expect(
        fileOf(recording(rec.uploadFailed(T0 + 20_000, 'A.mp4'), rec.uploaded(T0 + 10_000, 'A.mp4')), 'A.mp4').purgeAt,
      ).toBe(T0 + 20_000 + DAY);
    });

    test('is null once the file is uploaded, and for a pending file', () => {
      expect(
        fileOf(recording(rec.uploadFailed(T0, 'A.mp4'), rec.uploaded(T0 + 10_000, 'A.mp4')), 'A.mp4').purgeAt,
      ).toBeNull();
      expect(fileOf(recording(rec.slice(T0, 'A.mp4', 1)), 'A.mp4').purgeAt).toBeNull();
    });

    test('screenshot images too', () => {
      expect(
        fileOf(
          screenshot(shot.upload(T0 + 10_000, 'x.jpg', '10002'), shot.upload(T0 + 20_000, 'x.jpg', '10001')),
          'x.jpg',
        ).purgeAt,
      ).toBe(T0 + 10_000 + DAY);
    });
  });

  // --- rule: status --------------------------------------------------------------------------------

  describe('status, in its order of precedence', () => {
    const S = T0;
    const sliceA = rec.slice(S + 60 * MIN, 'A.mp4', 100);
    const endB = rec.end(S + 90 * MIN, 'B.mp4', 50);
    const okA = rec.uploaded(S + 61 * MIN, 'A.mp4');
    const okB = rec.uploaded(S + 91 * MIN, 'B.mp4');
    const failB = rec.uploadFailed(S + 91 * MIN, 'B.mp4');
    const failedStart = rec.start(S, failedWith(1004, 'room not found'));

    test.each<[string, Body[], TaskStatus]>([
      ['start only', [rec.start(S)], 'recording'],
      ['start and a pending slice file', [rec.start(S), sliceA], 'recording'],
      ['start, no end, every file uploaded: completed needs the end', [rec.start(S), sliceA, okA], 'recording'],
      ['end 200 with its file pending', [rec.start(S), sliceA, okA, endB], 'ended'],
      ['end 200, a slice file pending: completed needs no pending file', [rec.start(S), sliceA, endB, okB], 'ended'],
      ['end 200, every file uploaded', [rec.start(S), sliceA, okA, endB, okB], 'completed'],
      ['end 200 without a start, its file uploaded', [endB, okB], 'completed'],
      [
        'end 500, every file uploaded: completed needs the end with code 200',
        [rec.start(S), sliceA, okA, rec.end(S + 90 * MIN, 'B.mp4', 50, failedWith(500, 'x')), okB],
        'failed',
      ],
      [
        'end 500 with a pending file: failed beats ended',
        [rec.start(S), rec.end(S + 90 * MIN, 'B.mp4', 50, failedWith(500, 'x'))],
        'failed',
      ],
      ['failed start only: failed beats recording', [failedStart], 'failed'],
      ['failed start, end 200, file pending', [failedStart, endB], 'failed'],
      ['failed start, end 200, every file uploaded: completed beats failed', [failedStart, endB, okB], 'completed'],
      [
        'a failed end and a later end 200, every file uploaded',
        [rec.start(S), rec.end(S + 89 * MIN, 'B.mp4', 50, failedWith(500, 'x')), endB, okB],
        'completed',
      ],
      [
        'end 200 and a failed upload: upload_failed beats completed',
        [rec.start(S), sliceA, okA, endB, failB],
        'upload_failed',
      ],
      ['no end and a failed upload', [rec.start(S), sliceA, rec.uploadFailed(S + 61 * MIN, 'A.mp4')], 'upload_failed'],
      ['failed start and a failed upload: upload_failed beats failed', [failedStart, failB], 'upload_failed'],
      [
        'a failed upload retried successfully',
        [rec.start(S), endB, failB, rec.uploaded(S + 92 * MIN, 'B.mp4')],
        'completed',
      ],
    ])('recording: %s -> %s', (_case, bodies, status) => {
      expect(recording(...bodies).status).toBe(status);
    });

    const shotFailed = shot.upload(S + 11_000, 'x.jpg', '10002');
    const shotOk = shot.upload(S + 11_000, 'x.jpg', '10000');
    test.each<[string, Body[], TaskStatus]>([
      ['start only', [shot.start(S)], 'capturing'],
      ['start and uploaded images', [shot.start(S), shotOk, shot.upload(S + 21_000, 'y.jpg', '10000')], 'capturing'],
      ['start, images uploaded, end 200', [shot.start(S), shotOk, shot.end(S + 30_000)], 'completed'],
      ['start and end 200, no image', [shot.start(S), shot.end(S + 30_000)], 'completed'],
      [
        'an image whose latest upload failed, end 200',
        [shot.start(S), shotFailed, shot.end(S + 30_000)],
        'upload_failed',
      ],
      ['an image whose upload failed, no end', [shot.start(S), shotFailed], 'upload_failed'],
      ['failed start', [shot.start(S, failedWith(400, 'bad'))], 'failed'],
      ['end 500', [shot.start(S), shot.end(S + 30_000, failedWith(500, 'x'))], 'failed'],
      [
        'failed start and end 200: completed beats failed',
        [shot.start(S, failedWith(400, 'bad')), shot.end(S + 30_000)],
        'completed',
      ],
      [
        'failed start and a failed image: upload_failed beats failed',
        [shot.start(S, failedWith(400, 'bad')), shotFailed],
        'upload_failed',
      ],
    ])('screenshot: %s -> %s', (_case, bodies, status) => {
      expect(screenshot(...bodies).status).toBe(status);
    });
  });

  // --- rule: lastError -----------------------------------------------------------------------------

  describe('lastError: the latest callback whose code is not 200', () => {
    test('is null when every callback carried 200', () => {
      expect(recording(rec.start(T0), rec.end(T0 + 5, 'B.mp4', 1), rec.uploaded(T0 + 6, 'B.mp4')).lastError).toBeNull();
    });

    test('is the latest by timestamp, whatever the arrival order, and a later success does not clear it', () => {
      const task = recording(
        rec.uploadFailed(T0 + 300, 'A.mp4', 503, 'storage down'),
        rec.start(T0, failedWith(1004, 'room not found')),
        rec.uploaded(T0 + 400, 'A.mp4'),
        rec.slice(T0 + 200, 'A.mp4', 1, failedWith(502, 'slice problem')),
        rec.end(T0 + 100, 'B.mp4', 1, failedWith(500, 'end problem')),
      );
      expect(task.lastError).toStrictEqual({ type: 4, code: 503, message: 'storage down', at: T0 + 300 });
    });

    test('any type counts: a failed start, slice or end', () => {
      expect(
        recording(rec.start(T0, failedWith(1004, 'room not found')), rec.end(T0 - 1, 'B.mp4', 1)).lastError,
      ).toStrictEqual({ type: 1, code: 1004, message: 'room not found', at: T0 });
      expect(
        recording(rec.start(T0), rec.slice(T0 + 1, 'A.mp4', 1, failedWith(502, 'slice problem'))).lastError,
      ).toStrictEqual({ type: 2, code: 502, message: 'slice problem', at: T0 + 1 });
      expect(screenshot(shot.start(T0), shot.end(T0 + 1, failedWith(500, 'end problem'))).lastError).toStrictEqual({
        type: 3,
        code: 500,
        message: 'end problem',
        at: T0 + 1,
      });
    });

    test('screenshot: a failed upload carries its fileState code', () => {
      expect(
        screenshot(shot.upload(T0 + 1, 'x.jpg', '10002'), shot.upload(T0 + 2, 'x.jpg', '10000')).lastError,
      ).toStrictEqual({ type: 4, code: 10002, message: 'state 10002', at: T0 + 1 });
    });
  });

  // --- rule: eventCount ----------------------------------------------------------------------------

  test('eventCount counts distinct callbacks, not deliveries', () => {
    const bodies = [
      rec.start(T0),
      rec.slice(T0 + 1, 'A.mp4', 1),
      rec.uploadFailed(T0 + 2, 'A.mp4'),
      rec.uploaded(T0 + 3, 'A.mp4'),
    ];
    expect(recording(...bodies).eventCount).toBe(4);
    expect(
      recording(...bodies, structuredClone(bodies[0]!), reversedKeys(bodies[2]!), bodies[3]!, bodies[3]!).eventCount,
    ).toBe(4);
    expect(recording(...bodies.slice(0, 2)).eventCount).toBe(2);
  });

  // --- mode, identity, times -----------------------------------------------------------------------

  test.each([
    [0, 'single-audio-video'],
    [1, 'single-video'],
    [2, 'single-audio'],
    [3, 'mix-audio-video'],
    [4, 'mix-video'],
    [5, 'mix-audio'],
    [6, 'single-user-mix-audio-video'],
  ])('mode %i is named %s', (mode, name) => {
    const task = recording(rec.start(T0, { mode }));
    expect(task.mode).toBe(mode);
    expect(task.modeName).toBe(name);
  });

  test('a recording without a mode has mode and modeName null', () => {
    const { mode: _, ...noMode } = rec.slice(T0, 'A.mp4', 1);
    expect(recording(noMode)).toMatchObject({ mode: null, modeName: null, startFileName: null });
  });

  test('identity and config come from the start, even when another callback is earlier', () => {
    const early = rec.slice(T0 - 1, 'A.mp4', 1, { roomId: 'other-room', mode: 0, userId: 'u', extra: 'other' });
    const task = recording(early, rec.start(T0, { mode: 4 }));
    expect(task).toMatchObject({
      roomId: 'room-1',
      mode: 4,
      modeName: 'mix-video',
      userId: null,
      extra: 'x',
      config: { trigger: 1, slicesMin: 60 },
    });
  });

  test('without a start, identity comes from the earliest callback and config from the screenshot end', () => {
    const task = screenshot(
      shot.upload(T0 + 5, 'x.jpg', '10000', { roomId: 'later-room' }),
      shot.end(T0 + 1, { config: { ...shotConfig, slicesSec: '30' } }),
    );
    expect(task).toMatchObject({
      roomId: 'room-1',
      config: { ...shotConfig, slicesSec: 30 },
      startedAt: null,
      endedAt: T0 + 1,
    });
  });

  test('startedAt and endedAt are the earliest start and end, updatedAt the latest callback', () => {
    const task = recording(
      rec.start(T0 + 10),
      rec.start(T0 + 5, { extra: 'retry' }),
      rec.end(T0 + 100, 'B.mp4', 1),
      rec.end(T0 + 90, 'B.mp4', 2),
      rec.uploaded(T0 + 500, 'B.mp4'),
    );
    expect(task).toMatchObject({ startedAt: T0 + 5, endedAt: T0 + 90, updatedAt: T0 + 500 });
  });
});
