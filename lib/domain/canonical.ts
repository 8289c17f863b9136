import { createHash } from 'node:crypto';

/**
 * JSON with object keys sorted at every depth: two bodies are the same event when they are equal as
 * JSON whatever their key order (docs/contract.md §4), so identity is taken from this form.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const keys = Object.keys(value).sort();
  const parts: string[] = [];
  for (const k of keys) {
    const v = (value as Record<string, unknown>)[k];
    if (v === undefined) continue;
    parts.push(`${JSON.stringify(k)}:${canonicalJson(v)}`);
  }
  return `{${parts.join(',')}}`;
}

/**
 * The event's identity: 128 bits of SHA-256 over the canonical JSON, as 22 base64url characters (it is stored in
 * every item that records the event, and in the ranks that order them: 10 bytes fewer each than hex).
 */
export function eventKey(body: unknown): string {
  return createHash('sha256').update(canonicalJson(body), 'utf8').digest().subarray(0, 16).toString('base64url');
}
