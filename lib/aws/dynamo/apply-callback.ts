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
//
// Every join is in lib/domain/task.ts; docs/task-store.md gives the layout and the argument.
import type { Callback } from '../../domain/callback.ts';
import type {
  ApplyResult,
  Capacity,
  DeliveredCallback,
  QuarantineEntry,
  TaskSummary,
} from '../../domain/task-store.ts';
import {
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
  type Tally,
} from '../../domain/task.ts';
import {
  bodyRefOf,
  deliveryToItem,
  fileFromItem,
  fileToItem,
  headerFromItem,
  headerToItem,
  keysOf,
  recordedToItem,
  recordedValue,
  tallyOf,
  type BodyRef,
} from './items.ts';
import { oversizedKey, tooDeep } from './limits.ts';
import { ContentionError, backoff, noCapacity, type Item, type Key, type TableClient } from './table-client.ts';
import { Keys, dayOf } from './table.ts';

export interface WritePathOptions {
  /** Days a raw callback is kept before the TTL deletes it. */
  ttlDays: number;
  now: () => number;
  /** Optimistic-concurrency attempts before giving up with a retryable error. */
  maxAttempts: number;
  /** Callback keys a file item records inline before further keys get items of their own. */
  inlineKeys: number;
  /** The task's summary right after a write (for ApplyResult.taskAfter). */
  summaryAfterWrite: (appKey: string, id: string) => Promise<TaskSummary | null>;
  /** Task headers remembered (service and identity rank) so that file callbacks need not read them (0: none). */
  knownHeaders: number;
}

/** What a header said about its task: both only ever improve, so an old copy is a stale read, never a wrong one. */
interface KnownHeader {
  service: string;
  identRank: string;
}

type Outcome = { outcome: 'applied'; transition: FileTransition | null } | { outcome: 'duplicate' } | Quarantine;
type Quarantine = { outcome: 'quarantined'; reason: QuarantineEntry['reason']; detail: string };

const sameJson = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

export class WritePath {
  private readonly table: TableClient;
  private readonly opts: WritePathOptions;
  private readonly known = new Map<string, KnownHeader>();

  constructor(table: TableClient, opts: WritePathOptions) {
    this.table = table;
    this.opts = opts;
  }

  async applyCallback(d: DeliveredCallback): Promise<ApplyResult> {
    const cap = noCapacity();
    const result = await this.apply(d, cap);
    if (result.outcome === 'quarantined') {
      await this.quarantineParsed(d, result.reason, result.detail, cap);
      return { ...result, capacity: cap };
    }
    if (result.outcome === 'duplicate') return { outcome: 'duplicate', capacity: cap };
    const { appKey, id } = d.callback;
    return {
      outcome: 'applied',
      transition: result.transition,
      taskAfter: () => this.opts.summaryAfterWrite(appKey, id),
      capacity: cap,
    };
  }

  private async apply(d: DeliveredCallback, cap: Capacity): Promise<Outcome> {
    const cb = d.callback;
    const refused = oversizedKey(cb) ?? tooDeep(cb);
    // DynamoDB refuses such a write every time: retrying would only end in the dead-letter queue.
    if (refused) return { outcome: 'quarantined', reason: 'invalid_callback', detail: refused };

    const ref = bodyRefOf(d);
    const pk = Keys.taskPk(cb.id);
    const headerKey: Key = { pk, sk: Keys.headerSk(cb.appKey) };
    const fileName = fileNameOf(cb);
    const fileKey: Key | null = fileName ? { pk, sk: Keys.fileSk(cb.appKey, fileName) } : null;
    const inHeader = isHeaderEvent(cb);

    // The claim and the reads it does not depend on go out together; nothing is applied before the claim
    // holds. A file callback needs the header only to see that the task exists as it would make it: a
    // header this worker saw with the same service and an identity at least as good is enough. An item
    // the callback most likely creates is not read at all (`likelyCreates`).
    const known = this.known.get(headerKey.sk + headerKey.pk);
    const headerKnown = !inHeader && known?.service === cb.service && known.identRank <= identRankOf(cb);
    const guessed = likelyCreates(cb) && (inHeader ? !known : true);
    const [claimed, file, header] = await Promise.all([
      this.claim(d, ref, cap),
      fileKey && !(guessed && !inHeader) ? this.table.get(fileKey, cap) : null,
      headerKnown || (guessed && inHeader) ? null : this.table.get(headerKey, cap, inHeader),
    ]);
    this.remember(headerKey, header);
    if (!claimed) {
      return {
        outcome: 'quarantined',
        reason: 'replayed_signature',
        detail: 'this nonce, timestamp and signature came before with a different body',
      };
    }
    if (header && header.service !== cb.service) return this.serviceMismatch(cb, header);
    if (inHeader) return this.applyToHeaderItem(cb, ref, headerKey, header, guessed, fileKey, file, cap);
    const headerRead = headerKnown ? 'known' : header;
    return this.applyToFileItem(cb, ref, headerKey, headerRead, fileKey!, fileName!, file, guessed, cap);
  }

