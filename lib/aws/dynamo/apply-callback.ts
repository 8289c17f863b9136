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
import type { Callback } from '../../domain/callback.ts';
import type {
  ApplyResult,
  Capacity,
  DeliveredCallback,
  QuarantineEntry,
  WriteOutcome,
} from '../../domain/task-store.ts';
import { UnstorableCallbackError } from '../../domain/task-store.ts';
import { errorSentence } from '../../text.ts';
import {
  applyIdentity,
  applyToFile,
  applyToHeader,
  emptyTally,
  fileNameOf,
  fileState,
  identRankOf,
  isHeaderEvent,
  sameHeader,
  tallyCallback,
  type FileRecord,
  type FileTransition,
} from '../../domain/task.ts';
import { storedWriteOf, type WriteEffect } from '../../domain/stored-write.ts';
import { markAfterWrite, type WriteCharge } from '../../domain/task-counts.ts';
import { sameFacts, transitionOf, type TaskParts } from '../../domain/task-parts.ts';
import {
  bodyRefOf,
  fileFromItem,
  fileToItem,
  headerFromItem,
  headerToItem,
  keysOf,
  markOf,
  recordedToItem,
  recordedValue,
  tallyOf,
  type AssembledTask,
  type BodyRef,
} from './items.ts';
import type { Deliveries } from './deliveries.ts';
import { filesWithAttempts } from './file-attempts.ts';
import { KnownItems } from './known-items.ts';
import { oversizedItem, oversizedKey, tooDeep } from './limits.ts';
import { unstorableNumberIn } from './numbers.ts';
import { ContentionError, backoff, noCapacity, toItem, type Item, type Key, type TableClient } from './table-client.ts';
import { Keys } from './table.ts';

export interface WritePathOptions {
  /** Optimistic-concurrency attempts before giving up with a retryable error. */
  maxAttempts: number;
  /** Callback keys a file item records inline before further keys get items of their own. */
  inlineKeys: number;
  /** The task as it stands, read strongly consistent (for WriteOutcome.readTask). */
  readAfterWrite: (appKey: string, id: string, cap?: Capacity) => Promise<AssembledTask | null>;
  /** File items remembered as last written or read, so that the next callback of a file need not read it (0: none). */
  knownFiles: number;
}

type FileChange = WriteEffect['file'];
type HeaderBefore = WriteEffect['headerBefore'];
type Outcome =
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
interface Counting {
  seq: string | null;
  absorbed: string | null;
  /** The message was received before: without marks, what it finds in place may be its own, uncounted. */
  redelivered: boolean;
}

const countingOf = (d: Pick<DeliveredCallback, 'sequence' | 'absorbed' | 'redelivered'>): Counting => ({
  ...(d.sequence && d.absorbed ? { seq: d.sequence, absorbed: d.absorbed } : { seq: null, absorbed: null }),
  redelivered: d.redelivered === true,
});

/** Whether marks count this write: a sequence number the header has not absorbed yet. */
const marked = (c: Counting): boolean => c.seq !== null && c.absorbed !== null && c.seq > c.absorbed;
type Quarantine = { outcome: 'quarantined'; reason: QuarantineEntry['reason']; detail: string };

export class WritePath {
  private readonly table: TableClient;
  private readonly deliveries: Deliveries;
  private readonly opts: WritePathOptions;

  private readonly headers: KnownItems;
  private readonly files: KnownItems;

  /** `headers`: the task headers this worker remembers, shared with the count updates that write them too. */
  constructor(table: TableClient, deliveries: Deliveries, headers: KnownItems, opts: WritePathOptions) {
    this.table = table;
    this.deliveries = deliveries;
    this.opts = opts;
    this.headers = headers;
    this.files = new KnownItems(opts.knownFiles);
  }

