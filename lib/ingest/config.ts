// The ingest's settings from the environment, and the dependencies built from them once per container.
// A bad value falls back to its default with a warning, a missing queue, table or secret shows up as a 503 with a
// clear code, never as a failed cold start. Three settings are exceptions, each unsafe to run with, so the
// function refuses to load: a source allow-list that is malformed or set but empty (falling back would silently
// open the endpoint to every address), a body limit above what the queue and the table can hold (callbacks would
// be accepted with a 200 and then fail for good), and signature mode off on a stage not marked as development.
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { type ClientSettings, clientConfigOf } from '../aws/clients.ts';
import * as v from 'valibot';
import {
  envSchema,
  positiveWholeNumber,
  readEnvironment,
  refuseStart,
  type SettingsOf,
  StartRefused,
  text,
  trueOrFalse,
} from '../config/read-env.ts';
import { createLogger, logLevelFrom } from '../log.ts';
import type { Logger } from '../log.ts';
import { SIGNATURE_MODES, type SignatureMode, SIGNATURE_MODES_IN_WORDS } from '../signature/verdicts.ts';
import { createSqsClient, sqsLimits } from './enqueue.ts';
import { claimLimits, createClaimClient } from './claim.ts';
import { DEFAULT_RAW_EVENT_TTL_DAYS } from '../aws/dynamo/table/table.ts';
import { AllowListError, parseAllowList, type SourceAllowList } from '../signature/source-ip.ts';
import { extensionSecrets, jsonSecrets } from '../signature/secrets.ts';
import type { SecretsProvider } from '../signature/secrets.ts';
import { errorSentence } from '../text.ts';

export interface IngestSettings {
  /** QUEUE_URL; empty when unset (every callback then gets 503 queue_unavailable). */
  queueUrl: string;
  /** SIGNATURE_MODE: enforce (default), report or off. */
  mode: SignatureMode;
  /** DEVELOPMENT_STAGE=true: the stage is marked as development, the only kind where mode off may run. */
  development: boolean;
  /** SIGNATURE_TOLERANCE_S: accepted clock difference, either way (300). */
  toleranceS: number;
  /** MAX_BODY_BYTES: the largest body accepted, after base64 decoding (65536). */
  maxBodyBytes: number;
  /** The whole SendMessage, retries included. */
  sqsDeadlineMs: number;
  /** ALLOWED_SOURCE_CIDRS: the source addresses accepted, or null (unset: every address). */
  allowedSources: SourceAllowList | null;
  /** TASKS_TABLE: where signatures are claimed; empty when unset (every callback to claim then gets 503). */
  tableName: string;
  /** RAW_EVENT_TTL_DAYS: days the delivery stored with a claim is kept (7), as the worker keeps its own. */
  rawEventTtlDays: number;
  /** The whole claim, its read back included. */
  claimDeadlineMs: number;
}

export interface IngestDependencies {
  settings: IngestSettings;
  sqs: SQSClient;
  /** The tasks table's client, for the replay claim alone (lib/ingest/claim.ts). */
  dynamo: DynamoDBClient;
  secrets: SecretsProvider;
  /** Epoch milliseconds. */
  now: () => number;
  logger: Logger;
}

export const defaults = {
  mode: 'enforce' as SignatureMode,
  toleranceS: 300,
  maxBodyBytes: 65_536,
  secretsRefreshS: 300,
  extensionPort: 2773,
};

/**
 * The largest MAX_BODY_BYTES the ingest starts with: every copy of an accepted body must fit where it goes.
 * - The SQS message (256 KiB with its attributes) holds the body and, as the appKey attribute, a value that
 *   may be most of the body, beside the held signature values (lib/signature/verify.ts, at most 2 KiB): twice
 *   the body.
 * - A task header (a DynamoDB item, 400 KB) holds the facts of several callbacks, long values clipped
 *   (lib/domain/header-text.ts): it does not grow with the body.
 * - The raw callback archive holds the body once, a quarantine entry once with its appKey and task id: twice.
 * 80 KiB leaves room in each: at most 162 KiB of message, 160 KiB of quarantine entry.
 */
export const MAX_BODY_BYTES_LIMIT = 80 * 1024;

