// The verifier's settings from the environment and what it builds from them, once per container. Every value is
// checked at load, the storage settings whole (lib/config/storage-settings.ts): a bad one stops the function with
// one sentence naming the variable (and, for STORAGE_SETTINGS, the appKey and field).
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { type ClientSettings, clientConfigOf, functionClient } from '../aws/clients.ts';
import { TableReader } from '../aws/dynamo/table/table-client.ts';
import { VerifierStore } from '../aws/dynamo/storage/verifier-store.ts';
import { IncidentStore } from '../aws/dynamo/storage/storage-incidents.ts';
import { snsEventPublisher, snsStoragePublisher, topicClient } from '../aws/sns/task-events.ts';
import { StorageChecks } from '../aws/storage/storage-checks.ts';
import { extensionCredentials } from '../aws/storage/storage-credentials.ts';
import { duration, envSchema, positiveWholeNumber, readEnvironment, text } from '../config/read-env.ts';
import { storageSettingsValue } from '../config/storage-settings.ts';
import { createLogger, type Logger, logLevelFrom } from '../log.ts';
import { errorSentence } from '../text.ts';
import type { IncidentDeps } from './incidents.ts';
import type { VerifierDeps } from './verify-batch.ts';

type Env = Readonly<Record<string, string | undefined>>;

/** The verify queue's maxReceiveCount when none is given (the template's). */
const DEFAULT_VERIFY_MAX_RECEIVE_COUNT = 5;

/** The verifier's environment. */
export const verifierEnvironment = envSchema('verifier', {
  TASKS_TABLE: { value: text, invalid: 'refuse' },
  /** Where `file.missing` goes; unset, nothing is published. */
  TASK_EVENTS_TOPIC_ARN: { value: text, default: '', invalid: 'refuse' },
  /** How each appKey's storage is reached; unset, every file is unverifiable (no setting). */
  STORAGE_SETTINGS: { value: storageSettingsValue, default: {}, invalid: 'refuse' },
  /** The longest one check of a storage may take. */
  VERIFY_TIMEOUT: { value: duration('a duration such as 5s or 1500ms'), default: 5000, invalid: 'refuse' },
  /** The verify queue's maxReceiveCount: at the last receive a silent storage makes the file unverifiable. */
  VERIFY_MAX_RECEIVE_COUNT: {
    value: positiveWholeNumber('a whole number of receives, at least 1'),
    default: DEFAULT_VERIFY_MAX_RECEIVE_COUNT,
    invalid: 'refuse',
  },
  /** The Parameters and Secrets extension, which reads the access keys of S3-compatible storages. */
  PARAMETERS_SECRETS_EXTENSION_HTTP_PORT: {
    value: positiveWholeNumber('a port number'),
    default: 2773,
    invalid: 'refuse',
  },
  /** The function's session token, which the extension requires on every request. */
  AWS_SESSION_TOKEN: { value: text, default: '', invalid: 'fall back' },
});

/** How long access keys read from Parameter Store or Secrets Manager are used before they are read again. */
const CREDENTIALS_REFRESH_MS = 300_000;

/** The verifier's dependencies, built once at module load. Throws on a bad setting, after logging it. */
export function buildVerifierDependencies(
  env: Env,
  log: Logger = createLogger('verifier', logLevelFrom(env)),
  clients: ClientSettings = {},
): VerifierDeps & IncidentDeps & { storage: StorageChecks } {
  let settings: ReturnType<typeof readEnvironment<typeof verifierEnvironment.variables>>['settings'];
  try {
    settings = readEnvironment(verifierEnvironment, env).settings;
  } catch (err) {
    log.error('verifier_config', { error: errorSentence(err, { bare: true, max: Number.POSITIVE_INFINITY }) });
    throw err;
  }
  const timeouts = { connectionTimeout: 1000, requestTimeout: 5000, throwOnRequestTimeout: true };
  const dynamo = functionClient(
    new DynamoDBClient({ ...clientConfigOf('dynamodb', clients), maxAttempts: 3, requestHandler: timeouts }),
  );
  const topic = settings.TASK_EVENTS_TOPIC_ARN;
  const sns = topic ? topicClient({ ...clientConfigOf('sns', clients), requestHandler: timeouts }) : null;
  const storage = new StorageChecks(settings.STORAGE_SETTINGS, {
    timeoutMs: settings.VERIFY_TIMEOUT,
    clients,
    credentials: extensionCredentials({
      port: settings.PARAMETERS_SECRETS_EXTENSION_HTTP_PORT,
      sessionToken: () => settings.AWS_SESSION_TOKEN || undefined,
      refreshMs: CREDENTIALS_REFRESH_MS,
      timeoutMs: 1000,
      now: Date.now,
    }),
  });
  log.info('storage_settings', {
    appKeys: Object.keys(settings.STORAGE_SETTINGS).length,
    storages: [...new Set(Object.keys(settings.STORAGE_SETTINGS).map((a) => storage.storageOf(a) ?? 'http'))],
  });
  const table = new TableReader(dynamo, settings.TASKS_TABLE);
  return {
    store: new VerifierStore(table),
    incidents: new IncidentStore(table),
    storage,
    log,
    maxReceiveCount: settings.VERIFY_MAX_RECEIVE_COUNT,
    ...(sns ? { events: snsEventPublisher(sns, topic), storageEvents: snsStoragePublisher(sns, topic) } : {}),
  };
}
