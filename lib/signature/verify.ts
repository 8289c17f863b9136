// The platform's general server-callback signature: lowercase hex SHA1(appSecret + nonce + timestamp),
// body not covered. Where the values travel is not fully documented, so every known name is accepted,
// in the query string (looked at first, as the platform's own SDKs do) or in a header, case-insensitively.
import { Buffer } from 'node:buffer';
import { createHash, timingSafeEqual } from 'node:crypto';
import { computeSignature } from '../platform/signing.ts';
import type { HeldSignature, ValueSource } from './held.ts';
import type { SignatureMode, SignatureVerdict } from './verdicts.ts';

/** Accepted names, lower case, in the order they are looked up. */
const signatureNames = {
  nonce: ['nonce', 'rc-nonce'],
  timestamp: ['timestamp', 'signtimestamp', 'rc-timestamp'],
  signature: ['signature', 'rc-signature'],
  appKey: ['appkey', 'rc-app-key'],
} as const;

export interface SignatureValues {
  nonce?: string;
  timestamp?: string;
  signature?: string;
  /** An appKey claimed by the request outside the body; it must equal the body's. */
  appKey?: string;
  /** Where each value present was found. */
  from?: HeldSignature['from'];
}

type Lookup = ReadonlyMap<string, string>;

function lowerCaseLookup(entries: Iterable<[string, string | undefined]>): Lookup {
  const map = new Map<string, string>();
  for (const [name, value] of entries) {
    const key = name.toLowerCase();
    const trimmed = value?.trim();
    if (trimmed && !map.has(key)) map.set(key, trimmed);
  }
  return map;
}

/**
 * Collects the signature values from the query string and the headers. The raw query string is preferred
 * over API Gateway's parsed map (which joins repeated names with commas); empty values count as absent.
 */
export function readSignatureValues(
  headers: Record<string, string | undefined> | undefined,
  rawQueryString: string | undefined,
  queryStringParameters?: Record<string, string | undefined>,
): SignatureValues {
  const query = rawQueryString
    ? lowerCaseLookup(new URLSearchParams(rawQueryString))
    : lowerCaseLookup(Object.entries(queryStringParameters ?? {}));
  const header = lowerCaseLookup(Object.entries(headers ?? {}));
  const values: SignatureValues = {};
  const from: NonNullable<SignatureValues['from']> = {};
  for (const field of ['nonce', 'timestamp', 'signature', 'appKey'] as const) {
    found: for (const [source, lookup] of [
      ['query', query],
      ['header', header],
    ] as [ValueSource, Lookup][]) {
      for (const name of signatureNames[field]) {
        const value = lookup.get(name);
        if (value !== undefined) {
          values[field] = value;
          from[field] = source;
          break found;
        }
      }
    }
  }
  if (Object.keys(from).length > 0) values.from = from;
  return values;
}

/** Below this a timestamp is read as seconds (1e11 ms is 1973; 1e11 s is far beyond any real date). */
const secondsBelow = 1e11;

/** Epoch milliseconds from a timestamp in seconds or milliseconds, or undefined when it is not an integer. */
export function timestampToMs(value: string): number | undefined {
  if (!/^\d{1,16}$/.test(value)) return undefined;
  const n = Number(value);
  return n < secondsBelow ? n * 1000 : n;
}

/**
 * The worker's replay key, when nonce, timestamp and signature are all present: a SHA-256 (hex) of the
 * signature as the check reads it (trimmed, percent-decoded, lower-cased, since it is compared without
 * regard to case). The signature stands for what was signed, secret + nonce + timestamp as one string, which
 * can be split elsewhere between nonce and timestamp and still verify (a millisecond timestamp whose first
 * three digits go to the nonce reads, in seconds, as almost the same time): a key of the values as sent would
 * take each split for another request. The key holds no appKey; the worker claims it per appKey. Hashed so
 * that read access to the queue or the table never hands out a signature that would pass the check.
 */