  private remember(key: Key, header: Item | null): void {
    if (!header || this.opts.knownHeaders <= 0) return;
    const id = key.sk + key.pk;
    this.known.delete(id);
    this.known.set(id, { service: header.service, identRank: header.identRank });
    // Oldest first out: a Map iterates in insertion order.
    if (this.known.size > this.opts.knownHeaders) this.known.delete(this.known.keys().next().value!);
  }

  /** A slice or an upload: recorded in its file. */
  private async applyToFileItem(
    cb: Callback,
    ref: BodyRef,
    headerKey: Key,
    headerRead: Item | null | 'known',
    fileKey: Key,
    fileName: string,
    fileRead: Item | null,
    guessed: boolean,
    cap: Capacity,
  ): Promise<Outcome> {
    let file = fileRead;
    let headerDone = headerRead === 'known';
    for (let attempt = 1; ; attempt++) {
      if (attempt > 1) {
        await this.pause(attempt, cb, guessed && attempt === 2);
        file = await this.table.get(fileKey, cap);
      }
      const keys = keysOf(file);
      if (Object.hasOwn(keys, cb.key)) return { outcome: 'duplicate' };
      if (!headerDone) {
        const header = await this.ensureHeader(headerKey, headerRead as Item | null, cb, cap);
        if (header.service !== cb.service) return this.serviceMismatch(cb, header);
        headerDone = true;
      }
      const before = file ? fileFromItem(file) : null;
      const after = applyToFile(before, cb);
      const tally = tallyCallback(tallyOf(file), cb);
      const transition = { from: fileState(before), to: fileState(after) };
      if (Object.keys(keys).length < this.opts.inlineKeys) {
        const item = fileToItem(fileKey, after, tally, { ...keys, [cb.key]: recordedValue(cb, ref) });
        if (await this.table.putVersioned(item, file?.ver, cap)) return { outcome: 'applied', transition };
        continue;
      }
      // The file keeps no more keys: its join first (idempotent), then the key on an item of its own,
      // whose conditional put tells a new callback from one recorded before.
      if (!sameFacts(before, after, tallyOf(file), tally)) {
        if (!(await this.table.putVersioned(fileToItem(fileKey, after, tally, keys), file?.ver, cap))) continue;
      }
      const recorded = recordedToItem({ pk: fileKey.pk, sk: Keys.recordedSk(cb.appKey, cb.key) }, fileName, cb, ref);
      if (await this.table.putIf(recorded, 'attribute_not_exists(pk)', undefined, cap))
        return { outcome: 'applied', transition };
      return { outcome: 'duplicate' };
    }
  }