type Env = Readonly<Record<string, string | undefined>>;

const positiveInteger = positiveWholeNumber('a positive integer');

/** The ingest's environment. */
export const ingestEnvironment = envSchema('ingest', {
  // Set but empty refuses too: falling back would open the endpoint to every address.
  ALLOWED_SOURCE_CIDRS: {
    value: v.pipe(
      v.string(),
      v.transform((ranges) => {
        try {
          return parseAllowList(ranges);
        } catch (err) {
          if (err instanceof AllowListError) throw new StartRefused(err.message);
          throw err;
        }
      }),
    ),
    default: null,
    invalid: 'refuse',
    blankIsSet: true,
  },
  QUEUE_URL: {
    value: text,
    default: '',
    invalid: 'fall back',
    unsetWarning: 'QUEUE_URL is not set: every callback will be answered 503 queue_unavailable',
  },
  SIGNATURE_MODE: {
    value: v.pipe(v.string(), v.toLowerCase(), v.picklist(SIGNATURE_MODES, SIGNATURE_MODES_IN_WORDS)),
    default: defaults.mode,
    invalid: 'fall back',
  },
  DEVELOPMENT_STAGE: { value: trueOrFalse, default: false, invalid: 'fall back' },
  SIGNATURE_TOLERANCE_S: { value: positiveInteger, default: defaults.toleranceS, invalid: 'fall back' },
  MAX_BODY_BYTES: {
    value: v.pipe(
      positiveInteger,
      refuseStart(
        (bytes: number) => bytes <= MAX_BODY_BYTES_LIMIT,
        `is above ${MAX_BODY_BYTES_LIMIT}, the largest body whose copies fit an SQS message and a DynamoDB item`,
      ),
    ),
    default: defaults.maxBodyBytes,
    invalid: 'fall back',
  },
  CALLBACK_SECRETS: { value: text, default: '', invalid: 'fall back' },
  CALLBACK_SECRETS_PARAM: { value: text, default: '', invalid: 'fall back' },
  SECRETS_REFRESH_S: { value: positiveInteger, default: defaults.secretsRefreshS, invalid: 'fall back' },
  PARAMETERS_SECRETS_EXTENSION_HTTP_PORT: {
    value: positiveInteger,
    default: defaults.extensionPort,
    invalid: 'fall back',
  },
  TASKS_TABLE: {
    value: text,
    default: '',
    invalid: 'fall back',
    unsetWarning:
      'TASKS_TABLE is not set: every signed callback to be applied will be answered 503 queue_unavailable (its ' +
      'replay claim cannot be made)',
  },
  RAW_EVENT_TTL_DAYS: {
    value: positiveWholeNumber('a whole number of days'),
    default: DEFAULT_RAW_EVENT_TTL_DAYS,
    invalid: 'fall back',
  },
  AWS_SESSION_TOKEN: { value: text, default: '', invalid: 'fall back' },
  AWS_ENDPOINT_URL_SQS: { value: text, default: '', invalid: 'fall back' },
  AWS_ENDPOINT_URL: { value: text, default: '', invalid: 'fall back' },
});

type IngestEnvironment = SettingsOf<typeof ingestEnvironment.variables>;

/** The settings and warnings of an environment already read (readEnvironment with ingestEnvironment). */
function ingestSettingsOf(environment: IngestEnvironment, warnings: string[]): IngestSettings {
  warnings.push(...(environment.ALLOWED_SOURCE_CIDRS?.warnings ?? []));
  return {
    queueUrl: environment.QUEUE_URL,
    mode: environment.SIGNATURE_MODE,
    development: environment.DEVELOPMENT_STAGE,
    toleranceS: environment.SIGNATURE_TOLERANCE_S,
    maxBodyBytes: environment.MAX_BODY_BYTES,
    sqsDeadlineMs: sqsLimits.deadlineMs,
    allowedSources: environment.ALLOWED_SOURCE_CIDRS,
    tableName: environment.TASKS_TABLE,
    rawEventTtlDays: environment.RAW_EVENT_TTL_DAYS,
    claimDeadlineMs: claimLimits.deadlineMs,
  };
}

