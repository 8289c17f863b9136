// The exactly-once write path, without transactions and without an item that every callback writes.
//
// 1. Every delivery is one conditional put: its replay claim and its raw body at once (keyed by appKey
//    and the replay key's digest, or the event key when the request carried no signature values). The
//    same key with another event key is a replay.
// 2. A callback is applied to exactly one item, in one versioned put that both joins its facts and
//    records its event key there: a slice or an upload to its file, a start or an end to the task's
//    header. A key found recorded means a duplicate; counts are the number of recorded keys. A file keeps
//    a few keys inline; further keys are recorded on items of their own (conditional puts), after the
//    file's join is written: the join is idempotent, so a crash between the two writes loses nothing.
// 3. A file callback writes the header only to create the task or to improve its identity (an earlier
//    callback before any start); it reads the header eventually consistent, which can only understate
//    what the header holds. A recording end also joins its file's size, before its key is recorded.
// 4. What can refuse a callback (an item's size, the task's service) is settled before its first write to
//    the task: a refused callback leaves nothing there.
//
// Every join is in lib/domain/task.ts; docs/task-store.md gives the layout and the argument.
import type { Callback } from '../../../domain/callback.ts';
import type { ApplyResult, Capacity, DeliveredCallback, WriteOutcome } from '../../../domain/task-store.ts';
import { REPLAYED_SIGNATURE_DETAIL } from '../../../domain/replay-claim.ts';
import { UnstorableCallbackError } from '../../../domain/task-store.ts';
import { errorSentence } from '../../../text.ts';
import { fileNameOf, identRankOf, isHeaderEvent, type FileRecord } from '../../../domain/task.ts';
import { storedWriteOf, type WriteEffect } from '../../../domain/stored-write.ts';
import type { TaskParts } from '../../../domain/task-parts.ts';
import type { AssembledTask } from '../table/assembled-task.ts';
import { bodyRefOf, keysOf, type BodyRef } from '../table/items.ts';
import type { Deliveries } from './deliveries.ts';
import { filesWithAttempts } from '../table/file-attempts.ts';
import { applyToFileItem } from './file-write.ts';
import { applyToHeaderItem } from './header-write.ts';
import { ItemWrites, countingOf, type Counting, type Outcome } from './item-writes.ts';
import { HeldPuts } from './held-puts.ts';
import { KnownItems } from './known-items.ts';
import { refusalOf } from './refusal.ts';
import { refusedByDynamo } from '../table/limits.ts';
import { noCapacity, type Item, type Key, type TableClient } from '../table/table-client.ts';
import type { NewTaskArming } from '../time/deadline-arming.ts';
import { Keys } from '../table/table.ts';

export interface WritePathOptions {
  /** Optimistic-concurrency attempts before giving up with a retryable error. */
  maxAttempts: number;
  /** Callback keys a file item records inline before further keys get items of their own. */
  inlineKeys: number;
  /** The task as it stands, read strongly consistent (for WriteOutcome.readTask). */
  readAfterWrite: (appKey: string, id: string, cap?: Capacity) => Promise<AssembledTask | null>;
  /** File items remembered as last written or read, so that the next callback of a file need not read it (0: none). */
  knownFiles: number;
  /** Arms a task about to be created (../time/deadline-arming.ts); absent, tasks are created unarmed. */
  arming?: NewTaskArming;
}

export class WritePath {
  private readonly deliveries: Deliveries;
  private readonly opts: WritePathOptions;
  private readonly items: ItemWrites;

  /** `headers`: the task headers this worker remembers, shared with the count updates that write them too. */
  /** `held`: the puts held for a later write of their item, shared with the count updates that write headers. */
  constructor(
    table: TableClient,
    deliveries: Deliveries,
    headers: KnownItems,
    opts: WritePathOptions,
    held = new HeldPuts(),
  ) {
    this.deliveries = deliveries;
    this.opts = opts;
    const files = new KnownItems(opts.knownFiles);
    this.items = new ItemWrites(table, { headers, files, held }, opts);
  }

