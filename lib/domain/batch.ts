// A batch of queued callbacks as the worker hands it to its store, and what comes back (docs/task-store.md, "The
// batch protocol"). The worker reads each message into a record; the store applies the batch in one call,
// fills in each record's outcome and gives each task's events to publish; once they are out (or not), the store
// finishes what waits on them. How the store gets there (which items go first, puts held for a later write, one
// count of each task's header, the deadlines of new tasks) is its own business.
import type { Logger } from '../log.ts';
import type { Callback } from './callback.ts';
import type { TimeSettings } from './deadlines.ts';
import type { TaskEvent } from './task-events.ts';
import type { Service } from '../platform/services.ts';
import type { SignatureVerdict } from '../signature/verdicts.ts';
import type { ApplyResult, DeliveredCallback, QuarantineEntry, QuarantineReason } from './task-store.ts';

export type RecordOutcome = ApplyResult['outcome'] | 'failed';

/** What the worker read of a message: a callback to apply to its task, or one to keep aside and why. */
export type ParsedRecord =
  /** `sequence`: the message's SQS sequence number, fixed-width (lib/domain/task-counts.ts); null without one. */
  | { kind: 'apply'; callback: Callback; delivered: DeliveredCallback; sequence: string | null }
  /** `unreadable`: not even a callback message (no service): it is never given up, it cannot be read again. */
  | { kind: 'aside'; entry: QuarantineEntry; unreadable: boolean };

/** One message of a batch: what it brought, and, once applied, what became of it. */
export interface BatchRecord {
  readonly messageId: string;
  readonly parsed: ParsedRecord;
  /** The message's receive count as SQS gave it (absent outside SQS). */
  readonly receiveCount: number | undefined;
  /** A copy that may have been applied before: received before, or sent to the queue again. */
  readonly receivedBefore: boolean;
  /** A copy sent to the queue again (`callbacks dlq redrive`, `callbacks replay`, or SQS's own redrive). */
  readonly resent: boolean;
  /** Who sent it again, as its `resentBy` says (`dlq-redrive`, `archive-replay`); absent when nobody says. */
  readonly resentBy?: string;
  /** The record's logger: its lines carry the ingest's request id. */
  readonly log: Logger;
  outcome: RecordOutcome;
  /** The callback, once applied (or found a duplicate). */
  cb?: Callback;
  result?: Exclude<ApplyResult, { outcome: 'quarantined' }>;
  /** What its `callback_applied` line says. */
  fields?: Record<string, unknown>;
  /** Task events its write made true, once read. */
  events?: number;
  /** Why it failed, in one sentence, when it did. */
  error?: string;
}

/** What a batch is applied with. */
export interface BatchContext {
  log: Logger;
  /** Records applied at the same time. */
  concurrency: number;
  /** The queue's maxReceiveCount: a record failing its last receive goes to the dead-letter queue alone. */
  maxReceiveCount: number;
  now: () => number;
  /** The stage's durations (a resumed task's stall time in its event). */
  time?: TimeSettings;
  /** Task events are published: each task's are read off its count. */
  publishing: boolean;
}

/** Task events to publish, with the records that fail when they cannot be (they come again, and publish them). */
export interface EventsToPublish {
  records: BatchRecord[];
  events: TaskEvent[];
}

/** A batch applied: its events, and what waits on their publication. */
export interface AppliedBatch {
  events: EventsToPublish[];
  /** Once the events are out or not: what a published event allows (a stall removed), and forgetting what failed. */
  finish(): Promise<void>;
}

/** The store's side of a batch. */
export interface BatchWriter {
  applyBatch(records: readonly BatchRecord[], ctx: BatchContext): Promise<AppliedBatch>;
}

/** What a quarantine entry keeps of a delivery, whatever was parsed of it. */
export type DeliveryKept = Pick<
  DeliveredCallback,
  'raw' | 'receivedAt' | 'requestId' | 'messageId' | 'mode' | 'heldSignature' | 'sender'
> & { service: Service; verdict: SignatureVerdict };

/** The quarantine entry of a delivery kept aside (`reason`, `detail`), filed under the task it names, if any. */
export function quarantineEntryOf(
  d: DeliveryKept,
  why: { reason: QuarantineReason; detail: string },
  named: { appKey: string | null; taskId: string | null },
): QuarantineEntry {
  return {
    ...why,
    service: d.service,
    raw: d.raw,
    receivedAt: d.receivedAt,
    verdict: d.verdict,
    requestId: d.requestId,
    messageId: d.messageId,
    ...named,
    mode: d.mode,
    signature: d.heldSignature ?? null,
    sourceIp: d.sender?.sourceIp ?? null,
    userAgent: d.sender?.userAgent ?? null,
  };
}

/** Whether this is the record's last receive: failing now, it goes to the dead-letter queue. */
export function isLastReceive(record: BatchRecord, maxReceiveCount: number): boolean {
  return (record.receiveCount ?? 1) >= maxReceiveCount;
}

/** A record failing at its last receive: given up alone, to the dead-letter queue (never an unreadable one). */
export function isGivenUp(record: BatchRecord, maxReceiveCount: number): boolean {
  const unreadable = record.parsed.kind === 'aside' && record.parsed.unreadable;
  return record.outcome === 'failed' && !unreadable && isLastReceive(record, maxReceiveCount);
}

/**
 * Fails the records that were stored (applied or found duplicates) for a reason found after them: `event` names
 * the line each logs at `level`. They come again, and find their writes done.
 */
export function failStored(
  records: readonly BatchRecord[],
  error: string,
  event: string,
  level: 'warn' | 'error' = 'warn',
): void {
  for (const r of records) {
    if (r.outcome !== 'applied' && r.outcome !== 'duplicate') continue;
    r.error = error;
    r.log[level](event, { ...r.fields, outcome: r.outcome, error });
    r.outcome = 'failed';
  }
}

/** Fails the records whose task events could not be published: redelivered, they publish them again. */
export function failPublishing(records: readonly BatchRecord[], error: string): void {
  // The writes are durable; their events are not out.
  for (const r of records) {
    r.error = `its task events could not be published: ${error}`;
    r.log.error('events_publish_failed', { ...r.fields, outcome: r.outcome, events: r.events ?? 0, error });
    r.outcome = 'failed';
  }
}
