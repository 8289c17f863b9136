// The signature modes and verdicts: how strictly the ingest checks a callback's signature, what it found, and
// which verdicts the worker sets aside in the quarantine. Shared by the ingest, the queue message, the task
// store's quarantine and the worker's second check.

export const SIGNATURE_MODES = ['enforce', 'report', 'off'] as const;
export type SignatureMode = (typeof SIGNATURE_MODES)[number];

/** The modes as a sentence lists them: "enforce, report or off". */
export const SIGNATURE_MODES_IN_WORDS = `${SIGNATURE_MODES.slice(0, -1).join(', ')} or ${SIGNATURE_MODES.at(-1)}`;

export function isSignatureMode(value: unknown): value is SignatureMode {
  return SIGNATURE_MODES.includes(value as SignatureMode);
}

/** A mode as people write it (any case, spaces around), or undefined when it is none. */
export function parseSignatureMode(text: string | undefined): SignatureMode | undefined {
  const mode = text?.trim().toLowerCase();
  return SIGNATURE_MODES.includes(mode as SignatureMode) ? (mode as SignatureMode) : undefined;
}

/**
 * The signature verdict. `valid`: a configured secret matched inside the tolerance window.
 * `invalid`: values present, no secret matched. `missing`: nonce, timestamp or signature absent.
 * `stale`: the signature matched but the timestamp is outside the tolerance window.
 * `unknown_app_key`: no secret configured for the body's appKey. `unverified`: mode `report`, and the
 * secrets could not be read. `not_checked`: mode `off`.
 */
export const SIGNATURE_VERDICTS = [
  'valid',
  'invalid',
  'missing',
  'stale',
  'unknown_app_key',
  'unverified',
  'not_checked',
] as const;
export type SignatureVerdict = (typeof SIGNATURE_VERDICTS)[number];

export function isSignatureVerdict(value: unknown): value is SignatureVerdict {
  return SIGNATURE_VERDICTS.includes(value as SignatureVerdict);
}

/**
 * The verdict a stored callback carries: the ingest's, or `accepted_unverified` for a callback taken out of
 * the quarantine by `callbacks quarantine apply --accept-unverified` although its signature did not verify.
 */
export type LedgerVerdict = SignatureVerdict | 'accepted_unverified';

/**
 * Whether the worker sets a callback with this verdict aside in the quarantine rather than apply it. One rule
 * for every mode: only a valid signature is applied, except in mode `off` (development), which applies what
 * it did not check. Mode `enforce` refuses the others at the door; mode `report` accepts them, to be set aside.
 */
export function isSetAside(mode: SignatureMode, verdict: SignatureVerdict): boolean {
  if (verdict === 'valid') return false;
  return !(verdict === 'not_checked' && mode === 'off');
}
