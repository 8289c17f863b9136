// What the receiving endpoint must answer, written from docs/contract.md §1 and §2 rather than
// from the handler's code, so that the fuzz tests compare two independent readings of the same rules.
import { Buffer } from 'node:buffer';
import { createHash } from 'node:crypto';
import type { Service } from '../../../lib/platform/services.ts';

export type Expected =
  | { ok: true; status: 200; raw: string; appKey: string }
  | { ok: false; status: number; code: string };

export const accepted = (raw: string, appKey: string): Expected => ({ ok: true, status: 200, raw, appKey });

/** The codes of docs/contract.md §1 with their status. `secrets_unavailable` and `internal_error` are not in it. */
export const contractCodes: Readonly<Record<string, number>> = {
  invalid_json: 400,
  invalid_body: 400,
  missing_signature: 401,
  invalid_signature: 401,
  stale_timestamp: 401,
  unknown_app_key: 403,
  not_found: 404,
  method_not_allowed: 405,
  body_too_large: 413,
  queue_unavailable: 503,
};

export const refused = (code: string): Expected => ({ ok: false, status: contractCodes[code]!, code });
const fail = refused;

/** "Paths match by suffix: a stage prefix and a trailing slash are accepted." */
export function routeOf(path: string): Service | null {
  const trimmed = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
  if (trimmed.endsWith('/callbacks/recording')) return 'recording';
  if (trimmed.endsWith('/callbacks/screenshot')) return 'screenshot';
  return null;
}

const TYPES: Record<Service, number[]> = { recording: [1, 2, 3, 4], screenshot: [1, 3, 4] };
const ID_FIELD: Record<Service, string> = { recording: 'recordId', screenshot: 'imageId' };

/** A type as the receiver reads it: a number, or a numeric string ("4", " 4 ", "4.0"). */
function typeValue(value: unknown): number | null {
  if (typeof value === 'number') return value;
  if (typeof value === 'string' && /^\s*-?\d+(\.\d+)?\s*$/.test(value)) return Number(value);
  return null;
}

const nonBlank = (v: unknown): v is string => typeof v === 'string' && v.trim() !== '';

/** Characters an SQS message can carry (its documented set). */
export function sqsCanCarry(text: string): boolean {
  for (const ch of text) {
    const c = ch.codePointAt(0)!;
    const ok =
      c === 0x9 ||
      c === 0xa ||
      c === 0xd ||
      (c >= 0x20 && c <= 0xd7ff) ||
      (c >= 0xe000 && c <= 0xfffd) ||
      (c >= 0x10000 && c <= 0x10ffff);
    if (!ok) return false;
  }
  return true;
}

/** The fields that name things, as paths: "control characters ... in appKey, recordId/imageId, ..." */
const NAME_PATHS: Record<Service, string[][]> = {
  recording: [['appKey'], ['recordId'], ['roomId'], ['sessionId'], ['userId'], ['output', 'fileName']],
  screenshot: [['appKey'], ['imageId'], ['roomId'], ['sessionId'], ['output', 'fileName']],
};

/** C0 controls, DEL, C1 controls, and the bidirectional embeddings, overrides (U+202A–U+202E) and isolates. */
function holdsRefusedCharacter(text: string): boolean {
  for (const ch of text) {
    const c = ch.codePointAt(0)!;
    if (c <= 0x1f || (c >= 0x7f && c <= 0x9f) || (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069))
      return true;
  }
  return false;
}

function namesAreClean(service: Service, fields: Record<string, unknown>): boolean {
  return NAME_PATHS[service].every((path) => {
    let value: unknown = fields;
    for (const step of path) {
      const object = typeof value === 'object' && value !== null && !Array.isArray(value);
      value = object && Object.hasOwn(value as object, step) ? (value as Record<string, unknown>)[step] : undefined;
    }
    return typeof value !== 'string' || !holdsRefusedCharacter(value);
  });
}

/**
 * The body steps of a POST to a callback route: size after base64 decoding, strict UTF-8, JSON, the
 * minimal check (names included), characters SQS can carry. Status 200 means the body passes them all (the
 * signature aside).
 */
export function judgeBody(
  service: Service,
  body: string | Uint8Array | undefined,
  base64: boolean,
  maxBytes: number,
): Expected {
  let raw: string;
  if (body === undefined) raw = '';
  else if (base64) {
    const bytes = Buffer.from(body as string | Uint8Array);
    if (bytes.length > maxBytes) return fail('body_too_large');
    try {
      raw = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
    } catch {
      return fail('invalid_json');
    }
  } else {
    raw = body as string;
    if (Buffer.byteLength(raw, 'utf8') > maxBytes) return fail('body_too_large');
  }
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    return fail('invalid_json');
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return fail('invalid_body');
  const fields = json as Record<string, unknown>;
  const type = typeValue(fields.type);
  if (type === null || !TYPES[service].includes(type)) return fail('invalid_body');
  if (!nonBlank(fields.appKey)) return fail('invalid_body');
  if (!nonBlank(fields[ID_FIELD[service]])) return fail('invalid_body');
  if (!namesAreClean(service, fields)) return fail('invalid_body');
  if (!sqsCanCarry(raw) || !sqsCanCarry(fields.appKey)) return fail('invalid_body');
  return accepted(raw, fields.appKey);
}

export interface SignatureFacts {
  /** The body's appKey and the secrets configured for it. */
  appKey: string;
  secrets: readonly string[] | undefined;
  /** The values the request carries once the query-before-headers rule is applied, trimmed; absent: undefined. */
  nonce?: string;
  timestamp?: string;
  signature?: string;
  claimedAppKey?: string;
  nowMs: number;
  toleranceS: number;
}

const sha1 = (text: string) => createHash('sha1').update(text, 'utf8').digest('hex');

/** The signature steps in `enforce` mode, in the order of docs/contract.md §2; null when the request is accepted. */
export function judgeSignature(f: SignatureFacts): string | null {
  if (f.claimedAppKey !== undefined && f.claimedAppKey !== f.appKey) return 'invalid_signature';
  if (!f.secrets || f.secrets.length === 0) return 'unknown_app_key';
  if (!f.nonce || !f.timestamp || !f.signature) return 'missing_signature';
  // "A timestamp with a leading zero: invalid", before any secret is tried.
  if (/^0\d/.test(f.timestamp)) return 'invalid_signature';
  const presented = f.signature.toLowerCase();
  if (!f.secrets.some((s) => sha1(s + f.nonce + f.timestamp) === presented)) return 'invalid_signature';
  if (!/^\d{1,16}$/.test(f.timestamp)) return 'stale_timestamp';
  const n = Number(f.timestamp);
  const ms = n < 1e11 ? n * 1000 : n;
  return Math.abs(f.nowMs - ms) > f.toleranceS * 1000 ? 'stale_timestamp' : null;
}