  async applyCallback(d: DeliveredCallback): Promise<ApplyResult> {
    const cap = noCapacity();
    const ref = bodyRefOf(d);
    let claimed = false;
    // A delivery the ingest stored with its claim is not written again: that write was the claim.
    const claim = async (indexed: boolean) =>
      (claimed = d.deliveryStored === true || (await this.deliveries.claim(d, ref, cap, indexed)));
    const result = await this.applyWith(d.callback, ref, countingOf(d), claim, cap).catch((err: unknown) => {
      // DynamoDB refuses such an item every time (a size or number it cannot hold that the checks did not
      // foresee): permanent, unlike a throttle or a time-out.
      if (refusedByDynamo(err))
        throw new UnstorableCallbackError(`DynamoDB refused it: ${errorSentence(err)}`, { cause: err });
      throw err;
    });
    if (result.outcome === 'quarantined') {
      // A callback refused after its delivery was stored is not one of its task's callbacks.
      if (claimed) await this.deliveries.unindex(d, ref, cap);
      await this.deliveries.quarantineParsed(d, result.reason, result.detail, cap);
      return { ...result, capacity: cap };
    }
    const cb = d.callback;
    const effect: WriteEffect =
      result.outcome === 'duplicate'
        ? { outcome: 'duplicate', file: result.file, transition: null, headerBefore: 'unchanged' }
        : {
            outcome: 'applied',
            file: result.file,
            transition: result.transition,
            headerBefore: result.headerBefore,
          };
    const storedWith = (parts: TaskParts | null) => storedWriteOf(cb, effect, parts);
    const readParts = async (capacity?: Capacity) =>
      (await this.opts.readAfterWrite(cb.appKey, cb.id, capacity))?.parts ?? null;
    const fileName = fileNameOf(cb);
    const write: WriteOutcome = {
      file: result.file,
      charge: result.charge,
      fileAfter: async (capacity) => (fileName ? this.fileAfter(cb.appKey, cb.id, fileName, capacity) : null),
      readParts,
      storedWith,
      readTask: async (capacity) => storedWith(await readParts(capacity)),
    };
    if (result.outcome === 'duplicate') return { outcome: 'duplicate', write, capacity: cap };
    return { outcome: 'applied', transition: result.transition, write, capacity: cap };
  }

  /** Whether this worker remembers the task's header. */
  knowsHeader(appKey: string, id: string): boolean {
    return this.items.headers.get({ pk: Keys.taskPk(id), sk: Keys.headerSk(appKey) }) !== undefined;
  }

  /** Writes the put of a file held by its last callback (ItemWrites.putItem), if one is held. */
  /** Forgets the task's held puts and every copy of its items (TaskWriter.forgetTask). */
  forgetTask(appKey: string, id: string): void {
    const pk = Keys.taskPk(id);
    const prefixes = [Keys.headerSk(appKey), Keys.partsPrefix(appKey)];
    this.items.held.forget(pk, prefixes);
    this.items.headers.forget(pk, prefixes);
    this.items.files.forget(pk, prefixes);
  }

  writeHeld(appKey: string, id: string, fileName: string, cap: Capacity): Promise<void> {
    return this.items.writeHeld({ pk: Keys.taskPk(id), sk: Keys.fileSk(appKey, fileName) }, cap);
  }

  /** A file as this worker last wrote or read it, its attempts counted (../table/file-attempts.ts). */
  private async fileAfter(
    appKey: string,
    id: string,
    fileName: string,
    capacity: Capacity = noCapacity(),
  ): Promise<FileRecord | null> {
    const key = { pk: Keys.taskPk(id), sk: Keys.fileSk(appKey, fileName) };
    const item = this.items.files.get(key) ?? (await this.items.readItem(this.items.files, key, capacity));
    if (!item) return null;
    const [file] = await filesWithAttempts(this.items.table, appKey, id, [item], capacity);
    return file!;
  }

  /** Applies a callback once `claim` (its delivery's replay claim and raw body) holds. */
  private async applyWith(
    cb: Callback,
    ref: BodyRef,
    counting: Counting,
    claim: (indexed: boolean) => Promise<boolean>,
    cap: Capacity,
  ): Promise<Outcome> {
    const refused = refusalOf(cb);
    // DynamoDB refuses such a write every time: retrying would only end in the dead-letter queue.
    if (refused) return { outcome: 'quarantined', reason: 'invalid_callback', detail: refused };

    const plan = this.planOf(cb, counting);
    // The claim and the reads it does not depend on go out together; nothing is applied before the claim holds.
    const [claimOk, fileRead, headerRead] = await Promise.all([
      claim(!plan.knownDuplicate),
      this.readFileIfNeeded(plan, cap),
      this.readHeaderIfNeeded(plan, cap),
    ]);
    const file = plan.fileCopy ?? fileRead;
    const header = plan.headerCopy ?? headerRead;
    if (!claimOk) {
      return {
        outcome: 'quarantined',
        reason: 'replayed_signature',
        detail: REPLAYED_SIGNATURE_DETAIL,
      };
    }
    if (header && header.service !== cb.service) return this.items.serviceMismatch(cb, header);
    const c = { w: this.items, cb, ref, counting, cap, headerKey: plan.headerKey };
    if (plan.inHeader) {
      const optimistic = plan.guessed || plan.headerCopy !== undefined;
      return applyToHeaderItem(c, header, plan.fileKey && { key: plan.fileKey, read: file }, optimistic);
    }
    const target = { key: plan.fileKey!, name: plan.fileName!, read: file };
    const optimistic = plan.guessed || plan.fileCopy !== undefined;
    return applyToFileItem(c, target, plan.headerKnown ? 'known' : header, optimistic);
  }

