import { readFileSync, readdirSync } from 'node:fs';
import * as v from 'valibot';
import { parseCallback } from './callback.ts';
import type { Callback } from './callback.ts';
import { eventKey } from './canonical.ts';
import { minimalCheck } from './minimal-check.ts';
import { NAME_FIELDS_OF } from './names.ts';
import { RecordingStart } from './schemas.ts';
import type { Service } from '../platform/services.ts';

const fixturesDir = new URL('../../test/fixtures/', import.meta.url);
const fixtureFiles = readdirSync(fixturesDir)
  .filter((f) => f.endsWith('.json'))
  .sort();
const fixture = (file: string): Record<string, unknown> => JSON.parse(readFileSync(new URL(file, fixturesDir), 'utf8'));

function parsed(service: Service, body: unknown): Callback {
  const result = parseCallback(service, body);
  if (!result.ok) throw new Error(`expected ${JSON.stringify(body)} to parse, got: ${result.errors.join('; ')}`);
  return result.callback;
}

function errorsOf(service: Service, body: unknown): string[] {
  const result = parseCallback(service, body);
  if (result.ok) throw new Error(`expected ${JSON.stringify(body)} to be rejected`);
  return result.errors;
}

const SESSION = 'sN3kL9xQ2aT7';
const REC_ID = '7nQ2f0vB-rec-001';
const recCommon = {
  appKey: 'demo-app',
  roomId: 'room-1024',
  sessionId: SESSION,
  userId: null,
  mode: 3,
  extra: 'meeting=abc',
};
const shotCommon = {
  service: 'screenshot' as const,
  id: 'img-5c1d9e',
  appKey: 'demo-app',
  roomId: 'room-1024',
  sessionId: SESSION,
  userId: null,
  mode: null,
  extra: '',
};
const FILE_A = `${SESSION}_room-1024_1763798400000.mp4`;
const FILE_B = `${SESSION}_room-1024_1763802000000.mp4`;
const SHOT_OK = `${SESSION}_room-1024_user-alice_stream-01_1763798410000.jpg`;
const SHOT_FAILED = `${SESSION}_room-1024_user-alice_stream-01_1763798420000.jpg`;

