import { ConfigError } from '../config/read-env.ts';
import type { Logger } from '../log.ts';
import { buildIngestDependencies, MAX_BODY_BYTES_LIMIT, modeOffRefused, readIngestSettings } from './config.ts';

const silent: Logger = { debug() {}, info() {}, warn() {}, error() {} };

describe('readIngestSettings', () => {
  test('defaults: enforce, 300 s, 64 KiB', () => {
    const { settings, warnings } = readIngestSettings({
      QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/1/q',
      TASKS_TABLE: 'tasks',
    });
    expect(settings).toEqual({
      queueUrl: 'https://sqs.eu-west-1.amazonaws.com/1/q',
      mode: 'enforce',
      development: false,
      toleranceS: 300,
      maxBodyBytes: 65_536,
      sqsDeadlineMs: 3000,
      allowedSources: null,
      tableName: 'tasks',
      rawEventTtlDays: 7,
      claimDeadlineMs: 1000,
    });
    expect(warnings).toEqual([]);
  });

  test('ALLOWED_SOURCE_CIDRS becomes the allow-list; a malformed range stops the load with one sentence', () => {
    const { settings } = readIngestSettings({ QUEUE_URL: 'q', ALLOWED_SOURCE_CIDRS: '192.0.2.0/24, 2001:db8::/32' });
    expect(settings.allowedSources?.ranges).toEqual(['192.0.2.0/24', '2001:db8::/32']);
    expect(() => readIngestSettings({ QUEUE_URL: 'q', ALLOWED_SOURCE_CIDRS: '192.0.2.0/24,10.0.0.0/40' })).toThrow(
      'ALLOWED_SOURCE_CIDRS: "10.0.0.0/40" has a prefix length outside 0 to 32 ' +
        '(such as 203.0.113.0/24 or 2001:db8::/32).',
    );
  });

  test('values from the environment', () => {
    const { settings } = readIngestSettings({
      QUEUE_URL: 'q',
      SIGNATURE_MODE: ' Report ',
      SIGNATURE_TOLERANCE_S: '60',
      MAX_BODY_BYTES: '1024',
    });
    expect(settings).toMatchObject({ mode: 'report', toleranceS: 60, maxBodyBytes: 1024 });
    expect(readIngestSettings({ QUEUE_URL: 'q', SIGNATURE_MODE: 'off' }).settings.mode).toBe('off');
    expect(readIngestSettings({ DEVELOPMENT_STAGE: ' True ' }).settings.development).toBe(true);
    expect(readIngestSettings({ DEVELOPMENT_STAGE: 'false' }).settings.development).toBe(false);
  });

  test('DEVELOPMENT_STAGE other than true or false: not development, with a warning', () => {
    const { settings, warnings } = readIngestSettings({ QUEUE_URL: 'q', TASKS_TABLE: 't', DEVELOPMENT_STAGE: 'yes' });
    expect(settings.development).toBe(false);
    expect(warnings).toEqual([expect.stringContaining('DEVELOPMENT_STAGE="yes"')]);
  });

  test('bad values fall back to the defaults with a warning; a bad mode falls back to enforce', () => {
    const { settings, warnings } = readIngestSettings({
      QUEUE_URL: 'q',
      TASKS_TABLE: 't',
      SIGNATURE_MODE: 'lenient',
      SIGNATURE_TOLERANCE_S: '-5',
      MAX_BODY_BYTES: '64k',
      RAW_EVENT_TTL_DAYS: '1.5',
    });
    expect(settings).toMatchObject({ mode: 'enforce', toleranceS: 300, maxBodyBytes: 65_536, rawEventTtlDays: 7 });
    expect(warnings).toHaveLength(4);
    expect(warnings.join(' ')).toMatch(/SIGNATURE_MODE.*SIGNATURE_TOLERANCE_S.*MAX_BODY_BYTES.*RAW_EVENT_TTL_DAYS/);
  });

  test('MAX_BODY_BYTES above the largest storable body stops the load with one sentence; up to it, it is used', () => {
    expect(readIngestSettings({ QUEUE_URL: 'q', MAX_BODY_BYTES: String(MAX_BODY_BYTES_LIMIT) }).settings).toMatchObject(
      { maxBodyBytes: MAX_BODY_BYTES_LIMIT },
    );
    for (const raw of [String(MAX_BODY_BYTES_LIMIT + 1), '143360', '262144', ' 1048576 ']) {
      expect(() => readIngestSettings({ QUEUE_URL: 'q', MAX_BODY_BYTES: raw })).toThrow(
        new ConfigError(
          'ingest',
          `MAX_BODY_BYTES=${JSON.stringify(raw)} is above ${MAX_BODY_BYTES_LIMIT}, the largest body whose copies ` +
            'fit an SQS message and a DynamoDB item: the ingest does not start.',
        ),
      );
    }
  });

  test('a missing QUEUE_URL or TASKS_TABLE is a warning, not a crash', () => {
    const { settings, warnings } = readIngestSettings({});
    expect(settings.queueUrl).toBe('');
    expect(settings.tableName).toBe('');
    expect(warnings).toEqual([expect.stringContaining('QUEUE_URL'), expect.stringContaining('TASKS_TABLE')]);
  });
});

