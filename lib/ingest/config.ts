// The ingest's settings from the environment, and the dependencies built from them once per container.
// A bad value falls back to its default with a warning, a missing queue or secret shows up as a 503 with a
// clear code, never as a failed cold start. Three settings are exceptions, each unsafe to run with, so the
// function refuses to load: a source allow-list that is malformed or set but empty (falling back would silently
// open the endpoint to every address), a body limit above what the queue and the table can hold (callbacks would
// be accepted with a 200 and then fail for good), and signature mode off on a stage not marked as development.
import type { SQSClient } from '@aws-sdk/client-sqs';
import { createLogger } from '../log.ts';
import type { Logger } from '../log.ts';
import { parseSignatureMode, type SignatureMode, SIGNATURE_MODES_IN_WORDS } from '../queue-message.ts';
import { createSqsClient, sqsLimits } from './enqueue.ts';
import { parseAllowList, type SourceAllowList } from './source-ip.ts';
import { extensionSecrets, jsonSecrets } from './secrets.ts';
import type { SecretsProvider } from './secrets.ts';

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
}

export interface IngestDependencies {
  settings: IngestSettings;
  sqs: SQSClient;
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
 *   may be most of the body, beside the held signature values (lib/ingest/signature.ts, at most 2 KiB): twice
 *   the body.
 * - A task header (a DynamoDB item, 400 KB) joins the facts of four callbacks at worst: the identity of one
 *   (`extra`), the config of another, stored as a map up to 1.5 times its JSON size (a list of digits), the
 *   error message of the earliest failure and that of the last error: four and a half times the body.
 * - The raw callback archive holds the body once, a quarantine entry once with its appKey and task id.
 * 80 KiB leaves room in each: at most 360 KiB of header, 162 KiB of message.
 */
export const MAX_BODY_BYTES_LIMIT = 80 * 1024;

export class IngestConfigError extends Error {
  override name = 'IngestConfigError';
}

type Env = Record<string, string | undefined>;

function positiveInteger(env: Env, name: string, fallback: number, warnings: string[]): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw);
  if (Number.isSafeInteger(value) && value > 0) return value;
  warnings.push(`${name}=${JSON.stringify(raw)} is not a positive integer; using ${fallback}`);
  return fallback;
}

/** MAX_BODY_BYTES; a whole number above MAX_BODY_BYTES_LIMIT throws an IngestConfigError (one sentence). */
function maxBodyBytes(env: Env, warnings: string[]): number {
  const value = positiveInteger(env, 'MAX_BODY_BYTES', defaults.maxBodyBytes, warnings);
  if (value > MAX_BODY_BYTES_LIMIT)
    throw new IngestConfigError(
      `MAX_BODY_BYTES=${JSON.stringify(env.MAX_BODY_BYTES)} is above ${MAX_BODY_BYTES_LIMIT}, the largest body ` +
        'whose copies fit an SQS message and a DynamoDB item: the ingest does not start.',
    );
  return value;
}

/**
 * Throws (one sentence) when ALLOWED_SOURCE_CIDRS is set but empty or holds a malformed range (AllowListError),
 * or MAX_BODY_BYTES is above MAX_BODY_BYTES_LIMIT (IngestConfigError).
 */