export function replayKeyOf(values: SignatureValues): string | null {
  const nonce = values.nonce?.trim();
  const timestamp = values.timestamp?.trim();
  const signature = values.signature?.trim().toLowerCase();
  if (!nonce || !timestamp || !signature) return null;
  // A one-element array: never the input of the earlier key form, a hash of the three values as an array.
  return createHash('sha256')
    .update(JSON.stringify([signature]), 'utf8')
    .digest('hex');
}

/** The longest HeldSignature (as JSON) kept; a genuine one is about 150 characters. */
export const MAX_HELD_SIGNATURE_CHARS = 2048;

/**
 * The values to keep with a callback whose signature did not verify, so that it can be checked again later,
 * or null when there is nothing to keep (or too much: no genuine signature is kilobytes long).
 */
export function heldSignatureOf(values: SignatureValues): HeldSignature | null {
  const { nonce, timestamp, signature, appKey, from } = values;
  if (!from) return null;
  const held: HeldSignature = { from };
  if (nonce !== undefined) held.nonce = nonce;
  if (timestamp !== undefined) held.timestamp = timestamp;
  if (signature !== undefined) held.signature = signature;
  if (appKey !== undefined) held.appKey = appKey;
  return JSON.stringify(held).length <= MAX_HELD_SIGNATURE_CHARS ? held : null;
}

export interface VerifyInput {
  mode: SignatureMode;
  /** The body's appKey, the one the secrets are looked up by. */
  appKey: string;
  values: SignatureValues;
  /** The secrets configured for that appKey (undefined or empty: none). */
  secrets: readonly string[] | undefined;
  nowMs: number;
  toleranceS: number;
}

/**
 * A timestamp with a leading zero, which the platform never writes. Allowed, it would let a nonce that ends
 * in `0` give that `0` to the timestamp: the signed string, and so the signature, stay the same, and the
 * timestamp reads as the same time.
 */
export function hasLeadingZero(timestamp: string): boolean {
  return /^0\d/.test(timestamp.trim());
}

/**
 * Decides the verdict, in this order: mode `off` -> not_checked; an outside appKey that differs from the
 * body's -> invalid; no secret configured -> unknown_app_key; a value missing -> missing; a timestamp with
 * a leading zero, or no secret that reproduces the signature -> invalid; the timestamp unreadable or outside
 * the window -> stale; else valid. The timestamp's time is judged only once the signature matched, so
 * `stale` always means a genuine signature.
 */
export function verifySignature(input: VerifyInput): SignatureVerdict {
  const { mode, appKey, values, secrets, nowMs, toleranceS } = input;
  if (mode === 'off') return 'not_checked';
  if (values.appKey !== undefined && values.appKey !== appKey) return 'invalid';
  if (!secrets || secrets.length === 0) return 'unknown_app_key';
  const { nonce, timestamp, signature } = values;
  if (!nonce || !timestamp || !signature) return 'missing';
  if (hasLeadingZero(timestamp)) return 'invalid';
  if (!matchesAnySecret(signature, secrets, nonce, timestamp)) return 'invalid';
  const timestampMs = timestampToMs(timestamp);
  if (timestampMs === undefined || Math.abs(nowMs - timestampMs) > toleranceS * 1000) return 'stale';
  return 'valid';
}

/** Compares with every secret in constant time, without stopping at the first match. */
function matchesAnySecret(presented: string, secrets: readonly string[], nonce: string, timestamp: string): boolean {
  const given = Buffer.from(presented.toLowerCase(), 'utf8');
  let matched = false;
  for (const secret of secrets) {
    const expected = Buffer.from(computeSignature(secret, nonce, timestamp), 'utf8');
    // The length of a SHA1 hex digest is public; only equal-length buffers can be compared.
    if (given.length === expected.length && timingSafeEqual(given, expected)) matched = true;
  }
  return matched;
}
