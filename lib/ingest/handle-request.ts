// The receiving endpoint (docs/contract.md §1 and §2) as a plain function of an API Gateway v2 event and
// its dependencies: route, body, minimal check, signature, SendMessage, one log line. It answers every
// path and method, so it can sit behind a `$default` route, and it never throws: the worst answer is a 503.
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { minimalCheck } from '../domain/minimal-check.ts';
import { callbackDeduplicationId, taskGroupId } from '../fifo-ids.ts';
import { type Service, SERVICES } from '../platform/services.ts';
import { isQueueSafe, senderOf } from '../queue-message.ts';
import { isSetAside, type SignatureVerdict } from '../signature/verdicts.ts';
import { clip, errorSentence } from '../text.ts';
import { decodeBody } from './body.ts';
import type { IngestDependencies } from './config.ts';
import { enqueueCallback } from './enqueue.ts';
import { errorResponse, okResponse } from '../http-responses.ts';
import type { ErrorCode, IngestResponse } from '../http-responses.ts';
import { SecretsUnavailableError } from '../signature/secrets.ts';
import { heldSignatureOf, readSignatureValues, replayKeyOf, verifySignature } from '../signature/verify.ts';

const callbackPaths: ReadonlyArray<readonly [string, Service]> = SERVICES.map((s) => [`/callbacks/${s}`, s]);

/** The service of a callback path; the suffix is matched so that a stage prefix (`/prod/...`) is fine. */
export function serviceForPath(rawPath: string): Service | undefined {
  const path = rawPath.length > 1 && rawPath.endsWith('/') ? rawPath.slice(0, -1) : rawPath;
  for (const [suffix, service] of callbackPaths) {
    if (path.endsWith(suffix)) return service;
  }
  return undefined;
}

/** The fields of the `callback_request` log line. Never the body, a secret or the signature. */
interface RequestLog {
  route: string;
  requestId: string | undefined;
  service?: Service;
  appKey?: string;
  type?: number;
  id?: string;
  status?: number;
  code?: ErrorCode;
  mode?: string;
  verdict?: SignatureVerdict;
  messageId?: string;
  bytes?: number;
  reason?: string;
  latencyMs?: number;
  /** Only on a request refused by the source allow-list. */
  sourceIp?: string;
  /** Signature mode `report`: accepted, but the worker will keep it in the quarantine (a metric counts these). */
  setAside?: true;
  note?: string;
}

type Level = 'info' | 'warn' | 'error';

const verdictRejections: Partial<Record<SignatureVerdict, (toleranceS: number) => [ErrorCode, string]>> = {
  missing: () => [
    'missing_signature',
    'The request carries no complete signature: nonce, timestamp and signature are required, in the query string or ' +
      'in headers.',
  ],
  invalid: () => [
    'invalid_signature',
    'The signature matches no secret of this appKey, its timestamp has a leading zero, or the request names another ' +
      'appKey than the body.',
  ],
  stale: (toleranceS) => [
    'stale_timestamp',
    `The signature timestamp is outside the accepted window of ${toleranceS} seconds.`,
  ],
  unknown_app_key: () => ['unknown_app_key', 'No callback secret is configured for this appKey.'],
};

/** Longest route, appKey or task id a log line carries. */
const LOGGED_VALUE_CHARS = 128;

export async function handleCallbackRequest(
  event: APIGatewayProxyEventV2,
  deps: IngestDependencies,
): Promise<IngestResponse> {
  const started = performance.now();
  const log: RequestLog = { route: '', requestId: event?.requestContext?.requestId || undefined };
  const outcome = { level: 'info' as Level };
  let response: IngestResponse;
  try {
    response = await answer(event, deps, log, outcome);
  } catch (error) {
    outcome.level = 'error';
    log.reason = errorSentence(error);
    log.code = 'internal_error';
    response = errorResponse('internal_error', 'An unexpected error occurred; retry later.');
  }
  log.status = response.statusCode;
  log.latencyMs = Math.round((performance.now() - started) * 10) / 10;
  try {
    deps.logger[outcome.level]('callback_request', { ...log });
  } catch {
    // A failing log sink must not turn an accepted callback into a failure.
  }
  return response;
}