/** Every field of the normalised callback except `key` and `body`, which are checked for all fixtures. */
const expectedByFixture: Record<string, Omit<Callback, 'key' | 'body'>> = {
  'recording-1-start-mix.json': {
    service: 'recording',
    type: 1,
    id: REC_ID,
    timestamp: 1763798400000,
    ...recCommon,
    code: 200,
    message: 'success',
    config: { trigger: 0, mixLayout: 2, slicesMin: 60, audioFormat: 'aac', videoFormat: 'mp4' },
    startFileName: FILE_A,
    file: null,
    upload: null,
  },
  'recording-1-start-single.json': {
    service: 'recording',
    type: 1,
    id: 'Kp4e-rec-002',
    timestamp: 1763798460000,
    appKey: 'demo-app',
    roomId: 'room-1024',
    sessionId: SESSION,
    userId: 'user-alice',
    mode: 0,
    extra: '',
    code: 200,
    message: 'success',
    // "1" and "30" arrive as strings in this sample.
    config: { trigger: 1, slicesMin: 30, audioFormat: 'aac', videoFormat: 'mp4' },
    startFileName: `${SESSION}_room-1024_user-alice_screen_1763798460000.mp4`,
    file: null,
    upload: null,
  },
  'recording-2-slice.json': {
    service: 'recording',
    type: 2,
    id: REC_ID,
    timestamp: 1763802000000,
    ...recCommon,
    code: 200,
    message: 'success',
    config: null,
    startFileName: null,
    file: { fileName: FILE_A, size: 734003200 },
    upload: null,
  },
  'recording-3-end.json': {
    service: 'recording',
    type: 3,
    id: REC_ID,
    timestamp: 1763803800000,
    ...recCommon,
    code: 200,
    message: 'success',
    config: null,
    startFileName: null,
    file: { fileName: FILE_B, size: 367001600 },
    upload: null,
  },
  'recording-4-upload-failed.json': {
    service: 'recording',
    type: 4,
    id: REC_ID,
    timestamp: 1763803810000,
    ...recCommon,
    code: 500,
    message: 'upload to storage failed',
    config: null,
    startFileName: null,
    file: null,
    upload: { fileName: FILE_B, ok: false, code: 500, message: 'upload to storage failed', url: null },
  },
  'recording-4-upload-ok.json': {
    service: 'recording',
    type: 4,
    id: REC_ID,
    timestamp: 1763802030000,
    ...recCommon,
    code: 200,
    message: 'success',
    config: null,
    startFileName: null,
    file: null,
    upload: {
      fileName: FILE_A,
      ok: true,
      code: 200,
      message: 'success',
      url: `https://storage.example.com/recordings/${FILE_A}`,
    },
  },
  'screenshot-1-start.json': {
    ...shotCommon,
    type: 1,
    timestamp: 1763798400500,
    code: 200,
    message: 'success',
    config: { trigger: 1, slicesSec: 10, renderMode: 0, picResolution: '640x360' },
    startFileName: null,
    file: null,
    upload: null,
  },
  'screenshot-3-end.json': {
    ...shotCommon,
    type: 3,
    timestamp: 1763798700000,
    code: 200,
    message: 'success',
    // "1" and "10" arrive as strings in this sample.
    config: { trigger: 1, slicesSec: 10, renderMode: 0, picResolution: '640x360' },
    startFileName: null,
    file: null,
    upload: null,
  },
  'screenshot-4-upload-failed.json': {
    ...shotCommon,
    type: 4,
    timestamp: 1763798421000,
    code: 10002,
    message: 'storage unreachable',
    config: null,
    startFileName: null,
    file: null,
    upload: { fileName: SHOT_FAILED, ok: false, code: 10002, message: 'storage unreachable', url: null },
  },
  'screenshot-4-upload-ok.json': {
    ...shotCommon,
    type: 4,
    timestamp: 1763798411000,
    code: 200,
    message: 'success',
    config: null,
    startFileName: null,
    file: null,
    upload: {
      fileName: SHOT_OK,
      ok: true,
      code: 200,
      message: 'success',
      url: `https://storage.example.com/shots/${SHOT_OK}`,
    },
  },
};

describe('parseCallback on the fixtures', () => {
  test('every fixture has an expectation here', () => {
    expect(fixtureFiles).toEqual(Object.keys(expectedByFixture).sort());
  });

  test.each(fixtureFiles)('%s parses for its service with the expected normalised fields', (file) => {
    const service = file.split('-')[0] as Service;
    const raw = readFileSync(new URL(file, fixturesDir), 'utf8');
    const callback = parsed(service, raw);
    const body = JSON.parse(raw);
    expect(callback).toStrictEqual({ ...expectedByFixture[file], key: eventKey(body), body });
    // An already parsed body gives the same callback.
    expect(parsed(service, body)).toStrictEqual(callback);
  });

  test.each(fixtureFiles)('%s is rejected by the other service', (file) => {
    const service = file.split('-')[0] as Service;
    const body = fixture(file);
    const other: Service = service === 'recording' ? 'screenshot' : 'recording';
    // The task id field differs between the services, so a body never passes for the wrong one.
    expect(parseCallback(other, body).ok).toBe(false);
  });
});

const recording = (over: Record<string, unknown> = {}) => ({ ...fixture('recording-2-slice.json'), ...over });
const recordingStart = (over: Record<string, unknown> = {}) => ({ ...fixture('recording-1-start-mix.json'), ...over });
const recordingUpload = (over: Record<string, unknown> = {}) => ({ ...fixture('recording-4-upload-ok.json'), ...over });
const screenshotUpload = (output: Record<string, unknown>, over: Record<string, unknown> = {}) => ({
  ...fixture('screenshot-4-upload-ok.json'),
  ...over,
  output: { ...(fixture('screenshot-4-upload-ok.json').output as object), ...output },
});