export function readIngestSettings(env: Env): { settings: IngestSettings; warnings: string[] } {
  const allowedSources = parseAllowList(env.ALLOWED_SOURCE_CIDRS);
  const warnings: string[] = [...(allowedSources?.warnings ?? [])];
  const mode = parseSignatureMode(env.SIGNATURE_MODE) ?? defaults.mode;
  if (env.SIGNATURE_MODE?.trim() && !parseSignatureMode(env.SIGNATURE_MODE))
    warnings.push(
      `SIGNATURE_MODE=${JSON.stringify(env.SIGNATURE_MODE)} is not ${SIGNATURE_MODES_IN_WORDS}; using ${defaults.mode}`,
    );
  const rawDevelopment = env.DEVELOPMENT_STAGE?.trim().toLowerCase();
  if (rawDevelopment && rawDevelopment !== 'true' && rawDevelopment !== 'false')
    warnings.push(`DEVELOPMENT_STAGE=${JSON.stringify(env.DEVELOPMENT_STAGE)} is not true or false; using false`);
  const queueUrl = env.QUEUE_URL?.trim() ?? '';
  if (!queueUrl) warnings.push('QUEUE_URL is not set: every callback will be answered 503 queue_unavailable');
  return {
    settings: {
      queueUrl,
      mode,
      development: rawDevelopment === 'true',
      toleranceS: positiveInteger(env, 'SIGNATURE_TOLERANCE_S', defaults.toleranceS, warnings),
      maxBodyBytes: maxBodyBytes(env, warnings),
      sqsDeadlineMs: sqsLimits.deadlineMs,
      allowedSources,
    },
    warnings,
  };
}

/**
 * CALLBACK_SECRETS_PARAM (deployed: an SSM SecureString read through the Lambda extension) wins over
 * CALLBACK_SECRETS (local: the JSON itself). With neither, no appKey has a secret.
 */
export function createSecretsProvider(
  env: Env,
  mode: SignatureMode,
  now: () => number,
  logger: Logger,
  warnings: string[],
): SecretsProvider {
  const paramName = env.CALLBACK_SECRETS_PARAM?.trim();
  if (paramName) {
    return extensionSecrets({
      paramName,
      port: positiveInteger(env, 'PARAMETERS_SECRETS_EXTENSION_HTTP_PORT', defaults.extensionPort, warnings),
      sessionToken: () => env.AWS_SESSION_TOKEN,
      refreshMs: positiveInteger(env, 'SECRETS_REFRESH_S', defaults.secretsRefreshS, warnings) * 1000,
      now,
      logger,
    });
  }
  if (env.CALLBACK_SECRETS !== undefined && env.CALLBACK_SECRETS.trim() !== '') {
    return jsonSecrets(env.CALLBACK_SECRETS, 'CALLBACK_SECRETS');
  }
  if (mode !== 'off')
    warnings.push('neither CALLBACK_SECRETS_PARAM nor CALLBACK_SECRETS is set: no appKey has a secret');
  return jsonSecrets('{}', 'no secrets configured');
}

/**
 * An emulator's endpoint (AWS_ENDPOINT_URL_SQS or AWS_ENDPOINT_URL), passed explicitly: otherwise the SDK
 * sends to the host named in the queue URL, which for an emulator is often not resolvable.
 */
function sqsEndpointOverride(env: Env): { endpoint?: string } {
  const endpoint = env.AWS_ENDPOINT_URL_SQS?.trim() || env.AWS_ENDPOINT_URL?.trim();
  return endpoint ? { endpoint } : {};
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
  env: Env = process.env,
  overrides: Partial<IngestDependencies> = {},
): IngestDependencies {
  const logger = overrides.logger ?? createLogger('ingest');
  const now = overrides.now ?? Date.now;
  let read: ReturnType<typeof readIngestSettings>;
  try {
    read = readIngestSettings(env);
  } catch (error) {
    logger.error('ingest_config', { error: (error as Error).message });
    throw error;
  }
  const { settings, warnings } = read;
  const mode = overrides.settings?.mode ?? settings.mode;
  if (mode === 'off' && !(overrides.settings?.development ?? settings.development)) {
    logger.error('ingest_config', { error: modeOffRefused });
    throw new Error(modeOffRefused);
  }
  if (settings.allowedSources)
    logger.info('ingest_config', { allowedSources: settings.allowedSources.ranges.join(',') });
  const secrets = overrides.secrets ?? createSecretsProvider(env, settings.mode, now, logger, warnings);
  for (const warning of warnings) logger.warn('ingest_config', { warning });
  return {
    settings: { ...settings, ...overrides.settings },
    sqs: overrides.sqs ?? createSqsClient(sqsEndpointOverride(env)),
    secrets,
    now,
    logger,
  };
}
