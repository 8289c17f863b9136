// The worker's settings from the environment and the dependencies built from them, once per container.
// Every value is checked here, at load: a bad one stops the function with one sentence (in the log and as
// the init error) rather than writing wrong items, such as a NaN expiry on every raw callback.
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { FirehoseClient } from '@aws-sdk/client-firehose';
import { firehoseArchive } from '../aws/firehose/archive-stream.ts';
import { MANY_CALLS, type ClientSettings, clientConfigOf, functionClient } from '../aws/clients.ts';
import { DEFAULT_RAW_EVENT_TTL_DAYS } from '../aws/dynamo/table/table.ts';
import { DynamoTaskWriter } from '../aws/dynamo/write/task-writer.ts';
import { DynamoMessageNotes } from '../aws/dynamo/write/message-notes.ts';
import { eventPublisherTo } from '../aws/sns/task-events.ts';
import { envSchema, positiveWholeNumber, readEnvironment, text } from '../config/read-env.ts';
import { createLogger, type Logger, logLevelFrom } from '../log.ts';
import { DEFAULT_MAX_RECEIVE_COUNT, DEFAULT_RECORD_CONCURRENCY, type WorkerDeps } from './deps.ts';
import { errorSentence } from '../text.ts';
import { timeSettingsOf, timeVariables } from '../config/time-settings.ts';
import type { TimeSettings } from '../domain/deadlines.ts';

export interface WorkerSettings {
  /** TASKS_TABLE: the tasks table (required). */
  tableName: string;
  /** RAW_EVENT_TTL_DAYS: days a raw callback is kept before DynamoDB's TTL deletes it. */
  rawEventTtlDays: number;
  /** WORKER_RECORD_CONCURRENCY: records of one batch applied at the same time. */
  recordConcurrency: number;
  /** TASK_EVENTS_TOPIC_ARN: where task events go; empty when unset (no events). */
  eventsTopicArn: string;
  /** SETTLE_AFTER, PURGE_WARNING_BEFORE, STALL_*: the facts of time's durations. */
  time: TimeSettings;
  /** QUEUE_MAX_RECEIVE_COUNT: the callback queue's maxReceiveCount. */
  maxReceiveCount: number;
  /** ARCHIVE_STREAM: the Data Firehose stream every stored callback is archived to; empty when unset (none). */
  archiveStream: string;
}

export const workerDefaults = {
  rawEventTtlDays: DEFAULT_RAW_EVENT_TTL_DAYS,
  recordConcurrency: DEFAULT_RECORD_CONCURRENCY,
} as const;

type Env = Readonly<Record<string, string | undefined>>;

/** The worker's environment: every value checked at load, a bad one stopping the function. */
export const workerEnvironment = envSchema('worker', {
  TASKS_TABLE: { value: text, invalid: 'refuse' },
  RAW_EVENT_TTL_DAYS: {
    value: positiveWholeNumber('a whole number of days'),
    default: workerDefaults.rawEventTtlDays,
    invalid: 'refuse',
  },
  WORKER_RECORD_CONCURRENCY: {
    value: positiveWholeNumber('a whole number of records, at least 1'),
    default: workerDefaults.recordConcurrency,
    invalid: 'refuse',
  },
  /** Where task events go; unset, none are published. */
  TASK_EVENTS_TOPIC_ARN: { value: text, default: '', invalid: 'refuse' },
  /** The archive's Data Firehose stream (infra/archive.yml); unset, nothing is archived. */
  ARCHIVE_STREAM: { value: text, default: '', invalid: 'refuse' },
  /** The callback queue's maxReceiveCount: a record failing at its last receive goes to the dead-letter queue. */
  QUEUE_MAX_RECEIVE_COUNT: {
    value: positiveWholeNumber('a whole number of receives, at least 1'),
    default: DEFAULT_MAX_RECEIVE_COUNT,
    invalid: 'refuse',
  },
  // A new task's arm and a settle's move (docs/task-store.md, Deadlines): the sweeper's durations.
  ...timeVariables,
});

/** The settings, or a ConfigError whose message is one sentence naming the variable. */
export function readWorkerSettings(env: Env): WorkerSettings {
  const { settings } = readEnvironment(workerEnvironment, env);
  return {
    tableName: settings.TASKS_TABLE,
    rawEventTtlDays: settings.RAW_EVENT_TTL_DAYS,
    recordConcurrency: settings.WORKER_RECORD_CONCURRENCY,
    eventsTopicArn: settings.TASK_EVENTS_TOPIC_ARN,
    time: timeSettingsOf(settings),
    maxReceiveCount: settings.QUEUE_MAX_RECEIVE_COUNT,
    archiveStream: settings.ARCHIVE_STREAM,
  };
}

/**
 * Short per-call time-outs: a stuck call fails that record (retried later through SQS) instead of holding the
 * whole batch until the function's 30 s time-out.
 */
const CALL_TIMEOUTS = { connectionTimeout: 1000, requestTimeout: 5000, throwOnRequestTimeout: true };

/** The worker's DynamoDB client (the bench measures the worker with the very same). */
export function workerDynamoClient(clients: ClientSettings = {}): DynamoDBClient {
  return functionClient(
    new DynamoDBClient({
      ...clientConfigOf('dynamodb', clients),
      ...MANY_CALLS,
      maxAttempts: 3,
      requestHandler: CALL_TIMEOUTS,
    }),
  );
}

/**
 * The store, logger and concurrency of the handler, built once at module load. Throws on a bad setting
 * (the function then fails to start), after logging the same sentence.
 */
export function buildWorkerDependencies(
  env: Env,
  logger: Logger = createLogger('worker', logLevelFrom(env)),
  clients: ClientSettings = {},
): WorkerDeps {
  let settings: WorkerSettings;
  try {
    settings = readWorkerSettings(env);
  } catch (err) {
    logger.error('worker_config', { error: errorSentence(err, { bare: true, max: Number.POSITIVE_INFINITY }) });
    throw err;
  }
  const client = workerDynamoClient(clients);
  const store = new DynamoTaskWriter({
    client,
    tableName: settings.tableName,
    rawEventTtlDays: settings.rawEventTtlDays,
    time: settings.time,
  });
  const events = eventPublisherTo(settings.eventsTopicArn, {
    ...clientConfigOf('sns', clients),
    requestHandler: CALL_TIMEOUTS,
  });
  const archive = settings.archiveStream
    ? firehoseArchive(
        functionClient(new FirehoseClient({ ...clientConfigOf('firehose', clients), requestHandler: CALL_TIMEOUTS })),
        settings.archiveStream,
      )
    : undefined;
  return {
    store,
    notes: new DynamoMessageNotes(client, settings.tableName),
    log: logger,
    ...(archive ? { archive } : {}),
    concurrency: settings.recordConcurrency,
    maxReceiveCount: settings.maxReceiveCount,
    time: settings.time,
    ...(events ? { events } : {}),
  };
}