describe('buildIngestDependencies', () => {
  test('signature mode off on a stage not marked as development stops the function at load, in one sentence', () => {
    const errors: unknown[] = [];
    const logger = { ...silent, error: (_e: string, f?: Record<string, unknown>) => void errors.push(f?.error) };
    for (const development of [undefined, 'false', 'yes', '']) {
      const env = {
        QUEUE_URL: 'q',
        SIGNATURE_MODE: 'OFF',
        ...(development === undefined ? {} : { DEVELOPMENT_STAGE: development }),
      };
      expect(() => buildIngestDependencies(env, { logger })).toThrow(modeOffRefused);
    }
    expect(errors).toEqual(Array(4).fill(modeOffRefused));
    expect(modeOffRefused).toMatch(
      /^SIGNATURE_MODE is off, [^.]*development only[^.]*DEVELOPMENT_STAGE=true\)[^.]*\.$/,
    );
    // Asked for through the overrides, the same.
    expect(() => buildIngestDependencies({ QUEUE_URL: 'q' }, { logger, settings: { mode: 'off' } as never })).toThrow(
      /development only/,
    );
  });

  test('a body limit above the largest storable body is logged, then thrown: the function does not start', () => {
    const errors: unknown[] = [];
    const logger = { ...silent, error: (_e: string, f?: Record<string, unknown>) => void errors.push(f?.error) };
    expect(() => buildIngestDependencies({ QUEUE_URL: 'q', MAX_BODY_BYTES: '262144' }, { logger })).toThrow();
    expect(errors).toEqual([expect.stringMatching(/^MAX_BODY_BYTES="262144" is above \d+, .*does not start\.$/)]);
  });

  test('mode off on a development stage, and every other mode anywhere, start', () => {
    const started = [
      buildIngestDependencies({ QUEUE_URL: 'q', SIGNATURE_MODE: 'off', DEVELOPMENT_STAGE: 'true' }, { logger: silent }),
      buildIngestDependencies({ QUEUE_URL: 'q', SIGNATURE_MODE: 'report' }, { logger: silent }),
      buildIngestDependencies(
        { QUEUE_URL: 'q', SIGNATURE_MODE: 'enforce', DEVELOPMENT_STAGE: 'false' },
        { logger: silent },
      ),
    ];
    expect(started.map((d) => d.settings.mode)).toEqual(['off', 'report', 'enforce']);
    for (const d of started) d.sqs.destroy();
  });

  test('CALLBACK_SECRETS is read locally', async () => {
    const deps = buildIngestDependencies({ QUEUE_URL: 'q', CALLBACK_SECRETS: '{"a":["s"]}' }, { logger: silent });
    expect(deps.secrets.source).toBe('CALLBACK_SECRETS');
    expect((await deps.secrets.get()).get('a')).toEqual(['s']);
    deps.sqs.destroy();
  });

  test('CALLBACK_SECRETS_PARAM wins and names the parameter, never a value', () => {
    const deps = buildIngestDependencies(
      { QUEUE_URL: 'q', CALLBACK_SECRETS: '{"a":["s"]}', CALLBACK_SECRETS_PARAM: '/p' },
      { logger: silent },
    );
    expect(deps.secrets.source).toBe('SSM parameter /p');
    deps.sqs.destroy();
  });

  test('no secrets at all: a warning, and every appKey unknown', async () => {
    const warnings: unknown[] = [];
    const logger = {
      ...silent,
      warn: (_e: string, f?: Record<string, unknown>) => {
        warnings.push(f?.warning);
      },
    };
    const deps = buildIngestDependencies({ QUEUE_URL: 'q', TASKS_TABLE: 't' }, { logger });
    expect(warnings).toEqual([expect.stringContaining('CALLBACK_SECRETS')]);
    expect((await deps.secrets.get()).size).toBe(0);
    deps.sqs.destroy();
  });

  test('an allow-list set but empty or separators only stops the function at load, not admitting everyone', () => {
    const errors: unknown[] = [];
    const logger = { ...silent, error: (_e: string, f?: Record<string, unknown>) => void errors.push(f?.error) };
    for (const text of ['', ',', ' , ']) {
      expect(() => buildIngestDependencies({ QUEUE_URL: 'q', ALLOWED_SOURCE_CIDRS: text }, { logger })).toThrow(
        `ALLOWED_SOURCE_CIDRS is set but names no range (${JSON.stringify(text)}): `,
      );
    }
    expect(errors).toHaveLength(3);
    // Unset: no check, and nothing refused.
    const open = buildIngestDependencies({ QUEUE_URL: 'q' }, { logger: silent });
    expect(open.settings.allowedSources).toBeNull();
    open.sqs.destroy();
  });

  test('::/0 starts, with a warning that it admits no IPv4 source', () => {
    const warnings: unknown[] = [];
    const logger = { ...silent, warn: (_e: string, f?: Record<string, unknown>) => void warnings.push(f?.warning) };
    const deps = buildIngestDependencies(
      { QUEUE_URL: 'q', TASKS_TABLE: 't', ALLOWED_SOURCE_CIDRS: '::/0', CALLBACK_SECRETS: '{}' },
      { logger },
    );
    expect(warnings).toEqual([expect.stringContaining('"::/0" admits IPv6 sources only')]);
    expect(deps.settings.allowedSources?.allows('198.51.100.1')).toBe(false);
    deps.sqs.destroy();
  });

  test('a malformed allow-list is logged as an error, then thrown: the function does not load', () => {
    const errors: unknown[] = [];
    const logger = { ...silent, error: (_e: string, f?: Record<string, unknown>) => void errors.push(f?.error) };
    expect(() => buildIngestDependencies({ QUEUE_URL: 'q', ALLOWED_SOURCE_CIDRS: 'not-an-ip' }, { logger })).toThrow(
      /not an IPv4 or IPv6 range/,
    );
    expect(errors).toEqual([expect.stringContaining('"not-an-ip" is not an IPv4 or IPv6 range')]);
  });

  test('AWS_ENDPOINT_URL_SQS becomes the client endpoint (emulators)', async () => {
    const deps = buildIngestDependencies(
      { QUEUE_URL: 'q', AWS_ENDPOINT_URL_SQS: 'http://127.0.0.1:9324', AWS_REGION: 'us-east-1' },
      { logger: silent },
    );
    const endpoint = await deps.sqs.config.endpoint?.();
    expect(endpoint?.hostname).toBe('127.0.0.1');
    expect(endpoint?.port).toBe(9324);
    deps.sqs.destroy();
  });
});
