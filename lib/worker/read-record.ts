// Turns one SQS record into what the ingest put in it (lib/queue-message.ts).
import type { SQSRecord } from 'aws-lambda';
import {
  Attr,
  SERVICES,
  type HeldSignature,
  type QueuedCallback,
  type Service,
  type SignatureMode,
  type SignatureVerdict,
} from '../queue-message.ts';

const VERDICTS: readonly SignatureVerdict[] = [
  'valid',
  'invalid',
  'missing',
  'stale',
  'unknown_app_key',
  'not_checked',
];
const MODES: readonly SignatureMode[] = ['enforce', 'report', 'off'];

const SIGNATURE_FIELDS = ['nonce', 'timestamp', 'signature', 'appKey'] as const;

/** The held signature values of a message, or null when absent or not of the expected shape. */
export function readHeldSignature(text: string | undefined): HeldSignature | null {
  if (!text) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof parsed !== 'object' || parsed === null) return null;
  const raw = parsed as Record<string, unknown>;
  const from = (typeof raw.from === 'object' && raw.from !== null ? raw.from : {}) as Record<string, unknown>;
  const held: HeldSignature = { from: {} };
  for (const field of SIGNATURE_FIELDS) {
    if (typeof raw[field] === 'string') held[field] = raw[field];
    if (from[field] === 'query' || from[field] === 'header') held.from[field] = from[field];
  }
  return held;
}

export type ReadRecordResult = { ok: true; message: QueuedCallback } | { ok: false; reason: string };

export function readRecord(record: SQSRecord): ReadRecordResult {
  const attr = (name: string): string | undefined => record.messageAttributes?.[name]?.stringValue ?? undefined;
  const service = attr(Attr.service) as Service | undefined;
  if (!service || !SERVICES.includes(service))
    return { ok: false, reason: `message attribute ${Attr.service} is missing or unknown` };
  const verdict = (attr(Attr.verdict) ?? 'missing') as SignatureVerdict;
  const mode = (attr(Attr.mode) ?? 'enforce') as SignatureMode;
  const receivedAtRaw = Number(attr(Attr.receivedAt));
  const sentAt = Number(record.attributes?.SentTimestamp);
  return {
    ok: true,
    message: {
      messageId: record.messageId,
      body: record.body,
      service,
      appKey: attr(Attr.appKey) ?? '',
      receivedAt:
        Number.isFinite(receivedAtRaw) && receivedAtRaw > 0
          ? receivedAtRaw
          : Number.isFinite(sentAt)
            ? sentAt
            : Date.now(),
      requestId: attr(Attr.requestId) ?? null,
      verdict: VERDICTS.includes(verdict) ? verdict : 'missing',
      mode: MODES.includes(mode) ? mode : 'enforce',
      signatureKey: attr(Attr.signatureKey) ?? null,
      heldSignature: readHeldSignature(attr(Attr.signatureValues)),
      receiveCount: Number(record.attributes?.ApproximateReceiveCount) || undefined,
    },
  };
}
