// Items a worker has written or read (task headers, files), with their version. A copy may be stale:
// another worker may have written the item since. It is used only where a stale copy costs a retry and
// never a wrong result: as the version a versioned put expects (a stale one fails the put, and the item
// is read again), to recognise a callback key already recorded (an item never forgets a key), and as a
// header read eventually consistent (service and identity only ever improve). Bounded: the least
// recently used go first.
import { compositeKey } from '../../../text.ts';
import type { Item, Key } from '../table/table-client.ts';

export class KnownItems {
  private readonly known = new Map<string, Item>();
  private readonly max: number;

  /** `max` items at most (0: none remembered). */
  constructor(max: number) {
    this.max = max;
  }

  get(key: Key): Item | undefined {
    const id = compositeKey(key.pk, key.sk);
    const item = this.known.get(id);
    if (item) {
      this.known.delete(id);
      this.known.set(id, item);
    }
    return item;
  }

  /** The item as written or read (null: absent or unknown, which forgets it). */
  remember(key: Key, item: Item | null): void {
    if (this.max <= 0) return;
    const id = compositeKey(key.pk, key.sk);
    this.known.delete(id);
    if (!item) return;
    this.known.set(id, item);
    // Least recently used first out: a Map iterates in insertion order.
    if (this.known.size > this.max) this.known.delete(this.known.keys().next().value!);
  }

  /**
   * Forgets every item of a partition whose sort key starts with one of `prefixes`: what a failed write would
   * have made known is not known (a write refused or lost leaves the table as it was, not as the copy says).
   */
  forget(pk: string, prefixes: readonly string[]): void {
    for (const id of [...this.known.keys()]) {
      const [p, sk] = JSON.parse(id) as [string, string];
      if (p === pk && prefixes.some((prefix) => sk.startsWith(prefix))) this.known.delete(id);
    }
  }
}
