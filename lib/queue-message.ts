// The contract between the ingest function and the worker: the SQS message body is the callback's raw
// body, byte for byte as the platform sent it (after API Gateway's base64 decoding); everything the
// ingest learned about the request travels in message attributes.

export type Service = 'recording' | 'screenshot';

export type SignatureMode = 'enforce' | 'report' | 'off';

/**
 * The signature verdict. `valid`: a configured secret matched inside the tolerance window.
 * `invalid`: values present, no secret matched. `missing`: nonce, timestamp or signature absent.
 * `stale`: the signature matched but the timestamp is outside the tolerance window.
 * `unknown_app_key`: no secret configured for the body's appKey. `unverified`: mode `report`, and the
 * secrets could not be read. `not_checked`: mode `off`.
 */
export type SignatureVerdict =
  | 'valid'
  | 'invalid'
  | 'missing'
  | 'stale'
  | 'unknown_app_key'
  | 'unverified'
  | 'not_checked';

/** SQS message attribute names (all String unless noted). */
export const Attr = {
  service: 'service',
  appKey: 'appKey',
  /** Number: epoch milliseconds when the ingest received the request. */
  receivedAt: 'receivedAt',
  requestId: 'requestId',
  verdict: 'signatureVerdict',
  mode: 'signatureMode',
  /**
   * SHA-256 (hex) of the nonce, timestamp and lower-cased signature, when all three were present: the
   * worker's replay check. Opaque to the worker; never the signature itself.
   */
  replayKey: 'replayKey',
} as const;

/** What the worker reads back from one SQS record. */
export interface QueuedCallback {
  messageId: string;
  body: string;
  service: Service;
  appKey: string;
  receivedAt: number;
  requestId: string | null;
  verdict: SignatureVerdict;
  mode: SignatureMode;
  replayKey: string | null;
  /** SQS ApproximateReceiveCount, when known. */
  receiveCount?: number;
}
