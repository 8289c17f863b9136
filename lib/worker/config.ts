// The worker's settings from the environment and the dependencies built from them, once per container.
// Every value is checked here, at load: a bad one stops the function with one sentence (in the log and as
// the init error) rather than writing wrong items, such as a NaN expiry on every raw callback.
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { functionClient } from '../aws/clients.ts';
import { DEFAULT_RAW_EVENT_TTL_DAYS } from '../aws/dynamo/table.ts';
import { DynamoTaskWriter } from '../aws/dynamo/task-writer.ts';
import { eventPublisherFromEnv } from '../aws/sns/task-events.ts';
import { createLogger, type Logger } from '../log.ts';
import type { WorkerDeps } from './process-batch.ts';

export interface WorkerSettings {
  /** TASKS_TABLE: the tasks table (required). */
  tableName: string;
  /** RAW_EVENT_TTL_DAYS: days a raw callback is kept before DynamoDB's TTL deletes it. */
  rawEventTtlDays: number;
  /** WORKER_RECORD_CONCURRENCY: records of one batch applied at the same time. */
  recordConcurrency: number;
}

export const workerDefaults = {
  rawEventTtlDays: DEFAULT_RAW_EVENT_TTL_DAYS,
  /** Tasks of one batch in flight at once: enough to overlap DynamoDB round trips, few enough not to throttle. */
  recordConcurrency: 5,
} as const;

type Env = Record<string, string | undefined>;

export class WorkerConfigError extends Error {
  override name = 'WorkerConfigError';
}

function wholeNumber(env: Env, name: string, fallback: number, what: string): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw);
  if (Number.isSafeInteger(value) && value >= 1) return value;
  throw new WorkerConfigError(`${name}=${JSON.stringify(raw)} is not ${what}: the worker does not start.`);
}

/** The settings, or a WorkerConfigError whose message is one sentence naming the variable. */
export function readWorkerSettings(env: Env): WorkerSettings {
  const tableName = env.TASKS_TABLE?.trim();
  if (!tableName) throw new WorkerConfigError('TASKS_TABLE is not set: the worker does not start.');
  return {
    tableName,
    rawEventTtlDays: wholeNumber(env, 'RAW_EVENT_TTL_DAYS', workerDefaults.rawEventTtlDays, 'a whole number of days'),
    recordConcurrency: wholeNumber(
      env,
      'WORKER_RECORD_CONCURRENCY',
      workerDefaults.recordConcurrency,
      'a whole number of records, at least 1',
    ),
  };
}

/**
 * The store, logger and concurrency of the handler, built once at module load. Throws on a bad setting
 * (the function then fails to start), after logging the same sentence.
 */
export function buildWorkerDependencies(env: Env = process.env, logger: Logger = createLogger('worker')): WorkerDeps {
  let settings: WorkerSettings;
  try {
    settings = readWorkerSettings(env);
  } catch (err) {
    logger.error('worker_config', { error: (err as Error).message });
    throw err;
  }
  // Short per-call time-outs: a stuck call fails that record (retried later through SQS) instead of
  // holding the whole batch until the function's 30 s time-out.
  const timeouts = { connectionTimeout: 1000, requestTimeout: 5000, throwOnRequestTimeout: true };
  const client = functionClient(new DynamoDBClient({ maxAttempts: 3, requestHandler: timeouts }));
  const store = new DynamoTaskWriter({
    client,
    tableName: settings.tableName,
    rawEventTtlDays: settings.rawEventTtlDays,
  });
  // TASK_EVENTS_TOPIC_ARN: where task events go; unset, none are published.
  const events = eventPublisherFromEnv(env, timeouts);
  return { store, log: logger, concurrency: settings.recordConcurrency, ...(events ? { events } : {}) };
}