describe('leniency where the platform is inconsistent', () => {
  test('numeric strings become numbers: type, code, timestamp, mode, fileSize', () => {
    const cb = parsed(
      'recording',
      recording({
        type: '2',
        code: '200',
        timestamp: '1763802000000',
        mode: '3',
        output: { fileName: FILE_A, fileSize: '734003200' },
      }),
    );
    expect(cb).toMatchObject({
      type: 2,
      code: 200,
      timestamp: 1763802000000,
      mode: 3,
      file: { fileName: FILE_A, size: 734003200 },
    });
  });

  test('a failure code sent as a string is the number', () => {
    expect(parsed('recording', recordingUpload({ code: '503', errorMessage: 'down' })).upload).toMatchObject({
      ok: false,
      code: 503,
    });
  });

  test('config values that are numeric strings become numbers, other values are kept as received', () => {
    const cb = parsed(
      'recording',
      recordingStart({
        config: {
          trigger: '1',
          slicesMin: ' 30 ',
          ratio: '1.5',
          negative: '-2',
          audioFormat: 'aac',
          layoutName: '3x3',
          flags: [1, '2'],
          on: true,
        },
      }),
    );
    expect(cb.config).toStrictEqual({
      trigger: 1,
      slicesMin: 30,
      ratio: 1.5,
      negative: -2,
      audioFormat: 'aac',
      layoutName: '3x3',
      flags: [1, '2'],
      on: true,
    });
    const shot = parsed('screenshot', {
      ...fixture('screenshot-1-start.json'),
      config: { trigger: '1', slicesSec: '10', renderMode: '0', picResolution: '640x360' },
    });
    expect(shot.config).toStrictEqual({ trigger: 1, slicesSec: 10, renderMode: 0, picResolution: '640x360' });
  });

  test('"" means absent for userId', () => {
    expect(parsed('recording', recording({ userId: '' })).userId).toBeNull();
    expect(parsed('recording', recording({ userId: 'user-alice' })).userId).toBe('user-alice');
    const { userId: _, ...withoutUser } = recording();
    expect(parsed('recording', withoutUser).userId).toBeNull();
  });

  test('"" means absent for audioSample and videoResoulation, and does not fail the parse', () => {
    const body = recordingStart({ output: { fileName: FILE_A, audioSample: '', videoResoulation: '' } });
    expect(parseCallback('recording', body).ok).toBe(true);
    const output = v.parse(RecordingStart, body).output;
    expect(output).toMatchObject({ audioSample: null, videoResoulation: null });
    // Present values are kept; a numeric string sample rate becomes a number.
    expect(
      v.parse(
        RecordingStart,
        recordingStart({ output: { fileName: FILE_A, audioSample: '48000', videoResoulation: '1280x720' } }),
      ).output,
    ).toMatchObject({ audioSample: 48000, videoResoulation: '1280x720' });
    // The single-mode fixture carries audioSample "".
    expect(v.parse(RecordingStart, fixture('recording-1-start-single.json')).output).toMatchObject({
      audioSample: null,
    });
  });

  test('optional fields may be missing', () => {
    const minimal = {
      type: 2,
      appKey: 'demo-app',
      recordId: 'r-1',
      timestamp: 5,
      code: 200,
      output: { fileName: 'f.mp4' },
    };
    expect(parsed('recording', minimal)).toMatchObject({
      roomId: null,
      sessionId: null,
      userId: null,
      mode: null,
      extra: null,
      message: null,
      file: { fileName: 'f.mp4', size: null },
    });
    const start = parsed('recording', { type: 1, appKey: 'demo-app', recordId: 'r-1', timestamp: 5, code: 200 });
    expect(start).toMatchObject({ config: {}, startFileName: null });
    const shot = parsed('screenshot', { type: 1, appKey: 'demo-app', imageId: 'i-1', timestamp: 5, code: 200 });
    expect(shot).toMatchObject({ config: {}, roomId: null });
  });

  test('unknown fields are kept in body, at every level, and do not fail the parse', () => {
    const body = {
      ...recordingStart(),
      region: 'eu-1',
      nested: { deep: [1, { x: null }] },
      config: { ...(recordingStart().config as object), watermark: true },
      output: { ...(recordingStart().output as object), fileMd5: 'abc' },
    };
    const cb = parsed('recording', body);
    expect(cb.body).toStrictEqual(body);
    expect(cb.body).toMatchObject({ region: 'eu-1', nested: { deep: [1, { x: null }] }, output: { fileMd5: 'abc' } });
    expect(cb.config).toMatchObject({ watermark: true });
    expect(cb.key).toBe(eventKey(body));
    const shot = parsed('screenshot', screenshotUpload({ checksum: 'x' }, { tag: 'night', brandNew: 1 }));
    expect(shot.body).toMatchObject({ tag: 'night', brandNew: 1, output: { checksum: 'x' } });
  });
});