  async applyCallback(d: DeliveredCallback): Promise<ApplyResult> {
    const cap = noCapacity();
    const result = await this.apply(d, cap).catch((err: unknown) => {
      // DynamoDB refuses such an item every time (a size or number it cannot hold that the checks did not
      // foresee): permanent, unlike a throttle or a time-out.
      if ((err as { name?: unknown } | null)?.name === 'ValidationException')
        throw new UnstorableCallbackError(`DynamoDB refused it: ${errorSentence(err)}`, { cause: err });
      throw err;
    });
    if (result.outcome === 'quarantined') {
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

  /** A file as this worker last wrote or read it, its attempts counted (./file-attempts.ts). */
  private async fileAfter(
    appKey: string,
    id: string,
    fileName: string,
    capacity: Capacity = noCapacity(),
  ): Promise<FileRecord | null> {
    const key = { pk: Keys.taskPk(id), sk: Keys.fileSk(appKey, fileName) };
    const item = this.files.get(key) ?? (await this.readItem(this.files, key, capacity));
    if (!item) return null;
    const [file] = await filesWithAttempts(this.table, appKey, id, [item], false, capacity);
    return file!;
  }

  /** A file item as a record; its attempts are counted by `fileAfter` or on read, not here. */
  private fileRecord(file: Item): FileRecord {
    return fileFromItem(file);
  }

  /**
   * Applies a callback whose raw body is already stored elsewhere (`ref`), with no delivery of its own:
   * what `callbacks migrate` does with the ledger entries of the earlier layout. Counted like any other.
   */
  async applyStored(cb: Callback, ref: BodyRef): Promise<Outcome['outcome']> {
    const none = { seq: null, absorbed: null, redelivered: false };
    return (await this.applyWith(cb, ref, none, async () => true, noCapacity())).outcome;
  }

  private apply(d: DeliveredCallback, cap: Capacity): Promise<Outcome> {
    const ref = bodyRefOf(d);
    return this.applyWith(d.callback, ref, countingOf(d), () => this.deliveries.claim(d, ref, cap), cap);
  }

  /**
   * What a write leaves its header to count, from the file item it left or found: `events` recorded beside
   * the file, `inline` keys recorded on it (which its mark counts when the mark is not absorbed yet).
   */
  private charge(
    c: Counting,
    fileItem: Item | null,
    transition: FileTransition | null,
    events: number,
    uncertain: boolean,
    inline = 0,
  ): WriteCharge {
    const record = fileItem ? this.fileRecord(fileItem) : null;
    const mark = markOf(fileItem);
    const byMark = c.absorbed !== null && mark !== null && mark.seq > c.absorbed;
    return {
      sequence: c.seq,
      file: record ? { name: record.fileName, state: fileState(record), mark } : null,
      transition,
      events: events + (byMark ? 0 : inline),
      uncertain: c.seq === null && c.redelivered && uncertain,
    };
  }

  /** A file's mark after a write that records `newEvents` callbacks on it (none without sequence numbers). */
  private markFor(c: Counting, file: Item | null, before: FileRecord | null, newEvents: number) {
    if (c.seq === null || c.absorbed === null) return markOf(file);
    return markAfterWrite(markOf(file), fileState(before), c.seq, c.absorbed, newEvents);
  }

  /** Applies a callback once `claim` (its delivery's replay claim and raw body) holds. */
  private async applyWith(
    cb: Callback,
    ref: BodyRef,
    counting: Counting,
    claim: () => Promise<boolean>,
    cap: Capacity,
  ): Promise<Outcome> {
    const refused = oversizedKey(cb) ?? tooDeep(cb) ?? unstorableNumberIn(cb);
    // DynamoDB refuses such a write every time: retrying would only end in the dead-letter queue.
    if (refused) return { outcome: 'quarantined', reason: 'invalid_callback', detail: refused };

    const pk = Keys.taskPk(cb.id);
    const headerKey: Key = { pk, sk: Keys.headerSk(cb.appKey) };
    const fileName = fileNameOf(cb);
    const fileKey: Key | null = fileName ? { pk, sk: Keys.fileSk(cb.appKey, fileName) } : null;
    const inHeader = isHeaderEvent(cb);

    // The claim and the reads it does not depend on go out together; nothing is applied before the claim
    // holds. A file callback needs the header only to see that the task exists as it would make it: a
    // header this worker saw with the same service and an identity at least as good is enough. An item
    // this worker wrote or read before is not read again (a stale copy only fails a versioned put), and an
    // item the callback most likely creates is not read at all (`likelyCreates`).
    const headerCopy = this.headers.get(headerKey);
    const headerKnown = !inHeader && headerCopy?.service === cb.service && headerCopy.identRank <= identRankOf(cb);
    const fileCopy = fileKey ? this.files.get(fileKey) : undefined;
    const guessed = likelyCreates(cb) && (inHeader ? !headerCopy : !fileCopy);
    const [claimOk, fileRead, headerRead] = await Promise.all([
      claim(),
      fileKey && !fileCopy && !(guessed && !inHeader) ? this.readItem(this.files, fileKey, cap) : null,
      headerKnown || headerCopy || (guessed && inHeader) ? null : this.readItem(this.headers, headerKey, cap, inHeader),
    ]);
    const file = fileCopy ?? fileRead;
    const header = headerCopy ?? headerRead;
    if (!claimOk) {
      return {
        outcome: 'quarantined',
        reason: 'replayed_signature',
        detail: 'this signature came before with a different body',
      };
    }
    if (header && header.service !== cb.service) return this.serviceMismatch(cb, header);
    if (inHeader) {
      const optimistic = guessed || headerCopy !== undefined;
      return this.applyToHeaderItem(cb, ref, counting, headerKey, header, optimistic, fileKey, file, cap);
    }
    const optimistic = guessed || fileCopy !== undefined;
    const headerSeen = headerKnown ? 'known' : header;
    return this.applyToFileItem(cb, ref, counting, headerKey, headerSeen, fileKey!, fileName!, file, optimistic, cap);
  }

  /** A slice or an upload: recorded in its file. */
  private async applyToFileItem(
    cb: Callback,
    ref: BodyRef,
    counting: Counting,
    headerKey: Key,
    headerRead: Item | null | 'known',
    fileKey: Key,
    fileName: string,
    fileRead: Item | null,
    optimistic: boolean,
    cap: Capacity,
  ): Promise<Outcome> {
    let file = fileRead;
    let headerDone = headerRead === 'known';
    let headerBefore: HeaderBefore = 'unchanged';
    for (let attempt = 1; ; attempt++) {
      if (attempt > 1) {
        await this.pause(attempt, cb, optimistic && attempt === 2);
        file = await this.readItem(this.files, fileKey, cap);
      }
      const keys = keysOf(file);
      if (Object.hasOwn(keys, cb.key)) {
        // A remembered copy shows the key for good, not necessarily the mark an earlier delivery left.
        if (marked(counting) && attempt === 1 && fileRead !== null)
          file = await this.readItem(this.files, fileKey, cap);
        return {
          outcome: 'duplicate',
          file: { before: null, after: this.fileRecord(file!) },
          // Whoever recorded the key counted it, or left it on the file's mark.
          charge: this.charge(counting, file, null, 0, true),
        };
      }
      const before = file ? this.fileRecord(file) : null;
      const after = applyToFile(before, cb);
      const tally = tallyCallback(tallyOf(file), cb);
      const transition = transitionOf(before, after);
      const inline = Object.keys(keys).length < this.opts.inlineKeys;
      const mark = this.markFor(counting, file, before, inline ? 1 : 0);
      const item = fileToItem(
        fileKey,
        after,
        tally,
        inline ? { ...keys, [cb.key]: recordedValue(cb, ref) } : keys,
        mark,
      );
      // A file whose keys go on beyond it says so: readers count its attempts there only then.
      if (!inline || file?.sp) item.sp = true;
      if (!headerDone) {
        // A callback DynamoDB would refuse is refused before it writes the task's header.
        const refused = oversizedItem('file', toItem(item));
        if (refused) return { outcome: 'quarantined', reason: 'invalid_callback', detail: refused };
        const { header, created } = await this.ensureHeader(headerKey, headerRead as Item | null, cb, cap);
        if (header.service !== cb.service) return this.serviceMismatch(cb, header);
        if (created) headerBefore = null;
        headerDone = true;
      }
      if (inline) {
        // Marks count the new key; without them (or for a write the header absorbed already) this write does.
        const charge = this.charge(counting, item, transition, 0, false, 1);
        if (await this.putItem(this.files, item, file, cap))
          return { outcome: 'applied', transition, file: { before, after }, headerBefore, charge };
        continue;
      }
      // The file keeps no more keys: its join first (idempotent), then the key on an item of its own,
      // whose conditional put tells a new callback from one recorded before.
      const joined = !sameFacts(before, after, tallyOf(file), tally) || !file?.sp;
      if (joined && !(await this.putItem(this.files, item, file, cap))) continue;
      const written = joined ? item : file;
      const recordedKey = { pk: fileKey.pk, sk: Keys.recordedSk(cb.appKey, fileName, cb.key) };
      const recorded = await this.table.putIf(
        recordedToItem(recordedKey, fileName, cb, ref, counting.seq),
        'attribute_not_exists(pk)',
        undefined,
        cap,
      );
      if (!recorded) {
        // Recorded by an earlier delivery of this very message that stopped before its batch was counted:
        // the key's item says which message recorded it.
        const own = marked(counting) && (await this.table.get(recordedKey, cap))?.q === counting.seq ? 1 : 0;
        return {
          outcome: 'duplicate',
          file: { before: null, after },
          charge: this.charge(counting, written, null, own, true),
        };
      }
      // A join found in place may be an earlier delivery's, stopped before it recorded the key: the file and
      // the task before this callback are then unknown, and its events are published again (same ids).
      const charge = this.charge(counting, written, joined ? transition : null, 1, !joined);
      return joined
        ? { outcome: 'applied', transition, file: { before, after }, headerBefore, charge }
        : { outcome: 'applied', transition: null, file: { before: null, after }, headerBefore: null, charge };
    }
  }

  /**
   * Creates the task's header, or improves its identity, when this callback would change it. `read` may
   * be stale (eventually consistent): it then shows less than the header holds, so a header it says is
   * good enough is; anything else is read again, strongly, before a versioned put. Returns the header, and
   * whether this callback created the task.
   */
  private async ensureHeader(
    headerKey: Key,
    read: Item | null,
    cb: Callback,
    cap: Capacity,
  ): Promise<{ header: Item; created: boolean }> {
    let current = read;
    let consistent = false;
    for (let attempt = 1; ; attempt++) {
      // A task of the other service: the caller quarantines the callback.
      if (current && current.service !== cb.service) return { header: current, created: false };
      const before = current ? headerFromItem(current) : null;
      const after = applyToHeader(before, cb);
      if (current && before && sameHeader(before, after)) return { header: current, created: false };
      if (consistent) {
        const item = headerToItem(headerKey, after, tallyOf(current), keysOf(current), current);
        if (await this.putItem(this.headers, item, current, cap)) return { header: item, created: current === null };
        await this.pause(attempt, cb);
      }
      current = await this.readItem(this.headers, headerKey, cap);
      consistent = true;
    }
  }

  /** A start or an end: recorded in the header; a recording end first joins its file's size. */
  private async applyToHeaderItem(
    cb: Callback,
    ref: BodyRef,
    counting: Counting,
    headerKey: Key,
    headerRead: Item | null,
    optimistic: boolean,
    fileKey: Key | null,
    fileRead: Item | null,
    cap: Capacity,
  ): Promise<Outcome> {
    let header = headerRead;
    let fileChange: FileChange = null;
    let fileJoin: { item: Item | null; wrote: boolean } = { item: null, wrote: false };
    let fileDone = fileKey === null;
    for (let attempt = 1; ; attempt++) {
      if (attempt > 1) {
        await this.pause(attempt, cb, optimistic && attempt === 2);
        header = await this.readItem(this.headers, headerKey, cap);
        if (header && header.service !== cb.service) return this.serviceMismatch(cb, header);
      }
      const keys = keysOf(header);
      if (Object.hasOwn(keys, cb.key)) {
        const file = fileKey && fileRead ? this.fileRecord(fileRead) : null;
        // The key was counted by the put that recorded it; the end's file join, by its mark (or a recount).
        const charge = this.charge(counting, fileKey ? fileRead : null, null, 0, fileKey !== null);
        return { outcome: 'duplicate', file: file ? { before: null, after: file } : null, charge };
      }
      const before = header ? headerFromItem(header) : null;
      const tally = tallyCallback(tallyOf(header), cb);
      const recorded = { ...keys, [cb.key]: recordedValue(cb, ref) };
      const item = headerToItem(headerKey, applyToHeader(before, cb), tally, recorded, header);
      // The header counts the callbacks it records in the very put that records them.
      if (typeof item.nEvents === 'number') item.nEvents += 1;
      if (!fileDone) {
        // What can refuse the end is settled before its file is joined (a file its task would wait for): the
        // header's size, and its service, fixed once the task exists (created first without the end's facts).
        const refused = oversizedItem('header', toItem(item));
        if (refused) return { outcome: 'quarantined', reason: 'invalid_callback', detail: refused };
        // The end's facts join the header it creates as they would have joined none: `item` stands.
        const created = header ? null : headerToItem(headerKey, applyIdentity(null, cb), emptyTally(), {}, null);
        if (created && !(await this.putItem(this.headers, created, null, cap))) continue;
        header ??= { ...created, ver: 1 };
        const joined = await this.joinFile(fileKey!, fileRead, cb, counting, cap);
        fileChange = joined.change;
        fileJoin = joined;
        fileDone = true;
      }
      if (await this.putItem(this.headers, item, header, cap)) {
        const transition = fileChange ? transitionOf(fileChange.before, fileChange.after) : null;
        // A join found in place may be an earlier delivery's: without marks its change is not known.
        const charge = this.charge(counting, fileJoin.item, fileJoin.wrote ? transition : null, 0, !fileJoin.wrote);
        return { outcome: 'applied', transition, file: fileChange, headerBefore: before, charge };
      }
    }
  }

  /**
   * Joins a callback into its file without recording it there (a recording end is recorded in the header):
   * the change, the file item as left, and whether this join wrote it.
   */
  private async joinFile(
    fileKey: Key,
    read: Item | null,
    cb: Callback,
    counting: Counting,
    cap: Capacity,
  ): Promise<{ change: NonNullable<FileChange>; item: Item; wrote: boolean }> {
    let file = read;
    for (let attempt = 1; ; attempt++) {
      if (attempt > 1) {
        await this.pause(attempt, cb);
        file = await this.readItem(this.files, fileKey, cap);
      }
      const before = file ? this.fileRecord(file) : null;
      const after = applyToFile(before, cb);
      const tally = tallyOf(file);
      if (file && sameFacts(before, after, tally, tally))
        return { change: { before, after }, item: file, wrote: false };
      const item = fileToItem(fileKey, after, tally, keysOf(file), this.markFor(counting, file, before, 0));
      if (file?.sp) item.sp = true;
      if (await this.putItem(this.files, item, file, cap)) return { change: { before, after }, item, wrote: true };
    }
  }

  /** An item read (strongly consistent unless said) and remembered. */
  private async readItem(known: KnownItems, key: Key, cap: Capacity, consistent = true): Promise<Item | null> {
    const item = await this.table.get(key, cap, consistent);
    known.remember(key, item);
    return item;
  }

  /** A versioned put over `previous` (null: absent); the item is remembered as written. */
  private async putItem(known: KnownItems, item: Item, previous: Item | null, cap: Capacity): Promise<boolean> {
    const ok = await this.table.putVersioned(item, previous?.ver, cap);
    if (ok) known.remember(item as Key, { ...item, ver: (previous?.ver ?? 0) + 1 });
    return ok;
  }

  private serviceMismatch(cb: Callback, header: Item): Quarantine {
    const detail = `task ${cb.id} is a ${header.service} task; this is a ${cb.service} callback`;
    return { outcome: 'quarantined', reason: 'service_mismatch', detail };
  }

  /** Before another attempt: a back-off after a conflict, none after a wrong guess that an item was absent. */
  private async pause(attempt: number, cb: Callback, afterGuess = false): Promise<void> {
    if (attempt > this.opts.maxAttempts)
      throw new ContentionError(`task ${cb.id} stayed contended after ${this.opts.maxAttempts} attempts`);
    if (!afterGuess) await backoff(attempt);
  }
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
