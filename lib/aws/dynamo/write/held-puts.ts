// Puts a worker holds back for the next write of the same item in its batch to carry (one write for both):
// a file written by several records of a batch, a header that the batch's count writes anyway. A held item
// is remembered as if written, with the version it replaces, so that the next put built on that copy writes
// it too. When that put fails (another writer came in between: a copy this worker kept from an earlier batch
// of the task, since applied elsewhere), a held header is joined again into the header as stored
// (`rebuild`); a held file is not (what its batch charges was read off it), and its records fail instead.
import { compositeKey } from '../../../text.ts';
import type { KnownItems } from './known-items.ts';
import type { Item, Key } from '../table/table-client.ts';

export interface HeldPut {
  known: KnownItems;
  item: Item;
  /** The item it replaces (null: absent), whose version the put is conditioned on. */
  previous: Item | null;
  /** The held callbacks joined into another base (the item as stored), when they can be. */
  rebuild?: (base: Item | null) => Item;
}

/** A held put and the copy remembered for it: a put that carries it must be built on that copy. */
export type Held = HeldPut & { copy: Item };

const keyId = (key: Key): string => compositeKey(key.pk, key.sk);

export class HeldPuts {
  private readonly held = new Map<string, Held>();

  /**
   * Holds a put: the item is remembered as written, with the version it replaces. False when another put of
   * the item is held that this one is not built on (two writers of one item in a batch): as a versioned put
   * that failed, the caller reads the item (which writes the held put first) and tries again.
   */
  hold(put: HeldPut): boolean {
    const id = keyId(put.item as Key);
    const before = this.held.get(id);
    if (before && put.previous !== before.copy) return false;
    const copy = { ...put.item, ver: before ? before.previous?.ver : put.previous?.ver };
    const previous = before ? before.previous : put.previous;
    // Joined again, the callbacks held before this one come first, as they did.
    const first = before ? before.rebuild : (b: Item | null) => b;
    const rebuild = put.rebuild && first ? (base: Item | null) => put.rebuild!(first(base) as Item | null) : undefined;
    this.held.set(id, { ...put, previous, copy, rebuild });
    put.known.remember(put.item as Key, copy);
    return true;
  }

  /** The put held for an item. */
  get(key: Key): Held | undefined {
    return this.held.get(keyId(key));
  }

  /** The put held for an item, taken: whoever takes it writes it. */
  take(key: Key): Held | undefined {
    const id = keyId(key);
    const put = this.held.get(id);
    this.held.delete(id);
    return put;
  }

  /** Drops every put held for items of a partition whose sort key starts with one of `prefixes`. */
  forget(pk: string, prefixes: readonly string[]): void {
    for (const [id, put] of [...this.held]) {
      const key = put.item as Key;
      if (key.pk === pk && prefixes.some((prefix) => key.sk.startsWith(prefix))) this.held.delete(id);
    }
  }

  /** Drops a held put and forgets its copy: the records that held it failed, and come again. */
  drop(key: Key): void {
    const put = this.take(key);
    if (put) put.known.remember(key, null);
  }
}
