// The receiving endpoint (docs/contract.md §1 and §2) as a plain function of an API Gateway v2 event and
// its dependencies: route, body, minimal check, signature, replay claim, SendMessage, one log line. It answers
// every path and method, so it can sit behind a `$default` route, and it never throws: the worst answer is a 503.
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { minimalCheck } from '../domain/minimal-check.ts';
import { callbackDeduplicationId, setAsideGroupId, taskGroupId } from '../fifo-ids.ts';
import type { ReplayClaim } from '../domain/replay-claim.ts';
import { type Service, SERVICES } from '../platform/services.ts';
import { isQueueSafe, senderOf } from '../queue-message.ts';
import { isSetAside, type SignatureVerdict } from '../signature/verdicts.ts';
import { clip, errorSentence } from '../text.ts';
import { decodeBody } from './body.ts';
import type { IngestDependencies } from './config.ts';
import { enqueueCallback } from './enqueue.ts';
import { claimSignature } from './claim.ts';
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
  /** The replay claim of a signed callback to be applied: `replayed`, accepted and set aside as a replay. */
  claim?: ReplayClaim;
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

/** What the steps of one request share: the request, the settings, and the log line and its level they fill in. */
interface Request {
  event: APIGatewayProxyEventV2;
  deps: IngestDependencies;
  method: string;
  rawPath: string;
  receivedAt: number;
  log: RequestLog;
  outcome: { level: Level };
}

/** A step's refusal: the answer's code and message, and the log level when it is worth more than info. */
interface Refusal {
  refused: ErrorCode;
  message: string;
  headers?: Record<string, string>;
  level?: Level;
}

const isRefusal = (value: unknown): value is Refusal =>
  typeof value === 'object' && value !== null && 'refused' in value;

/**
 * The contract's steps in their order (docs/contract.md §1): source allow-list, route, body, minimal check,
 * secrets and signature, replay claim, SendMessage. The first that refuses gives the answer.
 */
async function answer(
  event: APIGatewayProxyEventV2,
  deps: IngestDependencies,
  log: RequestLog,
  outcome: { level: Level },
): Promise<IngestResponse> {
  const req: Request = {
    event,
    deps,
    method: (event.requestContext?.http?.method ?? '').toUpperCase(),
    rawPath: event.rawPath ?? event.requestContext?.http?.path ?? '',
    receivedAt: deps.now(),
    log,
    outcome,
  };
  const refuse = (r: Refusal): IngestResponse => {
    log.code = r.refused;
    if (r.level) outcome.level = r.level;
    return errorResponse(r.refused, r.message, r.headers);
  };
  const source = checkSource(req);
  if (source) return refuse(source);
  const service = routeOf(req);
  if (isRefusal(service)) return refuse(service);
  const body = readBody(req);
  if (isRefusal(body)) return refuse(body);
  const callback = checkCallback(req, service, body.raw, body.json);
  if (isRefusal(callback)) return refuse(callback);
  const values = readSignatureValues(event.headers, event.rawQueryString, event.queryStringParameters);
  const verdict = await signatureVerdict(req, callback.appKey, values);
  if (isRefusal(verdict)) return refuse(verdict);
  const { appKey, id, type } = callback;
  const sent = await enqueue(req, { service, raw: body.raw, json: body.json, appKey, id, type }, values, verdict);
  return sent ? refuse(sent) : okResponse();
}

/** First of all: an address outside the allow-list learns nothing else about the endpoint. */
function checkSource({ event, deps, method, rawPath, log }: Request): Refusal | null {
  const allowed = deps.settings.allowedSources;
  if (!allowed) return null;
  const sourceIp = event.requestContext?.http?.sourceIp;
  if (allowed.allows(sourceIp)) return null;
  log.route = clip(`${method} ${rawPath}`, LOGGED_VALUE_CHARS);
  log.sourceIp = clip(sourceIp || '(none)', 64);
  return {
    refused: 'source_not_allowed',
    message: 'Requests from this source address are not accepted.',
    level: 'warn',
  };
}

