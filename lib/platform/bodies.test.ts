// The platform's description against the platform's own sample bodies (test/fixtures/, kept byte for byte):
// each sample is rebuilt from its field values with the body builders, the file-name patterns and the
// catalogues' sample failures, and must come out as the same text, key order included.
import { readFileSync } from 'node:fs';
import {
  type RecordingTask,
  recordingFileClosed,
  recordingStart,
  recordingUpload,
  type ScreenshotTask,
  screenshotStartOrEnd,
  screenshotUpload,
} from './bodies.ts';
import {
  FILE_STATE_OK,
  fileStateCode,
  RECORDING_UPLOAD_FAILURES,
  SCREENSHOT_UPLOAD_FAILURES,
  SUCCESS,
} from './failures.ts';
import { recordingFileName, screenshotFileName } from './file-names.ts';
import { modeName, RECORDING_MODES } from './modes.ts';

const sample = (name: string) =>
  readFileSync(new URL(`../../test/fixtures/${name}.json`, import.meta.url), 'utf8').trim();

const T0 = 1763798400000;
const SESSION = 'sN3kL9xQ2aT7';
const ROOM = 'room-1024';
const mix: RecordingTask = {
  appKey: 'demo-app',
  recordId: '7nQ2f0vB-rec-001',
  roomId: ROOM,
  sessionId: SESSION,
  userId: '',
  mode: 3,
  extra: 'meeting=abc',
};
const mixFile = (timestamp: number) =>
  recordingFileName({ sessionId: SESSION, roomId: ROOM, userId: '', streamTag: '', mode: 3, timestamp, format: 'mp4' });
const shots: ScreenshotTask = {
  appKey: 'demo-app',
  sessionId: SESSION,
  roomId: ROOM,
  imageId: 'img-5c1d9e',
  extra: '',
};
const image = (timestamp: number) =>
  screenshotFileName({ sessionId: SESSION, roomId: ROOM, userId: 'user-alice', streamId: 'stream-01', timestamp });
const shotConfig = { trigger: 1, slicesSec: 10, renderMode: 0, picResolution: '640x360' };

test.each([
  [
    'recording-1-start-mix',
    recordingStart(
      mix,
      T0,
      SUCCESS,
      { trigger: 0, mixLayout: 2, slicesMin: 60, audioFormat: 'aac', videoFormat: 'mp4' },
      { fileName: mixFile(T0), audioSample: 48000, videoResoulation: '1280x720' },
    ),
  ],
  [
    'recording-1-start-single',
    recordingStart(
      { ...mix, recordId: 'Kp4e-rec-002', userId: 'user-alice', mode: 0, extra: '' },
      1763798460000,
      SUCCESS,
      { trigger: '1', slicesMin: '30', audioFormat: 'aac', videoFormat: 'mp4' },
      {
        fileName: recordingFileName({
          sessionId: SESSION,
          roomId: ROOM,
          userId: 'user-alice',
          streamTag: 'screen',
          mode: 0,
          timestamp: 1763798460000,
          format: 'mp4',
        }),
        audioSample: '',
        videoResoulation: '1920x1080',
      },
    ),
  ],
  [
    'recording-2-slice',
    recordingFileClosed(mix, 2, 1763802000000, SUCCESS, { fileName: mixFile(T0), fileSize: 734003200 }),
  ],
  [
    'recording-3-end',
    recordingFileClosed(mix, 3, 1763803800000, SUCCESS, { fileName: mixFile(1763802000000), fileSize: 367001600 }),
  ],
  [
    'recording-4-upload-failed',
    recordingUpload(mix, 1763803810000, RECORDING_UPLOAD_FAILURES[0]!, mixFile(1763802000000)),
  ],
  ['recording-4-upload-ok', recordingUpload(mix, 1763802030000, SUCCESS, mixFile(T0))],
  ['screenshot-1-start', screenshotStartOrEnd(shots, 1, 1763798400500, SUCCESS, shotConfig)],
  [
    'screenshot-3-end',
    screenshotStartOrEnd(shots, 3, 1763798700000, SUCCESS, { ...shotConfig, trigger: '1', slicesSec: '10' }),
  ],
  [
    'screenshot-4-upload-failed',
    screenshotUpload(shots, 1763798421000, image(1763798420000), SCREENSHOT_UPLOAD_FAILURES[0]!),
  ],
  ['screenshot-4-upload-ok', screenshotUpload(shots, 1763798411000, image(1763798410000), null)],
])('%s is rebuilt byte for byte', (name, body) => {
  expect(JSON.stringify(body)).toBe(sample(name));
});

// docs/platform-callbacks.md §2.7, §2.11
test('file names follow the three recording patterns and the screenshot pattern', () => {
  const parts = { sessionId: 'S', roomId: 'R', userId: 'U', streamTag: 'T', timestamp: 1, format: 'aac' };
  const names = RECORDING_MODES.map((m) => recordingFileName({ ...parts, mode: m.mode }));
  expect(names).toEqual([
    'S_R_U_T_1.aac',
    'S_R_U_T_1.aac',
    'S_R_U_T_1.aac',
    'S_R_1.aac',
    'S_R_1.aac',
    'S_R_1.aac',
    'S_R_U_1.aac',
  ]);
  expect(() => recordingFileName({ ...parts, mode: 7 })).toThrow('recording mode 7 is not one of 0..6');
  expect(screenshotFileName({ sessionId: 'S', roomId: 'R', userId: 'U', streamId: 'I', timestamp: 1 })).toBe(
    'S_R_U_I_1.jpg',
  );
});

// docs/platform-callbacks.md §2.2
test('the modes: numbers 0..6, what each records, and no name for an undocumented one', () => {
  expect(RECORDING_MODES.map((m) => [m.mode, m.audio, m.video])).toEqual([
    [0, true, true],
    [1, false, true],
    [2, true, false],
    [3, true, true],
    [4, false, true],
    [5, true, false],
    [6, true, true],
  ]);
  expect([modeName(6), modeName(7), modeName(-1), modeName(1.5), modeName(null)]).toEqual([
    'single-user-mix-audio-video',
    null,
    null,
    null,
    null,
  ]);
});

// docs/platform-callbacks.md §7, rule 2
test('a screenshot upload code follows its fileState', () => {
  expect([fileStateCode(FILE_STATE_OK), fileStateCode('10002'), fileStateCode('10003')]).toEqual([200, 10002, 10003]);
  expect(SCREENSHOT_UPLOAD_FAILURES.every((f) => f.state !== FILE_STATE_OK)).toBe(true);
  expect(RECORDING_UPLOAD_FAILURES.every((f) => f.code !== SUCCESS.code)).toBe(true);
});
