// Turns one SQS record into what the ingest put in it (lib/queue-message.ts).
import type { SQSRecord } from 'aws-lambda';
import {
  Attr,
  type QueuedCallback,
  type Service,
  type SignatureMode,
  type SignatureVerdict,
} from '../queue-message.ts';

const SERVICES: readonly Service[] = ['recording', 'screenshot'];
const VERDICTS: readonly SignatureVerdict[] = [
  'valid',
  'invalid',
  'missing',
  'stale',
  'unknown_app_key',
  'unverified',
  'not_checked',
];
const MODES: readonly SignatureMode[] = ['enforce', 'report', 'off'];

export type ReadRecordResult = { ok: true; message: QueuedCallback } | { ok: false; reason: string };

export function readRecord(record: SQSRecord): ReadRecordResult {
  const attr = (name: string): string | undefined => record.messageAttributes?.[name]?.stringValue ?? undefined;
  const service = attr(Attr.service) as Service | undefined;
  if (!service || !SERVICES.includes(service))
    return { ok: false, reason: `message attribute ${Attr.service} is missing or unknown` };
  // No verdict (a message the ingest did not write): nobody vouched for it.
  const verdict = (attr(Attr.verdict) ?? 'unverified') as SignatureVerdict;
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
      verdict: VERDICTS.includes(verdict) ? verdict : 'unverified',
      mode: MODES.includes(mode) ? mode : 'enforce',
      replayKey: attr(Attr.replayKey) ?? null,
      receiveCount: Number(record.attributes?.ApproximateReceiveCount) || undefined,
    },
  };
}
