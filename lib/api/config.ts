// What the read API's Lambda builds once per container, from its environment: a read-only view of the
// task table (no write path is even bundled) and its logger. The table is required: without it the
// function stops at load with one sentence (in the log and as the init error), rather than answer every
// request from a table it guessed.
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { type ClientSettings, clientConfigOf, functionClient } from '../aws/clients.ts';
import { DynamoTaskReader } from '../aws/dynamo/read/read-pages.ts';
import { openIncidents } from '../aws/dynamo/storage/incident-reads.ts';
import { TableReader } from '../aws/dynamo/table/table-client.ts';
import { DEFAULT_RAW_EVENT_TTL_DAYS } from '../aws/dynamo/table/table.ts';
import { envSchema, positiveWholeNumber, readEnvironment, text } from '../config/read-env.ts';
import { createLogger, type Logger, logLevelFrom } from '../log.ts';
import type { ApiDependencies } from './handle-request.ts';
import { errorSentence } from '../text.ts';

type Env = Readonly<Record<string, string | undefined>>;

/** The read API's environment. */
export const apiEnvironment = envSchema('api', {
  TASKS_TABLE: { value: text, invalid: 'refuse' },
  /** How long the table keeps raw callbacks: a task's older ones are in the archive (`archived` of its events). */
  RAW_EVENT_TTL_DAYS: {
    value: positiveWholeNumber('a whole number of days'),
    default: DEFAULT_RAW_EVENT_TTL_DAYS,
    invalid: 'refuse',
  },
});

/** The environment read; a bad value is logged and thrown. */
function readApiSettings(env: Env, log: Logger) {
  try {
    return readEnvironment(apiEnvironment, env).settings;
  } catch (err) {
    log.error('api_config', { error: errorSentence(err, { bare: true, max: Number.POSITIVE_INFINITY }) });
    throw err;
  }
}

/** Throws on a missing table (the function then fails to start), after logging the same sentence. */
export function buildApiDependencies(
  env: Env,
  log: Logger = createLogger('api', logLevelFrom(env)),
  clients: ClientSettings = {},
): ApiDependencies {
  const settings = readApiSettings(env, log);
  // Short per-call time-outs: a caller waits on the answer, and a stuck call should end in a 503 it can
  // retry well before the function's own time-out.
  const client = functionClient(
    new DynamoDBClient({
      ...clientConfigOf('dynamodb', clients),
      maxAttempts: 3,
      requestHandler: { connectionTimeout: 1000, requestTimeout: 3000, throwOnRequestTimeout: true },
    }),
  );
  const tableName = settings.TASKS_TABLE;
  const table = new TableReader(client, tableName);
  return {
    store: new DynamoTaskReader({ client, tableName, verifications: true }),
    openIncidents: (appKey) => openIncidents(table, appKey),
    log,
    now: Date.now,
    rawRetentionDays: settings.RAW_EVENT_TTL_DAYS,
    // The function's time-out is 10 s (serverless.yml): answer 503 well before Lambda cuts it short.
    deadlineMs: 8000,
  };
}
