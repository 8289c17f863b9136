// What the steps of the write path (./apply-callback.ts, ./file-write.ts, ./header-write.ts) share: the
// items this worker remembers, their reads and versioned puts, the pause between attempts, and what a
// write leaves its header to count.
import type { Callback } from '../../../domain/callback.ts';
import type { Capacity, DeliveredCallback, QuarantineEntry } from '../../../domain/task-store.ts';
import { fileState, type FileRecord, type FileTransition } from '../../../domain/task.ts';
import type { WriteEffect } from '../../../domain/stored-write.ts';
import { markAfterWrite, type WriteCharge } from '../../../domain/task-counts.ts';
import { fileFromItem, markOf, type BodyRef } from '../table/items.ts';
import type { KnownItems } from './known-items.ts';
import type { NewTaskArming } from '../time/deadline-arming.ts';
import { ContentionError, backoff, type Item, type Key, type TableClient } from '../table/table-client.ts';
import type { HeldPut, HeldPuts } from './held-puts.ts';

export type FileChange = WriteEffect['file'];
export type HeaderBefore = WriteEffect['headerBefore'];
export type Outcome =
  | {
      outcome: 'applied';
      transition: FileTransition | null;
      file: FileChange;
      headerBefore: HeaderBefore;
      charge: WriteCharge;
    }
  | { outcome: 'duplicate'; file: FileChange; charge: WriteCharge }
  | Quarantine;

/**
 * How a write is charged to its header (lib/domain/task-counts.ts): its delivery's sequence number and the
 * last one the header had absorbed as its batch began; both null without sequence numbers.
 */
export interface Counting {
  seq: string | null;
  absorbed: string | null;
  /** The message was received before: without marks, what it finds in place may be its own, uncounted. */
  redelivered: boolean;
  /** Its file put may be held for the next write of the file in its batch (sequence numbers only). */
  hold: boolean;
  /**
   * Its header puts may be held for its batch's count to write (sequence numbers, first receive: the count
   * follows in the same batch; a redelivery reads and checks what is stored instead).
   */
  holdHeader: boolean;
}

export const countingOf = (d: Pick<DeliveredCallback, 'sequence' | 'absorbed' | 'redelivered' | 'hold'>): Counting => {
  const sequenced = !!d.sequence && !!d.absorbed;
  return {
    ...(sequenced ? { seq: d.sequence!, absorbed: d.absorbed! } : { seq: null, absorbed: null }),
    redelivered: d.redelivered === true,
    hold: sequenced && d.hold === true,
    holdHeader: sequenced && d.redelivered !== true,
  };
};

/**
 * Whether a file item as read carries the mark of a writer its header had not absorbed as this batch began
 * (lib/domain/task-counts.ts): in order, a delivery of this batch's messages by a process that stopped before
 * its batch was counted and its events were out. What that put joined (a held put carries the joins of the
 * earlier records of its file in its batch) may have made events true that no one published, and whose own
 * deliveries may come back in a batch that does not count the file: to events, the file before is unknown.
 */
export const unsettled = (c: Counting, file: Item | null): boolean => {
  const mark = markOf(file);
  return c.absorbed !== null && mark !== null && mark.seq > c.absorbed;
};

/** Whether marks count this write: a sequence number the header has not absorbed yet. */
export const marked = (c: Counting): boolean => c.seq !== null && c.absorbed !== null && c.seq > c.absorbed;
export type Quarantine = { outcome: 'quarantined'; reason: QuarantineEntry['reason']; detail: string };

/** How a write is charged: the file's transition, keys recorded beside the file or on it, and whether its change is
 * not known (a join found in place may be an earlier delivery's). */
export interface ChargeOf {
  transition?: FileTransition | null;
  /** Callbacks recorded beside the file (the header, an item of their own). */
  events?: number;
  /** Keys recorded on the file item, which its mark counts when the mark is not absorbed yet. */
  inline?: number;
  uncertain: boolean;
}

export interface ItemWritesOptions {
  /** Optimistic-concurrency attempts before giving up with a retryable error. */
  maxAttempts: number;
  /** Callback keys a file item records inline before further keys get items of their own. */
  inlineKeys: number;
  arming?: NewTaskArming | undefined;
}

/** One callback's write to its items: what every step of it takes. */
export interface CallbackWrite {
  readonly w: ItemWrites;
  readonly cb: Callback;
  readonly ref: BodyRef;
  readonly counting: Counting;
  readonly cap: Capacity;
  readonly headerKey: Key;
}

export class ItemWrites {
  readonly table: TableClient;
  /** The task headers this worker remembers, shared with the count updates that write them too. */
  readonly headers: KnownItems;
  /** The file items this worker last wrote or read. */
  readonly files: KnownItems;
  /** Optimistic-concurrency attempts before giving up with a retryable error. */
  readonly maxAttempts: number;
  /** Callback keys a file item records inline before further keys get items of their own. */
  readonly inlineKeys: number;

  /**
   * Arms a task about to be created (`db` on the item, its DUE entry at the batch's end): ../time/deadline-arming.ts.
   */
  readonly arming: NewTaskArming | undefined;
  /** Puts held for the next write of their item (putItem), shared with the header's count. */
  readonly held: HeldPuts;