  /**
   * The callback's items, and what this worker holds of them: which it must read before its write. A file
   * callback needs the header only to see that the task exists as it would make it: a header this worker saw with
   * the same service and an identity at least as good is enough. An item this worker wrote or read before is not
   * read again (a stale copy only fails a versioned put), and an item the callback most likely creates is not read
   * at all (`likelyCreates`).
   */
  private planOf(cb: Callback, counting: Counting): WritePlan {
    const pk = Keys.taskPk(cb.id);
    const headerKey: Key = { pk, sk: Keys.headerSk(cb.appKey) };
    const fileName = fileNameOf(cb);
    const fileKey: Key | null = fileName ? { pk, sk: Keys.fileSk(cb.appKey, fileName) } : null;
    const inHeader = isHeaderEvent(cb);
    const headerCopy = this.items.headers.get(headerKey);
    const headerKnown = !inHeader && headerCopy?.service === cb.service && headerCopy.identRank <= identRankOf(cb);
    // A file put to be held is built on the file as read now, or on a put held before it in this batch: a copy
    // from an earlier batch may be stale, and a held put that fails cannot be joined again (its charge was
    // read off it).
    const fileCopy =
      fileKey && (!counting.hold || this.items.holds(fileKey)) ? this.items.files.get(fileKey) : undefined;
    // A put to be held is never a guess: the next write of the file builds on it and must not fail.
    const guessed = likelyCreates(cb) && !counting.hold && (inHeader ? !headerCopy : !fileCopy);
    // A callback a copy shows recorded is a duplicate (an item never forgets a key): its delivery is stored
    // but not listed among its task's callbacks, where the first delivery of the same event already is.
    const copy = inHeader ? headerCopy : fileCopy;
    const knownDuplicate = copy !== undefined && Object.hasOwn(keysOf(copy), cb.key);
    return { headerKey, fileKey, fileName, inHeader, headerCopy, headerKnown, fileCopy, guessed, knownDuplicate };
  }

  /** The file's item read, unless a copy is held or a file callback most likely creates it. */
  private readFileIfNeeded(plan: WritePlan, cap: Capacity): Promise<Item | null> | null {
    const { fileKey, fileCopy, guessed, inHeader } = plan;
    return fileKey && !fileCopy && !(guessed && !inHeader) ? this.items.readItem(this.items.files, fileKey, cap) : null;
  }

  /**
   * The header read (strongly consistent for a header callback), unless a copy is held or known good enough, or a
   * header callback most likely creates it.
   */
  private readHeaderIfNeeded(plan: WritePlan, cap: Capacity): Promise<Item | null> | null {
    const { headerKnown, headerCopy, guessed, inHeader } = plan;
    return headerKnown || headerCopy || (guessed && inHeader)
      ? null
      : this.items.readItem(this.items.headers, plan.headerKey, cap, inHeader);
  }
}

/** A callback's items, the copies of them this worker holds, and what they tell before any read. */
interface WritePlan {
  headerKey: Key;
  /** The file's item, for a callback that names a file. */
  fileKey: Key | null;
  fileName: string | null;
  /** A start or an end: applied to the header. */
  inHeader: boolean;
  headerCopy: Item | undefined;
  /** The header copy shows the task as this file callback would make it: the header is not read. */
  headerKnown: boolean;
  fileCopy: Item | undefined;
  /** The item the callback is recorded in is taken to be absent, unread (`likelyCreates`). */
  guessed: boolean;
  /** A copy shows the callback recorded already. */
  knownDuplicate: boolean;
}

/**
 * Whether a callback most likely creates the item it is recorded in, so that the item is not read first
 * (a put that requires it to be absent, then a read and a join if it was there): a start creates its
 * task's header, a slice names a new recording file, a screenshot upload a new image (its retries and
 * repeats aside). A wrong guess costs one failed write; a right one saves a read and a request.
 */
function likelyCreates(cb: Callback): boolean {
  return cb.type === 1 || cb.type === 2 || (cb.service === 'screenshot' && cb.type === 4);
}
