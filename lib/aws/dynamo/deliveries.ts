// Deliveries and the quarantine: the two kinds of item every delivery may write whatever its task. A
// delivery is its replay claim and its raw body at once; what can never be applied is kept aside.
import type { Capacity, DeliveredCallback, QuarantineEntry } from '../../domain/task-store.ts';
import { deliveryToItem, type BodyRef } from './items.ts';
import { noCapacity, type TableClient } from './table-client.ts';
import { Keys, dayOf } from './table.ts';

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
   * delivery again), else a replay. Keyed by the event key: the first delivery's body stays.
   */
  async claim(d: DeliveredCallback, ref: BodyRef, cap: Capacity): Promise<boolean> {
    const item = deliveryToItem(d, ref, this.expiry());
    if (!d.signatureKey) {
      await this.table.putIf(item, 'attribute_not_exists(pk)', undefined, cap);
      return true;
    }
    return this.table.putIf(item, 'attribute_not_exists(pk) OR eventKey = :k', { ':k': { S: d.callback.key } }, cap);
  }

  async quarantine(entry: QuarantineEntry): Promise<Capacity> {
    const cap = noCapacity();
    await this.table.put(
      {
        pk: Keys.quarantinePk(dayOf(entry.receivedAt)),
        sk: Keys.quarantineSk(entry.receivedAt, entry.messageId),
        kind: 'quarantine',
        ...entry,
        expiresAt: this.expiry(),
      },
      cap,
    );
    return cap;
  }

  async quarantineParsed(d: DeliveredCallback, reason: QuarantineEntry['reason'], detail: string, cap: Capacity) {
    const c = await this.quarantine({
      reason,
      detail,
      service: d.callback.service,
      raw: d.raw,
      receivedAt: d.receivedAt,
      verdict: d.verdict,
      requestId: d.requestId,
      messageId: d.messageId,
      appKey: d.callback.appKey,
      taskId: d.callback.id,
    });
    cap.read += c.read;
    cap.write += c.write;
  }

  /** When the raw body may go (epoch seconds, the TTL attribute). */
  expiry(): number {
    return Math.floor(this.now() / 1000) + this.ttlDays * 86400;
  }
}
