// Turns API Gateway's body field back into the exact text the sender posted, enforces the size limit and
// parses it. The text (not a re-serialisation) is what gets enqueued, so nothing here may alter it.
import { Buffer } from 'node:buffer';

export type BodyResult =
  | { ok: true; raw: string; json: unknown; bytes: number }
  | { ok: false; code: 'body_too_large' | 'invalid_json'; message: string };

// fatal: invalid UTF-8 is an error, not silently replaced; ignoreBOM: a BOM is kept, so the enqueued text
// is exactly what was sent (JSON.parse then refuses it, as RFC 8259 lets a parser do).
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

export function decodeBody(body: string | undefined, isBase64Encoded: boolean, maxBytes: number): BodyResult {
  const tooLarge = (): BodyResult => ({
    ok: false,
    code: 'body_too_large',
    message: `The body is larger than the limit of ${maxBytes} bytes.`,
  });

  let raw = body ?? '';
  let bytes: number;
  if (isBase64Encoded) {
    const decoded = Buffer.from(raw, 'base64');
    bytes = decoded.length;
    if (bytes > maxBytes) return tooLarge();
    try {
      raw = utf8.decode(decoded);
    } catch {
      return { ok: false, code: 'invalid_json', message: 'The body is not valid UTF-8.' };
    }
  } else {
    bytes = Buffer.byteLength(raw, 'utf8');
    if (bytes > maxBytes) return tooLarge();
  }

  if (raw.trim() === '')
    return { ok: false, code: 'invalid_json', message: 'The body is empty; a JSON object was expected.' };
  try {
    return { ok: true, raw, json: JSON.parse(raw), bytes };
  } catch {
    // The parser's own message quotes part of the body: keep it out of responses and logs.
    return { ok: false, code: 'invalid_json', message: 'The body is not valid JSON.' };
  }
}
