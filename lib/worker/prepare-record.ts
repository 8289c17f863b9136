// The first step of the worker, for each SQS record: read what the ingest put in it and parse the callback in
// full. What comes out is a record of the batch (lib/domain/batch.ts): applied to its task, or kept aside for the
// reason found here.
import type { SQSRecord } from 'aws-lambda';
import { type BatchRecord, type ParsedRecord, quarantineEntryOf } from '../domain/batch.ts';
import { parseCallback, type Callback } from '../domain/callback.ts';
import { namedTask } from '../domain/minimal-check.ts';
import type { Service } from '../platform/services.ts';
import { REPLAYED_SIGNATURE_DETAIL } from '../domain/replay-claim.ts';
import type { DeliveredCallback, QuarantineEntry, QuarantineReason } from '../domain/task-store.ts';
import { sequenceOf } from '../domain/task-counts.ts';
import { withFields, type Logger } from '../log.ts';
import { isSetAside, type SignatureMode, type SignatureVerdict } from '../signature/verdicts.ts';
import { Attr, readRecord, readSender, type QueuedCallback } from '../queue-message.ts';

/**
 * A message of the batch read and parsed: a record to apply to its task, or one kept aside for a reason found
 * on the way (lib/domain/batch.ts). `now`: the receive time of a message that names none.
 */
export function prepareRecord(record: SQSRecord, log: Logger, now: number): BatchRecord {
  const read = readRecord(record);
  const requestId = read.ok
    ? (read.message.requestId ?? undefined)
    : record.messageAttributes?.[Attr.requestId]?.stringValue || undefined;
  const resentBy = read.ok
    ? read.message.resentBy
    : record.messageAttributes?.[Attr.resentBy]?.stringValue || undefined;
  const base = {
    messageId: record.messageId,
    receiveCount: read.ok ? read.message.receiveCount : Number(record.attributes?.ApproximateReceiveCount) || undefined,
    receivedBefore: read.ok && receivedBefore(read.message),
    resent: read.ok && read.message.resent === true,
    // Each line of a copy sent again says who sent it (a replay out of the archive is logged as one).
    log: withFields(log, { requestId, ...(resentBy ? { resentBy } : {}) }),
    ...(resentBy ? { resentBy } : {}),
    outcome: 'failed' as const,
  };
  // Without its service the body cannot be parsed; it is kept aside rather than retried forever.
  if (!read.ok)
    return { ...base, parsed: { kind: 'aside', entry: unreadableEntry(record, read.reason, now), unreadable: true } };
  return { ...base, parsed: parseMessage(read.message, record) };
}

function parseMessage(msg: QueuedCallback, record: SQSRecord): ParsedRecord {
  const aside = (reason: QuarantineReason, detail: string, named: NamedTask): ParsedRecord => ({
    kind: 'aside',
    entry: quarantineEntry(msg, reason, detail, named),
    unreadable: false,
  });
  const parsed = parseQueued(msg.service, msg.body);
  if (!parsed.ok) return aside('invalid_callback', parsed.detail, parsed.named);
  const cb = parsed.callback;
  const named = { appKey: cb.appKey, id: cb.id };
  if (isSetAside(msg.mode, msg.verdict)) return aside(...setAsideReason(msg.verdict, msg.mode), named);
  // The ingest received another body under this signature first (its claim): whichever the worker meets first.
  if (msg.claim === 'replayed') return aside('replayed_signature', REPLAYED_SIGNATURE_DETAIL, named);
  const sequence = sequenceOf(record.attributes?.SequenceNumber);
  return { kind: 'apply', callback: cb, delivered: toDelivered(msg, cb), sequence };
}

type NamedTask = { appKey: string | null; id: string | null };

/** The quarantine entry of a message kept aside, filed under the task it names when it names one. */
function quarantineEntry(
  msg: QueuedCallback,
  reason: QuarantineReason,
  detail: string,
  named: NamedTask,
): QuarantineEntry {
  const filed = { appKey: named.appKey ?? (msg.appKey || null), taskId: named.id };
  return quarantineEntryOf({ ...msg, raw: msg.body }, { reason, detail }, filed);
}