  constructor(
    table: TableClient,
    known: { headers: KnownItems; files: KnownItems; held: HeldPuts },
    opts: ItemWritesOptions,
  ) {
    this.held = known.held;
    this.table = table;
    this.headers = known.headers;
    this.files = known.files;
    this.maxAttempts = opts.maxAttempts;
    this.inlineKeys = opts.inlineKeys;
    this.arming = opts.arming;
  }

  /** A file item as a record; its attempts are counted by `fileAfter` or on read, not here. */
  fileRecord(file: Item): FileRecord {
    return fileFromItem(file);
  }

  /** What a write leaves its header to count, from the file item it left or found (ChargeOf). */
  charge(c: Counting, fileItem: Item | null, of: ChargeOf): WriteCharge {
    const record = fileItem ? this.fileRecord(fileItem) : null;
    const byMark = unsettled(c, fileItem);
    return {
      sequence: c.seq,
      file: record ? { name: record.fileName, state: fileState(record), mark: markOf(fileItem) } : null,
      transition: of.transition ?? null,
      events: (of.events ?? 0) + (byMark ? 0 : (of.inline ?? 0)),
      uncertain: c.seq === null && c.redelivered && of.uncertain,
    };
  }

  /** A file's mark after a write that records `newEvents` callbacks on it (none without sequence numbers). */
  markFor(c: Counting, file: Item | null, before: FileRecord | null, newEvents: number) {
    if (c.seq === null || c.absorbed === null) return markOf(file);
    return markAfterWrite(markOf(file), fileState(before), c.seq, c.absorbed, newEvents);
  }

  /** An item read (strongly consistent unless said) and remembered; a put of it held is written first. */
  async readItem(known: KnownItems, key: Key, cap: Capacity, consistent = true): Promise<Item | null> {
    await this.writeHeld(key, cap);
    const item = await this.table.get(key, cap, consistent);
    known.remember(key, item);
    return item;
  }

  /**
   * A versioned put over `previous` (null: absent); the item is remembered as written. `hold`: not sent yet
   * (./held-puts.ts), for the next put of the item, or `writeHeld`, to write. A put over a held copy that
   * fails loses what was held: it throws then.
   */
  async putItem(
    known: KnownItems,
    item: Item,
    previous: Item | null,
    cap: Capacity,
    held: { hold: boolean; rebuild?: (base: Item | null) => Item } = { hold: false },
  ): Promise<boolean> {
    const { hold, rebuild } = held;
    // A task is born armed (../time/deadline-arming.ts); the arm is forgotten if the put finds the task created.
    const creates = previous === null && known === this.headers && this.arming !== undefined;
    if (creates) this.arming!.arm(item);
    if (hold) return this.held.hold({ known, item, previous, ...(rebuild ? { rebuild } : {}) });
    const waiting = this.held.get(item as Key);
    // A put not built on what is held: the held one goes first, and this one then fails on its version.
    if (waiting && previous !== waiting.copy) await this.writeHeld(item as Key, cap);
    const carries = waiting !== undefined && previous === waiting.copy;
    if (carries) this.held.take(item as Key);
    const base = carries ? waiting.previous : previous;
    const ok = await this.table.putVersioned(item, base?.ver, cap);
    if (creates && !ok) this.arming!.forget(item);
    if (ok) known.remember(item as Key, { ...item, ver: (base?.ver ?? 0) + 1 });
    else if (carries) {
      // What was held is written over the item as stored, when it can be; this put is tried again by its caller.
      await this.writeOver(waiting, cap);
    }
    return ok;
  }

  /** Writes the put held for an item, if any (see putItem). */
  async writeHeld(key: Key, cap: Capacity): Promise<void> {
    const held = this.held.take(key);
    if (!held) return;
    if (await this.table.putVersioned(held.item, held.previous?.ver, cap))
      held.known.remember(key, { ...held.item, ver: (held.previous?.ver ?? 0) + 1 });
    else await this.writeOver(held, cap);
  }

  /**
   * A held put whose item was written by another meanwhile: its callbacks joined again into the item as
   * stored (HeldPut.rebuild), or, when they cannot be, an error: they are not stored, and their records fail.
   */
  private async writeOver(held: HeldPut, cap: Capacity): Promise<void> {
    const key: Key = { pk: held.item.pk, sk: held.item.sk };
    held.known.remember(key, null);
    for (let attempt = 1; held.rebuild && attempt <= this.maxAttempts; attempt++) {
      const stored = await this.table.get(key, cap);
      const item = held.rebuild(stored);
      if (item === stored) return held.known.remember(key, stored);
      if (await this.table.putVersioned(item, stored?.ver, cap))
        return held.known.remember(key, { ...item, ver: (stored?.ver ?? 0) + 1 });
    }
    throw new ContentionError(`the item ${key.sk} was written by another writer while a put of it was held`);
  }

  /** Whether a put of the item is held (its copy is then the one to build on). */
  holds(key: Key): boolean {
    return this.held.get(key) !== undefined;
  }

  serviceMismatch(cb: Callback, header: Item): Quarantine {
    const detail = `task ${cb.id} is a ${header.service} task; this is a ${cb.service} callback`;
    return { outcome: 'quarantined', reason: 'service_mismatch', detail };
  }

  /** Before another attempt: a back-off after a conflict, none after a wrong guess that an item was absent. */
  async pause(attempt: number, cb: Callback, afterGuess = false): Promise<void> {
    if (attempt > this.maxAttempts)
      throw new ContentionError(`task ${cb.id} stayed contended after ${this.maxAttempts} attempts`);
    if (!afterGuess) await backoff(attempt);
  }
}
