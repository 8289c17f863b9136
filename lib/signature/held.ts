// What is kept with a callback set aside for its signature, so that it can be judged again later: the
// signature values as received and who sent the request.

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

/**
 * Who sent the request, as API Gateway saw it: kept with a callback the worker sets aside, so that an operator
 * can judge its origin (`callbacks quarantine apply --source`). Either may be absent.
 */
export interface Sender {
  sourceIp?: string;
  userAgent?: string;
}