/** A message that is not a callback message at all: kept aside whole, with who sent it when that is known. */
function unreadableEntry(record: SQSRecord, detail: string, now: number): QuarantineEntry {
  const received = {
    service: 'recording' as const,
    raw: record.body ?? '',
    receivedAt: Number(record.attributes?.SentTimestamp) || now,
    verdict: 'unverified' as const,
    requestId: record.messageAttributes?.[Attr.requestId]?.stringValue || null,
    messageId: record.messageId,
    mode: 'enforce' as const,
    sender: readSender(record.messageAttributes?.[Attr.sender]?.stringValue),
  };
  return quarantineEntryOf(received, { reason: 'invalid_callback', detail }, { appKey: null, taskId: null });
}

/** Why each verdict other than valid keeps a callback from being applied (see isSetAside). */
const verdictsSetAside: Record<Exclude<SignatureVerdict, 'valid' | 'not_checked'>, [QuarantineReason, string]> = {
  invalid: [
    'invalid_signature',
    'the signature matches no configured secret of this appKey, its timestamp has a leading zero, or the request ' +
      'named another appKey',
  ],
  missing: ['missing_signature', 'the request carried no complete signature (nonce, timestamp and signature)'],
  stale: ['stale_timestamp', 'the signature timestamp was outside the accepted window'],
  unknown_app_key: ['unknown_app_key', 'no callback secret is configured for this appKey'],
  unverified: ['unverified', 'the callback secrets could not be read, so the signature was not checked'],
};

/** The quarantine reason of a verdict that isSetAside keeps from being applied, with a sentence. */
function setAsideReason(verdict: SignatureVerdict, mode: SignatureMode): [QuarantineReason, string] {
  if (verdict === 'valid' || verdict === 'not_checked')
    return ['unverified', `the signature was not checked, in signature mode ${mode}`];
  return verdictsSetAside[verdict];
}

export type ParsedQueued =
  | { ok: true; callback: Callback }
  | { ok: false; detail: string; named: { appKey: string | null; id: string | null } };

/**
 * The full parse of a queued body, with today's code. A body that fails it still names its task when it
 * has an id (`type: 2` without `output`, say), so the quarantine can file it under that task.
 */
export function parseQueued(service: Service, body: string): ParsedQueued {
  const named = () => {
    try {
      return namedTask(service, JSON.parse(body));
    } catch {
      return { appKey: null, id: null };
    }
  };
  try {
    const parsed = parseCallback(service, body);
    if (parsed.ok) return { ok: true, callback: parsed.callback };
    return { ok: false, detail: parsed.errors.join('; '), named: named() };
  } catch (err) {
    // A body nested deeper than the parser can recurse (RangeError) passes the ingest's minimal check but
    // can never be read here: retrying it would only fail again, so it is kept aside.
    const detail =
      err instanceof RangeError
        ? 'the body is nested too deeply to be read'
        : `the body could not be read (${err instanceof Error ? err.name : 'error'})`;
    return { ok: false, detail, named: err instanceof RangeError ? { appKey: null, id: null } : named() };
  }
}

/** A queued message and its parsed callback, as the store applies them. */
export function toDelivered(msg: QueuedCallback, callback: Callback): DeliveredCallback {
  return {
    callback,
    raw: msg.body,
    receivedAt: msg.receivedAt,
    verdict: msg.verdict,
    mode: msg.mode,
    requestId: msg.requestId,
    messageId: msg.messageId,
    replayKey: msg.replayKey,
    deliveryStored: msg.claim === 'stored',
    heldSignature: msg.heldSignature,
    sender: msg.sender,
    redelivered: receivedBefore(msg),
  };
}

/** Whether a copy of the message may have been applied before: it was received before, or sent again. */
function receivedBefore(msg: QueuedCallback): boolean {
  return (msg.receiveCount ?? 1) > 1 || msg.resent === true;
}