/** The route: a callback path (404 otherwise), posted to (405 otherwise). */
function routeOf({ method, rawPath, log }: Request): Service | Refusal {
  const service = serviceForPath(rawPath);
  log.route = clip(`${method} ${rawPath}`, LOGGED_VALUE_CHARS);
  if (!service)
    return {
      refused: 'not_found',
      message: 'No such endpoint: callbacks go to POST /callbacks/recording or POST /callbacks/screenshot.',
    };
  log.route = `${method} /callbacks/${service}`;
  log.service = service;
  if (method !== 'POST')
    return {
      refused: 'method_not_allowed',
      message: `Only POST is accepted on /callbacks/${service}.`,
      headers: { allow: 'POST' },
    };
  return service;
}

/** The body, decoded and read as JSON within the size limit (413, then 400 invalid_json). */
function readBody({ event, deps, log }: Request): { raw: string; json: unknown } | Refusal {
  const body = decodeBody(event.body, event.isBase64Encoded === true, deps.settings.maxBodyBytes);
  if (!body.ok) return { refused: body.code, message: body.message };
  log.bytes = body.bytes;
  return body;
}

/** The minimal check (400 invalid_body), and what a queue message could never carry. */
function checkCallback(
  { log }: Request,
  service: Service,
  raw: string,
  json: unknown,
): { appKey: string; id: string; type: number } | Refusal {
  const check = minimalCheck(service, json);
  if (!check.ok) return { refused: check.code, message: check.message };
  log.appKey = clip(check.appKey, LOGGED_VALUE_CHARS);
  log.type = check.type;
  log.id = clip(check.id, LOGGED_VALUE_CHARS);
  if (!isQueueSafe(raw))
    return {
      refused: 'invalid_body',
      message: 'The body contains characters a queue message cannot carry (U+FFFE or U+FFFF).',
    };
  if (!isQueueSafe(check.appKey))
    return {
      refused: 'invalid_body',
      message:
        'Field "appKey" contains characters a queue message cannot carry (unpaired surrogates, U+FFFE or U+FFFF).',
    };
  return check;
}

/**
 * The secrets loaded (503 secrets_unavailable in enforce), then the signature's verdict; in enforce a verdict
 * other than valid refuses (401, 403).
 */
