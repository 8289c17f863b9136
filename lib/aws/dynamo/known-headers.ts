// Task headers a worker has seen: their service and identity rank. Both only ever improve, so an old copy
// is a stale read of the header, never a wrong one; a file callback whose identity would not improve a
// header seen with its service needs not read it. Bounded: the oldest seen go first.
import type { Item, Key } from './table-client.ts';

interface KnownHeader {
  service: string;
  identRank: string;
}

export class KnownHeaders {
  private readonly known = new Map<string, KnownHeader>();
  private readonly max: number;

  /** `max` headers at most (0: none remembered). */
  constructor(max: number) {
    this.max = max;
  }

  get(key: Key): KnownHeader | undefined {
    return this.known.get(`${key.sk}\u0000${key.pk}`);
  }

  remember(key: Key, header: Item | null): void {
    if (!header || this.max <= 0) return;
    const id = `${key.sk}\u0000${key.pk}`;
    this.known.delete(id);
    this.known.set(id, { service: header.service, identRank: header.identRank });
    // Oldest first out: a Map iterates in insertion order.
    if (this.known.size > this.max) this.known.delete(this.known.keys().next().value!);
  }
}
