// The receiving endpoint's answers (docs/contract.md §1): `200 {"ok":true}` once enqueued, otherwise
// `{"error":{"code","message"}}`. The HTTP status is fixed by the code, so callers pass only the code.
import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';

export const errorStatus = {
  invalid_json: 400,
  invalid_body: 400,
  missing_signature: 401,
  invalid_signature: 401,
  stale_timestamp: 401,
  unknown_app_key: 403,
  /** ALLOWED_SOURCE_CIDRS is set and the source address is outside every range. */
  source_not_allowed: 403,
  not_found: 404,
  method_not_allowed: 405,
  body_too_large: 413,
  queue_unavailable: 503,
  /** The secrets could not be loaded at all (signature mode `enforce`): the sender should retry. */
  secrets_unavailable: 503,
  /** Anything unexpected: never a 500, the sender should retry. */
  internal_error: 503,
} as const;

export type ErrorCode = keyof typeof errorStatus;

export type IngestResponse = APIGatewayProxyStructuredResultV2 & {
  statusCode: number;
  body: string;
  headers: Record<string, string>;
};

const jsonHeaders = { 'content-type': 'application/json' };

export function okResponse(): IngestResponse {
  return { statusCode: 200, headers: { ...jsonHeaders }, body: '{"ok":true}' };
}

export function errorResponse(code: ErrorCode, message: string, headers: Record<string, string> = {}): IngestResponse {
  return {
    statusCode: errorStatus[code],
    headers: { ...jsonHeaders, ...headers },
    body: JSON.stringify({ error: { code, message } }),
  };
}