/**
 * Throws a ConfigError (one sentence) when ALLOWED_SOURCE_CIDRS is set but empty or holds a malformed range, or
 * MAX_BODY_BYTES is above MAX_BODY_BYTES_LIMIT.
 */
export function readIngestSettings(env: Env): { settings: IngestSettings; warnings: string[] } {
  const read = readEnvironment(ingestEnvironment, env);
  return { settings: ingestSettingsOf(read.settings, read.warnings), warnings: read.warnings };
}

/**
 * CALLBACK_SECRETS_PARAM (deployed: an SSM SecureString read through the Lambda extension) wins over
 * CALLBACK_SECRETS (local: the JSON itself). With neither, no appKey has a secret.
 */
function createSecretsProvider(
  environment: IngestEnvironment,
  now: () => number,
  logger: Logger,
  warnings: string[],
): SecretsProvider {
  if (environment.CALLBACK_SECRETS_PARAM) {
    return extensionSecrets({
      paramName: environment.CALLBACK_SECRETS_PARAM,
      port: environment.PARAMETERS_SECRETS_EXTENSION_HTTP_PORT,
      sessionToken: () => environment.AWS_SESSION_TOKEN || undefined,
      refreshMs: environment.SECRETS_REFRESH_S * 1000,
      now,
      logger,
    });
  }
  if (environment.CALLBACK_SECRETS) return jsonSecrets(environment.CALLBACK_SECRETS, 'CALLBACK_SECRETS');
  if (environment.SIGNATURE_MODE !== 'off')
    warnings.push('neither CALLBACK_SECRETS_PARAM nor CALLBACK_SECRETS is set: no appKey has a secret');
  return jsonSecrets('{}', 'no secrets configured');
}

/** The sentence a stage that is not marked as development gets when it asks for mode off. */
export const modeOffRefused =
  'SIGNATURE_MODE is off, which accepts unsigned callbacks and is for development only, but this stage is not ' +
  'marked as development (DEVELOPMENT_STAGE=true): the ingest does not start.';

/**
 * Everything the handler needs, built once at module load; `overrides` let a test or the local stack swap
 * parts. Throws (the function fails to start) on the settings readIngestSettings refuses, and on signature mode
 * off outside a development stage.
 */
export function buildIngestDependencies(
  env: Env,
  overrides: Partial<IngestDependencies> = {},
  clients: ClientSettings = {},
): IngestDependencies {
  const logger = overrides.logger ?? createLogger('ingest', logLevelFrom(env));
  const now = overrides.now ?? Date.now;
  let read: ReturnType<typeof readEnvironment<typeof ingestEnvironment.variables>>;
  try {
    read = readEnvironment(ingestEnvironment, env);
  } catch (error) {
    logger.error('ingest_config', { error: errorSentence(error, { bare: true, max: Number.POSITIVE_INFINITY }) });
    throw error;
  }
  const { warnings } = read;
  const settings = ingestSettingsOf(read.settings, warnings);
  const mode = overrides.settings?.mode ?? settings.mode;
  if (mode === 'off' && !(overrides.settings?.development ?? settings.development)) {
    logger.error('ingest_config', { error: modeOffRefused });
    throw new Error(modeOffRefused);
  }
  if (settings.allowedSources)
    logger.info('ingest_config', { allowedSources: settings.allowedSources.ranges.join(',') });
  const secrets = overrides.secrets ?? createSecretsProvider(read.settings, now, logger, warnings);
  for (const warning of warnings) logger.warn('ingest_config', { warning });
  // An emulator's endpoint, passed explicitly: otherwise the SDK sends to the host named in the queue URL, which
  // for an emulator is often not resolvable.
  const endpoint = read.settings.AWS_ENDPOINT_URL_SQS || read.settings.AWS_ENDPOINT_URL;
  return {
    settings: { ...settings, ...overrides.settings },
    sqs: overrides.sqs ?? createSqsClient({ ...(endpoint ? { endpoint } : {}), ...clientConfigOf('sqs', clients) }),
    dynamo: overrides.dynamo ?? createClaimClient(clientConfigOf('dynamodb', clients)),
    secrets,
    now,
    logger,
  };
}
