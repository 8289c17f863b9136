import { DynamoTaskWriter } from '../aws/dynamo/write/task-writer.ts';
import type { Logger } from '../log.ts';
import { ConfigError } from '../config/read-env.ts';
import { buildWorkerDependencies, readWorkerSettings, workerDefaults, workerDynamoClient } from './config.ts';
import { defaultTimeSettings } from '../domain/deadlines.ts';

describe('readWorkerSettings', () => {
  test('the table, and the defaults for the rest', () => {
    expect(readWorkerSettings({ TASKS_TABLE: ' svc-prod-tasks ' })).toEqual({
      tableName: 'svc-prod-tasks',
      rawEventTtlDays: 7,
      recordConcurrency: 5,
      maxReceiveCount: 5,
      eventsTopicArn: '',
      archiveStream: '',
      time: defaultTimeSettings,
    });
    expect(workerDefaults).toEqual({ rawEventTtlDays: 7, recordConcurrency: 5 });
    // Blank is unset.
    expect(readWorkerSettings({ TASKS_TABLE: 't', RAW_EVENT_TTL_DAYS: ' ' }).rawEventTtlDays).toBe(7);
  });

  test('the durations of the facts of time, as the sweeper reads them', () => {
    expect(readWorkerSettings({ TASKS_TABLE: 't', SETTLE_AFTER: '30s', STALL_MIN: '1h' }).time).toEqual({
      ...defaultTimeSettings,
      settleAfterMs: 30_000,
      stallMinMs: 3_600_000,
    });
    expect(() => readWorkerSettings({ TASKS_TABLE: 't', SETTLE_AFTER: 'soon' })).toThrow(
      'SETTLE_AFTER="soon" is not a duration such as 10m, 2h or 1d: the worker does not start.',
    );
  });

  test('values from the environment', () => {
    expect(readWorkerSettings({ TASKS_TABLE: 't', RAW_EVENT_TTL_DAYS: '30', WORKER_RECORD_CONCURRENCY: '8' })).toEqual({
      tableName: 't',
      rawEventTtlDays: 30,
      recordConcurrency: 8,
      maxReceiveCount: 5,
      eventsTopicArn: '',
      archiveStream: '',
      time: defaultTimeSettings,
    });
  });

  test.each([
    [{ RAW_EVENT_TTL_DAYS: 'ninety' }, 'RAW_EVENT_TTL_DAYS="ninety" is not a whole number of days'],
    [{ RAW_EVENT_TTL_DAYS: '0' }, 'RAW_EVENT_TTL_DAYS="0" is not a whole number of days'],
    [{ RAW_EVENT_TTL_DAYS: '-7' }, 'RAW_EVENT_TTL_DAYS="-7" is not a whole number of days'],
    [{ RAW_EVENT_TTL_DAYS: '1.5' }, 'RAW_EVENT_TTL_DAYS="1.5" is not a whole number of days'],
    [{ RAW_EVENT_TTL_DAYS: '1e400' }, 'RAW_EVENT_TTL_DAYS="1e400" is not a whole number of days'],
    [{ WORKER_RECORD_CONCURRENCY: 'many' }, 'WORKER_RECORD_CONCURRENCY="many" is not a whole number of records'],
    [{ WORKER_RECORD_CONCURRENCY: '0' }, 'WORKER_RECORD_CONCURRENCY="0" is not a whole number of records'],
  ])('%j stops the worker with one sentence naming it', (env, start) => {
    let caught: unknown;
    try {
      readWorkerSettings({ TASKS_TABLE: 't', ...env });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect((caught as Error).name).toBe('WorkerConfigError');
    const message = (caught as Error).message;
    expect(message.startsWith(start)).toBe(true);
    expect(message).toMatch(/^[^\n]*: the worker does not start\.$/);
  });

  test('no TASKS_TABLE: the worker does not start rather than write to a table it guessed', () => {
    for (const env of [{}, { TASKS_TABLE: '  ' }]) {
      expect(() => readWorkerSettings(env)).toThrow(
        new ConfigError('worker', 'TASKS_TABLE is not set: the worker does not start.'),
      );
    }
  });
});

describe('buildWorkerDependencies', () => {
  test('a bad setting is logged, then thrown: the function fails at load, not with NaN expiries', () => {
    const errors: unknown[] = [];
    const logger: Logger = { debug() {}, info() {}, warn() {}, error: (_e, f) => void errors.push(f?.error) };
    expect(() => buildWorkerDependencies({ TASKS_TABLE: 't', RAW_EVENT_TTL_DAYS: 'x' }, logger)).toThrow(
      expect.objectContaining({ name: 'WorkerConfigError' }),
    );
    expect(errors).toEqual(['RAW_EVENT_TTL_DAYS="x" is not a whole number of days: the worker does not start.']);
  });

  test('good settings: the write side of the store on the table, and the concurrency', () => {
    const silent: Logger = { debug() {}, info() {}, warn() {}, error() {} };
    const deps = buildWorkerDependencies(
      { TASKS_TABLE: 'tasks-x', WORKER_RECORD_CONCURRENCY: '3', AWS_REGION: 'eu-west-1' },
      silent,
    );
    expect(deps.concurrency).toBe(3);
    expect(deps.log).toBe(silent);
    expect(deps.store).toBeInstanceOf(DynamoTaskWriter);
    // The settings reach the store.
    expect((deps.store as DynamoTaskWriter).settings).toEqual({ tableName: 'tasks-x', rawEventTtlDays: 7 });
  });
});

test("the worker's DynamoDB client: a command's middleware resolved once, no SDK request logging", () => {
  const client = workerDynamoClient({ region: 'eu-west-1' });
  try {
    expect(client.config.cacheMiddleware).toBe(true);
    expect(client.middlewareStack.identify().some((m) => m.startsWith('loggerMiddleware'))).toBe(false);
  } finally {
    client.destroy();
  }
});