  /**
   * Creates the task's header, or improves its identity, when this callback would change it. `read` may
   * be stale (eventually consistent): it then shows less than the header holds, so a header it says is
   * good enough is; anything else is read again, strongly, before a versioned put. Returns the header.
   */
  private async ensureHeader(headerKey: Key, read: Item | null, cb: Callback, cap: Capacity): Promise<Item> {
    let current = read;
    let consistent = false;
    for (let attempt = 1; ; attempt++) {
      // A task of the other service: the caller quarantines the callback.
      if (current && current.service !== cb.service) return current;
      const before = current ? headerFromItem(current) : null;
      const after = applyToHeader(before, cb);
      if (current && before && sameHeader(before, after)) return current;
      if (consistent) {
        const item = headerToItem(headerKey, after, tallyOf(current), keysOf(current));
        if (await this.table.putVersioned(item, current?.ver, cap)) {
          this.remember(headerKey, item);
          return item;
        }
        await this.pause(attempt, cb);
      }
      current = await this.table.get(headerKey, cap);
      this.remember(headerKey, current);
      consistent = true;
    }
  }

  /** A start or an end: recorded in the header; a recording end first joins its file's size. */
  private async applyToHeaderItem(
    cb: Callback,
    ref: BodyRef,
    headerKey: Key,
    headerRead: Item | null,
    guessed: boolean,
    fileKey: Key | null,
    fileRead: Item | null,
    cap: Capacity,
  ): Promise<Outcome> {
    let header = headerRead;
    let transition: FileTransition | null = null;
    let fileDone = fileKey === null;
    for (let attempt = 1; ; attempt++) {
      if (attempt > 1) {
        await this.pause(attempt, cb, guessed && attempt === 2);
        header = await this.table.get(headerKey, cap);
        this.remember(headerKey, header);
        if (header && header.service !== cb.service) return this.serviceMismatch(cb, header);
      }
      const keys = keysOf(header);
      if (Object.hasOwn(keys, cb.key)) return { outcome: 'duplicate' };
      if (!fileDone) {
        transition = await this.joinFile(fileKey!, fileRead, cb, cap);
        fileDone = true;
      }
      const before = header ? headerFromItem(header) : null;
      const item = headerToItem(headerKey, applyToHeader(before, cb), tallyCallback(tallyOf(header), cb), {
        ...keys,
        [cb.key]: ref,
      });
      if (await this.table.putVersioned(item, header?.ver, cap)) {
        this.remember(headerKey, item);
        return { outcome: 'applied', transition };
      }
    }
  }

  /** Joins a callback into its file without recording it there (a recording end is recorded in the header). */
  private async joinFile(fileKey: Key, read: Item | null, cb: Callback, cap: Capacity): Promise<FileTransition> {
    let file = read;
    for (let attempt = 1; ; attempt++) {
      if (attempt > 1) {
        await this.pause(attempt, cb);
        file = await this.table.get(fileKey, cap);
      }
      const before = file ? fileFromItem(file) : null;
      const after = applyToFile(before, cb);
      const transition = { from: fileState(before), to: fileState(after) };
      const tally = tallyOf(file);
      if (file && sameFacts(before, after, tally, tally)) return transition;
      if (await this.table.putVersioned(fileToItem(fileKey, after, tally, keysOf(file)), file?.ver, cap))
        return transition;
    }
  }

  /**
   * The delivery's conditional put. Keyed by the replay key: absent, or holding the same event (this
   * delivery again), else a replay. Keyed by the event key: the first delivery's body stays.
   */
  private async claim(d: DeliveredCallback, ref: BodyRef, cap: Capacity): Promise<boolean> {
    const item = deliveryToItem(d, ref, this.expiry());
    if (!d.signatureKey) {
      await this.table.putIf(item, 'attribute_not_exists(pk)', undefined, cap);
      return true;
    }
    return this.table.putIf(item, 'attribute_not_exists(pk) OR eventKey = :k', { ':k': { S: d.callback.key } }, cap);
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

  private async quarantineParsed(
    d: DeliveredCallback,
    reason: QuarantineEntry['reason'],
    detail: string,
    cap: Capacity,
  ) {
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

  private expiry(): number {
    return Math.floor(this.opts.now() / 1000) + this.opts.ttlDays * 86400;
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

/** Whether a join left a file's facts and tally as they were. */
function sameFacts(before: FileRecord | null, after: FileRecord, tallyBefore: Tally, tallyAfter: Tally): boolean {
  return before !== null && sameJson(before, after) && sameJson(tallyBefore ?? emptyTally(), tallyAfter);
}
