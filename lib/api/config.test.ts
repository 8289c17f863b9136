import { DynamoTaskReader } from '../aws/dynamo/read/read-pages.ts';
import type { Logger } from '../log.ts';
import { readEnvironment } from '../config/read-env.ts';
import { apiEnvironment, buildApiDependencies } from './config.ts';

function recordingLogger(): { logger: Logger; errors: unknown[] } {
  const errors: unknown[] = [];
  const logger: Logger = { debug() {}, info() {}, warn() {}, error: (_e, f) => void errors.push(f?.error) };
  return { logger, errors };
}

describe('buildApiDependencies', () => {
  test('TASKS_TABLE unset or blank: the read API does not start rather than read a table named "tasks"', () => {
    const sentence = 'TASKS_TABLE is not set: the read API does not start.';
    for (const env of [{}, { TASKS_TABLE: '' }, { TASKS_TABLE: '  ' }]) {
      const { logger, errors } = recordingLogger();
      expect(() => buildApiDependencies(env, logger)).toThrow(
        expect.objectContaining({ name: 'ApiConfigError', message: sentence }),
      );
      // The same one sentence reaches the function's log before the init error.
      expect(errors).toEqual([sentence]);
    }
  });

  test('TASKS_TABLE set: a reader of that table, trimmed, and nothing logged as an error', () => {
    expect(readEnvironment(apiEnvironment, { TASKS_TABLE: ' svc-prod-tasks ' }).settings.TASKS_TABLE).toBe(
      'svc-prod-tasks',
    );
    const { logger, errors } = recordingLogger();
    const deps = buildApiDependencies({ TASKS_TABLE: 'svc-prod-tasks', AWS_REGION: 'eu-west-1' }, logger);
    expect(deps.store).toBeInstanceOf(DynamoTaskReader);

    expect(deps.log).toBe(logger);
    expect(errors).toEqual([]);
    // The table's retention of raw callbacks, as the worker's: 7 days unless the stage says otherwise.
    expect(deps.rawRetentionDays).toBe(7);
    expect(buildApiDependencies({ TASKS_TABLE: 't', RAW_EVENT_TTL_DAYS: '30' }, logger).rawRetentionDays).toBe(30);
  });

  test('RAW_EVENT_TTL_DAYS that is no whole number of days: the read API does not start', () => {
    const { logger, errors } = recordingLogger();
    expect(() => buildApiDependencies({ TASKS_TABLE: 't', RAW_EVENT_TTL_DAYS: 'a week' }, logger)).toThrow();
    expect(errors).toEqual(['RAW_EVENT_TTL_DAYS="a week" is not a whole number of days: the read API does not start.']);
  });
});
