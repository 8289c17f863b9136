// The contract between the ingest function and the worker: the SQS message body is the callback's raw
// body, byte for byte as the platform sent it (after API Gateway's base64 decoding); everything the
// ingest learned about the request travels in message attributes.

export type Service = 'recording' | 'screenshot';

export const SERVICES: readonly Service[] = ['recording', 'screenshot'];

export type SignatureMode = 'enforce' | 'report' | 'off';

/**
 * The signature verdict. `valid`: a configured secret matched inside the tolerance window.
 * `invalid`: values present, no secret matched. `missing`: nonce, timestamp or signature absent.
 * `stale`: the signature matched but the timestamp is outside the tolerance window.
 * `unknown_app_key`: no secret configured for the body's appKey. `not_checked`: mode `off`.
 */
export type SignatureVerdict = 'valid' | 'invalid' | 'missing' | 'stale' | 'unknown_app_key' | 'not_checked';

/**
 * The verdict a stored callback carries: the ingest's, or `accepted_unverified` for a callback taken out of
 * the quarantine by `callbacks quarantine apply --accept-unverified` although its signature did not verify.
 */
export type LedgerVerdict = SignatureVerdict | 'accepted_unverified';

/** Verdicts whose callbacks the worker sets aside in the quarantine rather than apply. */
export const quarantinedVerdicts: readonly SignatureVerdict[] = ['invalid'];

/** Whether the ingest accepts a callback that the worker will then set aside (signature mode `report`). */
export function isSetAside(mode: SignatureMode, verdict: SignatureVerdict): boolean {
  return mode === 'report' && quarantinedVerdicts.includes(verdict);
}

/** Where a signature value was read: the query string or a header. */
export type ValueSource = 'query' | 'header';

/**
 * The signature values of a callback whose signature did not verify, as received, so that it can be checked
 * again later with the secrets of that time (`callbacks quarantine apply`). Never a secret; never kept for a
 * callback whose signature verified.
 */
export interface HeldSignature {
  nonce?: string;
  timestamp?: string;
  signature?: string;
  /** An appKey claimed outside the body (header or query). */
  appKey?: string;
  from: Partial<Record<'nonce' | 'timestamp' | 'signature' | 'appKey', ValueSource>>;
}

/** SQS message attribute names (all String unless noted). */
export const Attr = {
  service: 'service',
  appKey: 'appKey',
  /** Number: epoch milliseconds when the ingest received the request. */
  receivedAt: 'receivedAt',
  requestId: 'requestId',
  verdict: 'signatureVerdict',
  mode: 'signatureMode',
  /** `<nonce>:<timestamp>:<signature>` when all three were present: the worker's replay check. */
  signatureKey: 'signatureKey',
  /** JSON HeldSignature, only when the verdict is not `valid`. */
  signatureValues: 'signatureValues',
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
  signatureKey: string | null;
  /** The signature values, kept only when the verdict is not `valid`. */
  heldSignature: HeldSignature | null;
  /** SQS ApproximateReceiveCount, when known. */
  receiveCount?: number;
}