async function answer(
  event: APIGatewayProxyEventV2,
  deps: IngestDependencies,
  log: RequestLog,
  outcome: { level: Level },
): Promise<IngestResponse> {
  const { settings } = deps;
  const fail = (code: ErrorCode, message: string, headers?: Record<string, string>): IngestResponse => {
    log.code = code;
    return errorResponse(code, message, headers);
  };
  const receivedAt = deps.now();
  const method = (event.requestContext?.http?.method ?? '').toUpperCase();
  const rawPath = event.rawPath ?? event.requestContext?.http?.path ?? '';

  // First of all: an address outside the allow-list learns nothing else about the endpoint.
  if (settings.allowedSources) {
    const sourceIp = event.requestContext?.http?.sourceIp;
    if (!settings.allowedSources.allows(sourceIp)) {
      log.route = clip(`${method} ${rawPath}`, LOGGED_VALUE_CHARS);
      log.sourceIp = clip(sourceIp || '(none)', 64);
      outcome.level = 'warn';
      return fail('source_not_allowed', 'Requests from this source address are not accepted.');
    }
  }

  const service = serviceForPath(rawPath);
  log.route = clip(`${method} ${rawPath}`, LOGGED_VALUE_CHARS);
  if (!service)
    return fail(
      'not_found',
      'No such endpoint: callbacks go to POST /callbacks/recording or POST /callbacks/screenshot.',
    );
  log.route = `${method} /callbacks/${service}`;
  log.service = service;
  if (method !== 'POST') {
    return fail('method_not_allowed', `Only POST is accepted on /callbacks/${service}.`, { allow: 'POST' });
  }

  const body = decodeBody(event.body, event.isBase64Encoded === true, settings.maxBodyBytes);
  if (!body.ok) return fail(body.code, body.message);
  log.bytes = body.bytes;

  const check = minimalCheck(service, body.json);
  if (!check.ok) return fail(check.code, check.message);
  log.appKey = clip(check.appKey, LOGGED_VALUE_CHARS);
  log.type = check.type;
  log.id = clip(check.id, LOGGED_VALUE_CHARS);
  if (!isQueueSafe(body.raw)) {
    return fail('invalid_body', 'The body contains characters a queue message cannot carry (U+FFFE or U+FFFF).');
  }
  if (!isQueueSafe(check.appKey)) {
    return fail(
      'invalid_body',
      'Field "appKey" contains characters a queue message cannot carry (unpaired surrogates, U+FFFE or U+FFFF).',
    );
  }

  const values = readSignatureValues(event.headers, event.rawQueryString, event.queryStringParameters);
  log.mode = settings.mode;
  let verdict: SignatureVerdict;
  if (settings.mode === 'off') {
    verdict = 'not_checked';
  } else {
    let secrets: readonly string[] | undefined;
    let secretsLoaded = true;
    try {
      secrets = (await deps.secrets.get()).get(check.appKey);
    } catch (error) {
      if (!(error instanceof SecretsUnavailableError)) throw error;
      log.reason = error.message;
      outcome.level = 'warn';
      if (settings.mode === 'enforce') {
        return fail(
          'secrets_unavailable',
          'The callback secrets could not be loaded, so the signature cannot be checked; retry later.',
        );
      }
      // Report mode exists to accept callbacks while signatures are being sorted out: do not lose them
      // because the secrets are unreadable; the message says nobody could check it (the worker sets it aside).
      secretsLoaded = false;
    }
    verdict = secretsLoaded
      ? verifySignature({
          mode: settings.mode,
          appKey: check.appKey,
          values,
          secrets,
          nowMs: receivedAt,
          toleranceS: settings.toleranceS,
        })
      : 'unverified';
  }
  log.verdict = verdict;

  const rejection = settings.mode === 'enforce' ? verdictRejections[verdict] : undefined;
  if (rejection) {
    const [code, message] = rejection(settings.toleranceS);
    // A misconfigured secret or a forged sender: worth a warning, unlike a malformed body.
    outcome.level = 'warn';
    return fail(code, message);
  }

  if (!settings.queueUrl) {
    outcome.level = 'error';
    log.reason = 'QUEUE_URL is not set';
    return fail('queue_unavailable', 'The queue could not be reached; retry later.');
  }
  const setAside = isSetAside(settings.mode, verdict);
  try {
    log.messageId = await enqueueCallback(
      deps.sqs,
      settings.queueUrl,
      {
        body: body.raw,
        service,
        appKey: check.appKey,
        receivedAt,
        requestId: log.requestId ?? null,
        verdict,
        mode: settings.mode,
        replayKey: replayKeyOf(values),
        // A verified signature is never stored: only what a later check of a failed one needs.
        heldSignature: verdict === 'valid' ? null : heldSignatureOf(values),
        // Any callback may end up in the quarantine (a body the full parse refuses, a replay), so every
        // message says who sent it.
        sender: senderOf(event.requestContext?.http?.sourceIp, event.requestContext?.http?.userAgent),
      },
      // The task id the minimal check read: one group per task, whichever service names it.
      {
        groupId: taskGroupId(check.appKey, check.id),
        deduplicationId: callbackDeduplicationId(service, values, body.raw),
      },
      settings.sqsDeadlineMs,
    );
  } catch (error) {
    outcome.level = 'warn';
    log.reason = errorSentence(error);
    return fail('queue_unavailable', 'The queue could not be reached; retry later.');
  }
  if (setAside) {
    outcome.level = 'warn';
    log.setAside = true;
    log.note =
      `report mode: accepted with verdict ${verdict}, set aside in the quarantine; ` +
      'once the secret is fixed, callbacks quarantine apply recovers it';
  }
  return okResponse();
}
