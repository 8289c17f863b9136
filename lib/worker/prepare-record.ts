// The first step of the worker, for each SQS record: read what the ingest put in it and parse the
// callback in full. What comes out is applied to its task, or kept aside for the reason found here.
import type { SQSRecord } from 'aws-lambda';
import { parseCallback, type Callback } from '../domain/callback.ts';
import { namedTask } from '../domain/minimal-check.ts';
import type { Service } from '../platform/services.ts';
import { REPLAYED_SIGNATURE_DETAIL } from '../domain/replay-claim.ts';
import type { DeliveredCallback, QuarantineReason } from '../domain/task-store.ts';
import { fileNameOf } from '../domain/task.ts';
import { sequenceOf } from '../domain/task-counts.ts';
import { compositeKey } from '../text.ts';
import { isSetAside, type SignatureMode, type SignatureVerdict } from '../signature/verdicts.ts';
import { readRecord, type QueuedCallback } from '../queue-message.ts';

/** How the records of one task are counted: their header's absorbed sequence number, or null without one. */
export interface TaskCounting {
  absorbed: string | null;
  /** Its records carry sequence numbers but the header's could not be read: they fail, and come again. */
  unknown: boolean;
  /** A record was kept aside after it may have written part of itself: the task is recounted. */
  recount: boolean;
}

/** A record read and parsed: applied to its task, or kept aside for a reason found on the way. */
export type Prepared =
  | { kind: 'unreadable'; record: SQSRecord; detail: string }
  | {
      kind: 'aside';
      msg: QueuedCallback;
      reason: QuarantineReason;
      detail: string;
      named: { appKey: string | null; id: string | null };
    }
  /** `sequence`: the message's SQS sequence number, fixed-width (lib/domain/task-counts.ts); null without one. */
  | { kind: 'apply'; msg: QueuedCallback; cb: Callback; sequence: string | null };

export function prepareRecord(record: SQSRecord): Prepared {
  const read = readRecord(record);
  // Without its service the body cannot be parsed; it is kept aside rather than retried forever.
  if (!read.ok) return { kind: 'unreadable', record, detail: read.reason };
  const msg = read.message;
  const parsed = parseQueued(msg.service, msg.body);
  if (!parsed.ok) return { kind: 'aside', msg, reason: 'invalid_callback', detail: parsed.detail, named: parsed.named };
  const cb = parsed.callback;
  if (isSetAside(msg.mode, msg.verdict)) {
    const [reason, detail] = setAsideReason(msg.verdict, msg.mode);
    return { kind: 'aside', msg, reason, detail, named: { appKey: cb.appKey, id: cb.id } };
  }
  // The ingest received another body under this signature first (its claim): whichever the worker meets first.
  if (msg.claim === 'replayed') {
    const named = { appKey: cb.appKey, id: cb.id };
    return { kind: 'aside', msg, reason: 'replayed_signature', detail: REPLAYED_SIGNATURE_DETAIL, named };
  }
  return { kind: 'apply', msg, cb, sequence: sequenceOf(record.attributes?.SequenceNumber) };
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

/** The task a prepared record is applied to (appKey and id), or null when it is kept aside. */
export function taskKeyOf(p: Prepared): string | null {
  return p.kind === 'apply' ? compositeKey(p.cb.appKey, p.cb.id) : null;
}

/**
 * Record indexes grouped by the item their callback is applied to (a record kept aside is a group alone).
 * An item's group lies within its task's: the records of one task are known done when its groups are.
 */
export function groupByItem(prepared: readonly Prepared[]): Map<string, number[]> {
  return groupIndexes(prepared, (p, i) =>
    p.kind === 'apply' ? compositeKey(p.cb.appKey, p.cb.id, fileNameOf(p.cb) ?? '') : compositeKey(i),
  );
}

/** Record indexes grouped by the task their callback is applied to (records kept aside are left out). */
export function groupByTask(prepared: readonly Prepared[]): Map<string, number[]> {
  return groupIndexes(prepared, taskKeyOf);
}

function groupIndexes(
  prepared: readonly Prepared[],
  keyOf: (p: Prepared, i: number) => string | null,
): Map<string, number[]> {
  const groups = new Map<string, number[]>();
  prepared.forEach((p, i) => {
    const key = keyOf(p, i);
    if (key === null) return;
    const group = groups.get(key);
    if (group) group.push(i);
    else groups.set(key, [i]);
  });
  return groups;
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
export function receivedBefore(msg: QueuedCallback): boolean {
  return (msg.receiveCount ?? 1) > 1 || msg.resent === true;
}

/** Whether this is the message's last receive: failing now, it goes to the dead-letter queue. */
export function isLastReceive(msg: QueuedCallback, maxReceiveCount: number): boolean {
  return (msg.receiveCount ?? 1) >= maxReceiveCount;
}