describe('screenshot upload: fileState decides', () => {
  test('fileState "10000" is a success with code 200', () => {
    expect(parsed('screenshot', screenshotUpload({ fileState: '10000' })).upload).toMatchObject({
      ok: true,
      code: 200,
    });
  });

  test('fileState 10000 sent as a number is a success too', () => {
    expect(parsed('screenshot', screenshotUpload({ fileState: 10000 })).upload).toMatchObject({ ok: true, code: 200 });
  });

  test.each(['10001', '10002', '10003', '500'])(
    'fileState "%s" is a failure with code = Number(fileState)',
    (state) => {
      const cb = parsed(
        'screenshot',
        screenshotUpload(
          { fileState: state, fileMsg: 'nope', fileUrl: '' },
          { code: Number(state), errorMessage: 'nope' },
        ),
      );
      expect(cb.upload).toStrictEqual({
        fileName: SHOT_OK,
        ok: false,
        code: Number(state),
        message: 'nope',
        url: null,
      });
    },
  );

  test('when the body code contradicts fileState, fileState wins, for the upload and for the callback code', () => {
    const failed = parsed(
      'screenshot',
      screenshotUpload({ fileState: '10003', fileMsg: 'bucket not found' }, { code: 200, errorMessage: 'success' }),
    );
    expect(failed.upload).toMatchObject({ ok: false, code: 10003, message: 'bucket not found' });
    expect(failed).toMatchObject({ code: 10003, message: 'bucket not found' });
    const ok = parsed('screenshot', screenshotUpload({ fileState: '10000', fileMsg: 'success' }, { code: 500 }));
    expect(ok.upload).toMatchObject({ ok: true, code: 200 });
    expect(ok.code).toBe(200);
  });

  test('without fileState the body code decides', () => {
    const { fileState: _, ...output } = fixture('screenshot-4-upload-failed.json').output as Record<string, unknown>;
    const body = { ...fixture('screenshot-4-upload-failed.json'), output };
    expect(parsed('screenshot', body).upload).toMatchObject({ ok: false, code: 10002 });
    expect(parsed('screenshot', { ...body, code: 200 }).upload).toMatchObject({ ok: true, code: 200 });
  });
});

