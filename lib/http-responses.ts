// The HTTP API's answers, for the receiving endpoint (docs/contract.md §1) and the read API (§5) alike: the
// one table of error codes and their statuses. The receiving endpoint answers `200 {"ok":true}` once a
// callback is enqueued; every failure is `{"error":{"code","message"}}`, its HTTP status fixed by the
// code, so callers pass only the code.
import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';

export const errorStatus = {
  invalid_json: 400,
  invalid_body: 400,
  /** Read API: a query parameter that is malformed or not allowed; the message names it. */
  invalid_query: 400,
  missing_signature: 401,
  invalid_signature: 401,
  stale_timestamp: 401,
  unknown_app_key: 403,
  /**
   * The request's source address may not use this route: outside every range of ALLOWED_SOURCE_CIDRS (the
   * ingest), or not loopback (the local read API).
   */
  source_not_allowed: 403,
  not_found: 404,
  method_not_allowed: 405,
  /** Read API: the task id is used by several appKeys; the request must name one with `appKey`. */
  ambiguous_id: 409,
  body_too_large: 413,
  queue_unavailable: 503,
  /** The secrets could not be loaded at all (signature mode `enforce`): the sender should retry. */
  secrets_unavailable: 503,
  /** Read API: the task table could not be read (throttled, unreachable); the caller should retry. */
  store_unavailable: 503,
  /** Anything unexpected: never a 500, the sender should retry. */
  internal_error: 503,
} as const;

export type ErrorCode = keyof typeof errorStatus;

export type JsonResponse = APIGatewayProxyStructuredResultV2 & {
  statusCode: number;
  body: string;
  headers: Record<string, string>;
};

export type IngestResponse = JsonResponse;

const jsonHeaders = { 'content-type': 'application/json' };

export function okResponse(): IngestResponse {
  return { statusCode: 200, headers: { ...jsonHeaders }, body: '{"ok":true}' };
}

/** A 200 answer carrying `value` as JSON. */
export function jsonResponse(value: unknown, headers: Record<string, string> = {}): JsonResponse {
  return { statusCode: 200, headers: { ...jsonHeaders, ...headers }, body: JSON.stringify(value) };
}

export function errorResponse(code: ErrorCode, message: string, headers: Record<string, string> = {}): JsonResponse {
  return {
    statusCode: errorStatus[code],
    headers: { ...jsonHeaders, ...headers },
    body: JSON.stringify({ error: { code, message } }),
  };
}
