import { readEnvironment } from './read-env.ts';
import { parseStorageSettings, storageNameOf, storageOfAppKey } from './storage-settings.ts';
import { verifierEnvironment } from '../verifier/config.ts';

describe('parseStorageSettings', () => {
  test('an S3 bucket of the stage, an S3-compatible endpoint with its keys, a HEAD of the URL; defaults filled', () => {
    const settings = parseStorageSettings(
      JSON.stringify({
        a: { type: 's3', bucket: 'rec-a', region: 'eu-west-1' },
        b: {
          type: 's3-compatible',
          endpoint: 'https://oss-cn-hangzhou.aliyuncs.com',
          bucket: 'rec-b',
          credentials: { parameter: '/rtc/oss-keys' },
          key: 'file-name',
          prefix: 'recordings/',
        },
        c: { type: 'http', hosts: ['cdn.example.com'], incidentAfter: '1m' },
      }),
    );
    expect(settings).toEqual({
      a: {
        type: 's3',
        bucket: 'rec-a',
        region: 'eu-west-1',
        key: 'url-path',
        prefix: '',
        incidentAfter: 0,
        probe: false,
      },
      b: {
        type: 's3-compatible',
        endpoint: 'https://oss-cn-hangzhou.aliyuncs.com',
        bucket: 'rec-b',
        region: 'us-east-1',
        credentials: { parameter: '/rtc/oss-keys' },
        pathStyle: false,
        key: 'file-name',
        prefix: 'recordings/',
        incidentAfter: 0,
        probe: false,
      },
      c: { type: 'http', hosts: ['cdn.example.com'], incidentAfter: 60_000 },
    });
    expect(storageNameOf(settings.a as never)).toBe('s3://rec-a');
    expect(storageNameOf(settings.b as never)).toBe('s3://oss-cn-hangzhou.aliyuncs.com/rec-b');
    // The storage of an appKey's incidents: its bucket, the one host of an http setting, or the appKey.
    expect(['a', 'b', 'c', 'd'].map((k) => storageOfAppKey(settings, k))).toEqual([
      's3://rec-a',
      's3://oss-cn-hangzhou.aliyuncs.com/rec-b',
      'https://cdn.example.com',
      'appKey d',
    ]);
  });

  test.each([
    ['not JSON', '{', 'is not JSON'],
    ['an array', '[]', 'must be a JSON object of appKey to setting'],
    ['an unknown type', '{"a":{"type":"gcs"}}', 'appKey "a", field type must be s3, s3-compatible or http'],
    ['a bad bucket name', '{"a":{"type":"s3","bucket":"Bad_Bucket"}}', 'appKey "a", field bucket must be an S3 bucket'],
    ['a missing bucket', '{"a":{"type":"s3"}}', 'appKey "a", field bucket is missing'],
    [
      'an unknown field',
      '{"a":{"type":"s3","bucket":"ok-bucket","acl":"x"}}',
      'field acl is not a field of an s3 setting',
    ],
    ['a setting that is no object', '{"a":5}', 'appKey "a" must be a setting'],
    [
      'keys that are not a parameter or a secret',
      '{"a":{"type":"s3-compatible","endpoint":"https://x.example.com","bucket":"bbb","credentials":{"key":"x"}}}',
      'field credentials',
    ],
    [
      'a key source of its own',
      '{"a":{"type":"s3","bucket":"bbb","key":"hash"}}',
      'field key must be url-path or file-name',
    ],
  ])('%s is refused in one sentence saying where', (_what, text, message) => {
    expect(() => parseStorageSettings(text)).toThrow(message);
  });

  test('STORAGE_SETTINGS that does not hold stops the verifier at load, naming the variable, appKey and field', () => {
    expect(() =>
      readEnvironment(verifierEnvironment, { TASKS_TABLE: 't', STORAGE_SETTINGS: '{"a":{"type":"s3"}}' }),
    ).toThrow(
      'STORAGE_SETTINGS="{\\"a\\":{\\"type\\":\\"s3\\"}}" is not valid: appKey "a", field bucket is missing: ' +
        'the verifier does not start.',
    );
    // Unset: every file unverifiable, the function starts.
    expect(readEnvironment(verifierEnvironment, { TASKS_TABLE: 't' }).settings.STORAGE_SETTINGS).toEqual({});
  });
});