describe('strictness where it matters, with messages naming the field', () => {
  const recStart = recordingStart();
  const shotStart = fixture('screenshot-1-start.json');
  const without = (body: Record<string, unknown>, key: string) => {
    const { [key]: _, ...rest } = body;
    return rest;
  };
  const withOutput = (body: Record<string, unknown>, output: Record<string, unknown>) => ({ ...body, output });

  test.each<[string, string, Service, Record<string, unknown>]>([
    ['type 2 for screenshot', 'type', 'screenshot', { ...shotStart, type: 2 }],
    ['type "2" for screenshot', 'type', 'screenshot', { ...shotStart, type: '2' }],
    ['type 5 for recording', 'type', 'recording', { ...recStart, type: 5 }],
    ['type 0 for recording', 'type', 'recording', { ...recStart, type: 0 }],
    ['type 1.5', 'type', 'recording', { ...recStart, type: 1.5 }],
    ['type "start"', 'type', 'recording', { ...recStart, type: 'start' }],
    ['type null', 'type', 'recording', { ...recStart, type: null }],
    ['type missing', 'type', 'recording', without(recStart, 'type')],
    ['appKey missing', 'appKey', 'recording', without(recStart, 'appKey')],
    ['appKey ""', 'appKey', 'recording', { ...recStart, appKey: '' }],
    ['appKey not a string', 'appKey', 'screenshot', { ...shotStart, appKey: 7 }],
    ['appKey missing (screenshot)', 'appKey', 'screenshot', without(shotStart, 'appKey')],
    ['recordId missing', 'recordId', 'recording', without(recStart, 'recordId')],
    ['recordId ""', 'recordId', 'recording', { ...recStart, recordId: '' }],
    ['recordId missing on an upload', 'recordId', 'recording', without(recordingUpload(), 'recordId')],
    ['imageId missing', 'imageId', 'screenshot', without(shotStart, 'imageId')],
    ['imageId ""', 'imageId', 'screenshot', { ...shotStart, imageId: '' }],
    ['imageId missing, recordId present', 'imageId', 'screenshot', { ...without(shotStart, 'imageId'), recordId: 'r' }],
    ['fileName missing on a slice', 'output.fileName', 'recording', withOutput(recording(), { fileSize: 1 })],
    ['fileName "" on a slice', 'output.fileName', 'recording', withOutput(recording(), { fileName: '', fileSize: 1 })],
    [
      'fileName missing on an end',
      'output.fileName',
      'recording',
      withOutput(fixture('recording-3-end.json'), { fileSize: 1 }),
    ],
    ['fileName missing on an upload', 'output.fileName', 'recording', withOutput(recordingUpload(), { fileUrl: 'u' })],
    ['output missing on an upload', 'output', 'recording', without(recordingUpload(), 'output')],
    [
      'fileName missing on a screenshot upload',
      'output.fileName',
      'screenshot',
      withOutput(fixture('screenshot-4-upload-ok.json'), { fileState: '10000' }),
    ],
    ['timestamp missing', 'timestamp', 'recording', without(recStart, 'timestamp')],
    ['timestamp not numeric', 'timestamp', 'recording', { ...recStart, timestamp: 'yesterday' }],
    ['timestamp fractional', 'timestamp', 'recording', { ...recStart, timestamp: 1763798400000.5 }],
    ['timestamp negative', 'timestamp', 'screenshot', { ...shotStart, timestamp: -1 }],
    ['code not numeric', 'code', 'recording', { ...recStart, code: 'ok' }],
    ['mode out of range', 'mode', 'recording', { ...recStart, mode: 7 }],
    [
      'fileSize not numeric',
      'output.fileSize',
      'recording',
      withOutput(recording(), { fileName: FILE_A, fileSize: 'big' }),
    ],
  ])('%s: rejected naming %s', (_case, field, service, body) => {
    const errors = errorsOf(service, body);
    expect(errors.some((e) => e.startsWith(`${field}: `))).toBe(true);
    // Each message is one readable line: the field, then what is wrong.
    for (const e of errors) expect(e).toMatch(/^[\w.()]+: \S/);
  });

  test('a missing field reads "is missing"', () => {
    expect(errorsOf('recording', without(recStart, 'recordId'))).toContain('recordId: is missing');
    expect(errorsOf('recording', withOutput(recording(), {}))).toContain('output.fileName: is missing');
  });

  test('an array where the body has an object is refused, even where every field of the object is optional', () => {
    const array = 'expected Object, got Array';
    expect(errorsOf('recording', { ...recStart, output: [] })).toEqual([`output: ${array}`]);
    expect(errorsOf('recording', { ...recStart, config: [1] })).toEqual([`config: ${array}`]);
    expect(errorsOf('recording', { ...recording(), output: [] })).toEqual([`output: ${array}`]);
    expect(errorsOf('screenshot', { ...shotStart, config: [] })).toEqual([`config: ${array}`]);
  });

  test('a type not valid for the service names the valid ones', () => {
    expect(errorsOf('screenshot', { ...shotStart, type: 2 })).toEqual([
      'type: must be one of 1, 3, 4 for screenshot callbacks, got 2',
    ]);
  });

  test('every problem of a body is reported, not only the first', () => {
    const errors = errorsOf('recording', { type: 2, appKey: '', timestamp: 1, code: 200, output: {} });
    expect(errors.map((e) => e.split(':')[0]).sort()).toEqual(['appKey', 'output.fileName', 'recordId']);
  });

  test.each([
    ['not json', '{"type":'],
    ['an array', '[1]'],
    ['null', 'null'],
    ['a number', '42'],
  ])('a body that is %s is rejected', (_case, text) => {
    expect(errorsOf('recording', text)[0]).toMatch(/^\(body\): /);
  });
});

