// Puts a worker holds back for the next write of the same item in its batch to carry (one write for both):
// a file written by several records of a batch, a header that the batch's count writes anyway. A held item
// is remembered as if written, with the version it replaces, so that the next put built on that copy writes
// it too; that put failing (another writer came in between) loses what was held, so it throws instead.
import { compositeKey } from '../../text.ts';
import type { KnownItems } from './known-items.ts';
import type { Item, Key } from './table-client.ts';

export interface HeldPut {
  known: KnownItems;
  item: Item;
  /** The item it replaces (null: absent), whose version the put is conditioned on. */
  previous: Item | null;
}

const keyId = (key: Key): string => compositeKey(key.pk, key.sk);

export class HeldPuts {
  private readonly held = new Map<string, HeldPut>();

  /** Holds a put: the item is remembered as written, with the version it replaces. */
  hold(put: HeldPut): void {
    this.held.set(keyId(put.item as Key), put);
    put.known.remember(put.item as Key, { ...put.item, ver: put.previous?.ver });
  }

  /** The put held for an item, taken: whoever takes it writes it. */
  take(key: Key): HeldPut | undefined {
    const id = keyId(key);
    const put = this.held.get(id);
    this.held.delete(id);
    return put;
  }

  /** Drops a held put and forgets its copy: the records that held it failed, and come again. */
  drop(key: Key): void {
    const put = this.take(key);
    if (put) put.known.remember(key, null);
  }
}
