// Deliveries and the quarantine: the two kinds of item every delivery may write whatever its task. A
// delivery is its replay claim and its raw body at once; what can never be applied is kept aside.
import { Buffer } from 'node:buffer';
import type { Capacity, DeliveredCallback, QuarantineApplied, QuarantineEntry } from '../../../domain/task-store.ts';
import type { SignatureVerdict } from '../../../signature/verdicts.ts';
import { deliveryToItem, expiresAtFor, type BodyRef } from '../table/items.ts';
import { noCapacity, type TableClient } from '../table/table-client.ts';
import { MAX_PARTITION_KEY_BYTES } from '../table/limits.ts';
import { EventsIndex, Index, Keys, SORT_AT, dayOf } from '../table/table.ts';

export class Deliveries {
  private readonly table: TableClient;
  private readonly ttlDays: number;
  private readonly now: () => number;

  constructor(table: TableClient, ttlDays: number, now: () => number) {
    this.table = table;
    this.ttlDays = ttlDays;
    this.now = now;
  }

  /**
   * The delivery's conditional put. Keyed by the replay key: absent, or holding the same event (this
   * delivery again), else a replay. Keyed by the event key: the first delivery's body stays. `indexed`:
   * listed among its task's callbacks (the byTaskTime keys); false for a callback already recorded, whose
   * first delivery is listed there (an earlier delivery of this very message, listed, stays as it is).
   */
  async claim(d: DeliveredCallback, ref: BodyRef, cap: Capacity, indexed = true): Promise<boolean> {
    const item = deliveryToItem(d, ref, this.expiry(), indexed);
    if (!d.replayKey) {
      // The event's first delivery holds this key: nothing to add.
      if (!indexed) return true;
      await this.table.putIf(item, 'attribute_not_exists(pk)', undefined, cap);
      return true;
    }
    const sameEvent = { ':k': { S: d.callback.key } };
    if (indexed) return this.table.putIf(item, 'attribute_not_exists(pk) OR eventKey = :k', sameEvent, cap);
    const unlisted = `attribute_not_exists(pk) OR (eventKey = :k AND attribute_not_exists(${EventsIndex.pk}))`;
    if (await this.table.putIf(item, unlisted, sameEvent, cap)) return true;
    return (await this.table.get({ pk: item.pk, sk: item.sk }, cap))?.eventKey === d.callback.key;
  }

  /** The delivery taken out of its task's callbacks (the byTaskTime index): its callback was refused. */
  async unindex(d: DeliveredCallback, ref: BodyRef, cap: Capacity): Promise<void> {
    const item = deliveryToItem(d, ref, this.expiry(), false);
    await this.table.putIf(item, 'eventKey = :k', { ':k': { S: d.callback.key } }, cap);
  }

  async quarantine(entry: QuarantineEntry): Promise<Capacity> {
    const cap = noCapacity();
    // The entries of one task are found through the bySession index, under keys of their own kind.
    const taskKey = entry.taskId ? Keys.quarantineTaskGsi(entry.taskId) : null;
    const indexed = taskKey !== null && Buffer.byteLength(taskKey, 'utf8') <= MAX_PARTITION_KEY_BYTES;
    await this.table.put(
      {
        ...entry,
        pk: Keys.quarantinePk(dayOf(entry.receivedAt)),
        sk: Keys.quarantineSk(entry.receivedAt, entry.messageId),
        kind: 'quarantine',
        ...(indexed ? { [Index.bySession.pk]: taskKey, [SORT_AT]: entry.receivedAt } : {}),
        expiresAt: this.expiry(),
      },
      cap,
    );
    return cap;
  }

  /** Marks an entry as applied; false when it already was (the first mark is kept). */
  async markQuarantineApplied(
    entry: Pick<QuarantineEntry, 'receivedAt' | 'messageId'>,
    applied: QuarantineApplied,
  ): Promise<boolean> {
    // A read and a conditional put rather than an UpdateItem: the worker's role, which shares this class,
    // is granted only the operations the worker performs.
    const cap = noCapacity();
    const key = {
      pk: Keys.quarantinePk(dayOf(entry.receivedAt)),
      sk: Keys.quarantineSk(entry.receivedAt, entry.messageId),
    };
    const item = await this.table.get(key, cap);
    if (!item || item.applied) return false;
    return this.table.putIf(
      { ...item, applied },
      'attribute_exists(pk) AND attribute_not_exists(applied)',
      undefined,
      cap,
    );
  }

  async quarantineParsed(d: DeliveredCallback, reason: QuarantineEntry['reason'], detail: string, cap: Capacity) {
    // A callback taken out of the quarantine already has its entry there.
    if (d.recovered) return;
    const c = await this.quarantine({
      reason,
      detail,
      service: d.callback.service,
      raw: d.raw,
      receivedAt: d.receivedAt,
      // Only a recovered callback carries `accepted_unverified`, and it returned above.
      verdict: d.verdict as SignatureVerdict,
      requestId: d.requestId,
      messageId: d.messageId,
      appKey: d.callback.appKey,
      taskId: d.callback.id,
      mode: d.mode,
      signature: d.heldSignature ?? null,
      sourceIp: d.sender?.sourceIp ?? null,
      userAgent: d.sender?.userAgent ?? null,
    });
    cap.read += c.read;
    cap.write += c.write;
  }

  /** When the raw body may go (epoch seconds, the TTL attribute). */
  expiry(): number {
    return expiresAtFor(this.now(), this.ttlDays);
  }
}