describe('agreement with the ingest check, and short messages', () => {
  const upload = JSON.parse(
    readFileSync(new URL('../../test/fixtures/recording-4-upload-ok.json', import.meta.url), 'utf8'),
  );

  test.each(['4', ' 4 ', '4.0'])('type %j, which the ingest accepts, parses as 4', (type) => {
    const result = parseCallback('recording', { ...upload, type });
    expect(result.ok && result.callback.type).toBe(4);
  });

  test.each([
    ['type', { type: 'x'.repeat(60_000) }],
    ['mode', { mode: 'y'.repeat(60_000) }],
    ['output.fileUrl', { output: { fileName: 'a.mp4', fileUrl: { deep: 'z'.repeat(60_000) } } }],
  ])('a huge offending %s is quoted only in part', (field, change) => {
    const errors = errorsOf('recording', JSON.stringify({ ...upload, ...change }));
    expect(errors.join('\n').length).toBeLessThan(400);
    expect(errors[0]!.startsWith(`${field}: `)).toBe(true);
  });
});

describe('names: no control or bidirectional formatting character, at the ingest and in the full parse', () => {
  /** The body with a field set at a dot path (objects on the way made when absent). */
  const withField = (body: Record<string, unknown>, path: string, value: string): Record<string, unknown> => {
    const [head, ...rest] = path.split('.');
    if (rest.length === 0) return { ...body, [head!]: value };
    const inner = (body[head!] ?? {}) as Record<string, unknown>;
    return { ...body, [head!]: withField(inner, rest.join('.'), value) };
  };
  const refused = ['\u0000', '\u0001', '\t', '\n', '\r', '\u001f', '\u007f', '\u0085', '\u009f', '\u202a', '\u202e'];
  const bidiIsolates = ['\u2066', '\u2067', '\u2068', '\u2069'];
  const cases = fixtureFiles.flatMap((file) => {
    const service: Service = file.startsWith('recording') ? 'recording' : 'screenshot';
    return NAME_FIELDS_OF[service].map((field) => [file, service, field] as const);
  });

  test.each(cases)('%s: %s %s holding one is refused by both, naming the field', (file, service, field) => {
    for (const ch of [...refused, ...bidiIsolates]) {
      const body = withField(fixture(file), field, `a${ch}b`);
      const check = minimalCheck(service, body);
      expect(check.ok ? 'accepted' : check.message).toBe(
        `Field "${field}" must not contain control or bidirectional formatting characters.`,
      );
      expect(errorsOf(service, body)[0]).toBe(
        `${field}: must not contain control or bidirectional formatting characters`,
      );
    }
  });

  test.each(cases)('%s: %s %s with other unusual characters is accepted by both', (file, service, field) => {
    for (const text of ['a\u200bb', 'é😀', 'a\u00a0b', '\ufeffa', '名前', 'a\u2028b']) {
      const body = withField(fixture(file), field, text);
      expect(minimalCheck(service, body).ok).toBe(true);
      expect(parseCallback(service, body).ok).toBe(true);
    }
  });
});