async function signatureVerdict(
  { deps, receivedAt, log, outcome }: Request,
  appKey: string,
  values: ReturnType<typeof readSignatureValues>,
): Promise<SignatureVerdict | Refusal> {
  const { settings } = deps;
  log.mode = settings.mode;
  let verdict: SignatureVerdict;
  if (settings.mode === 'off') {
    verdict = 'not_checked';
  } else {
    let secrets: readonly string[] | undefined;
    let secretsLoaded = true;
    try {
      secrets = (await deps.secrets.get()).get(appKey);
    } catch (error) {
      if (!(error instanceof SecretsUnavailableError)) throw error;
      log.reason = error.message;
      outcome.level = 'warn';
      if (settings.mode === 'enforce') {
        return {
          refused: 'secrets_unavailable',
          message: 'The callback secrets could not be loaded, so the signature cannot be checked; retry later.',
        };
      }
      // Report mode exists to accept callbacks while signatures are being sorted out: do not lose them
      // because the secrets are unreadable; the message says nobody could check it (the worker sets it aside).
      secretsLoaded = false;
    }
    verdict = secretsLoaded
      ? verifySignature({
          mode: settings.mode,
          appKey,
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
    return { refused: code, message, level: 'warn' };
  }
  return verdict;
}

/** A callback as the minimal check read it, with its raw body and its service. */
type CheckedCallback = { service: Service; raw: string; json: unknown; appKey: string; id: string; type: number };

/** A callback on its way to the queue: its signature values, their verdict, its replay key and replay claim. */
interface Outgoing {
  callback: CheckedCallback;
  values: ReturnType<typeof readSignatureValues>;
  verdict: SignatureVerdict;
  replayKey: ReturnType<typeof replayKeyOf>;
  claim: ReplayClaim | null;
}

/** The replay claim, then SendMessage (503 queue_unavailable); null once the queue holds the callback. */
async function enqueue(
  req: Request,
  callback: CheckedCallback,
  values: ReturnType<typeof readSignatureValues>,
  verdict: SignatureVerdict,
): Promise<Refusal | null> {
  const { queueUrl } = req.deps.settings;
  if (!queueUrl) return queueUnavailable(req.log, 'QUEUE_URL is not set', 'error');
  const out: Outgoing = { callback, values, verdict, replayKey: replayKeyOf(values), claim: null };
  const refused = (await claimReplay(req, out)) ?? (await sendToQueue(req, out, queueUrl));
  if (!refused) noteSetAside(req, out);
  return refused;
}

function queueUnavailable(log: RequestLog, reason: string, level: Level): Refusal {
  log.reason = reason;
  return { refused: 'queue_unavailable', message: 'The queue could not be reached; retry later.', level };
}

/**
 * A callback to be applied claims its signature before it is enqueued (`out.claim`: a replay goes into the group
 * beside its task's); one set aside for its verdict never does. A refusal when the claim cannot be written.
 */
async function claimReplay({ deps, receivedAt, log }: Request, out: Outgoing): Promise<Refusal | null> {
  const { settings } = deps;
  const { callback, verdict, replayKey } = out;
  if (!replayKey || isSetAside(settings.mode, verdict)) return null;
  if (!settings.tableName) return queueUnavailable(log, 'TASKS_TABLE is not set', 'error');
  try {
    const requestId = log.requestId ?? null;
    const signed = { ...callback, receivedAt, requestId, verdict, mode: settings.mode, replayKey };
    const claimed = await claimSignature(deps, signed);
    if ('claim' in claimed) out.claim = log.claim = claimed.claim;
    else log.note = `not claimed, the worker sets it aside: ${claimed.unclaimed}`;
  } catch (error) {
    return queueUnavailable(log, `the replay claim could not be written: ${errorSentence(error)}`, 'warn');
  }
  return null;
}

/** SendMessage, into the task's message group or, for what the worker will set aside, the one beside it. */
async function sendToQueue(req: Request, out: Outgoing, queueUrl: string): Promise<Refusal | null> {
  const { event, deps, receivedAt, log } = req;
  const { settings } = deps;
  const { callback, values, verdict, replayKey, claim } = out;
  const { service, raw, appKey, id } = callback;
  // Never applied: kept out of the task's group, so that however many there are, they hold none of its callbacks back.
  const setAside = isSetAside(settings.mode, verdict) || claim === 'replayed';
  try {
    log.messageId = await enqueueCallback(
      deps.sqs,
      queueUrl,
      {
        body: raw,
        service,
        appKey,
        receivedAt,
        requestId: log.requestId ?? null,
        verdict,
        mode: settings.mode,
        replayKey,
        claim,
        // A verified signature is never stored: only what a later check of a failed one needs.
        heldSignature: verdict === 'valid' ? null : heldSignatureOf(values),
        // Any callback may end up in the quarantine (a body the full parse refuses, a replay), so every
        // message says who sent it.
        sender: senderOf(event.requestContext?.http?.sourceIp, event.requestContext?.http?.userAgent),
      },
      // The task id the minimal check read: one group per task, whichever service names it, and one beside it for
      // what the worker will set aside.
      {
        groupId: setAside ? setAsideGroupId(appKey, id) : taskGroupId(appKey, id),
        deduplicationId: callbackDeduplicationId(service, values, raw),
      },
      settings.sqsDeadlineMs,
    );
  } catch (error) {
    return queueUnavailable(log, errorSentence(error), 'warn');
  }
  return null;
}

/** The log line of a callback accepted to be set aside: a warning, with why. */
function noteSetAside({ deps, log, outcome }: Request, { verdict, claim }: Outgoing): void {
  if (isSetAside(deps.settings.mode, verdict)) {
    outcome.level = 'warn';
    log.setAside = true;
    log.note =
      `report mode: accepted with verdict ${verdict}, set aside in the quarantine; ` +
      'once the secret is fixed, callbacks quarantine apply recovers it';
  }
  if (claim === 'replayed') {
    outcome.level = 'warn';
    log.note = 'a replay: this signature came before with another body; set aside as replayed_signature';
  }
}
