// A start or an end recorded in its task's header item (./apply-callback.ts gives the write path); a
// recording end first has what can refuse it settled, then joins its file's size, then is recorded.
import type { Callback } from '../../domain/callback.ts';
import type { Capacity } from '../../domain/task-store.ts';
import {
  applyIdentity,
  applyToFile,
  applyToHeader,
  emptyTally,
  tallyCallback,
  type FileTransition,
} from '../../domain/task.ts';
import { sameFacts, transitionOf } from '../../domain/task-parts.ts';
import {
  UNCOUNTED_END,
  fileToItem,
  headerFromItem,
  headerToItem,
  keysOf,
  recordedValue,
  tallyOf,
  type BodyRef,
} from './items.ts';
import { marked, unsettled, type Counting, type FileChange, type ItemWrites, type Outcome } from './item-writes.ts';
import { oversizedItem } from './limits.ts';
import { ContentionError, toItem, type Item, type Key } from './table-client.ts';

/** A start or an end: recorded in the header; a recording end first joins its file's size. */
export async function applyToHeaderItem(
  w: ItemWrites,
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
  let fileJoin: { item: Item | null; wrote: boolean; transition: FileTransition | null } = {
    item: null,
    wrote: false,
    transition: null,
  };
  let fileDone = fileKey === null;
  for (let attempt = 1; ; attempt++) {
    if (attempt > 1) {
      await w.pause(attempt, cb, optimistic && attempt === 2);
      header = await w.readItem(w.headers, headerKey, cap);
      if (header && header.service !== cb.service) return w.serviceMismatch(cb, header);
    }
    const keys = keysOf(header);
    if (Object.hasOwn(keys, cb.key)) {
      const file = fileKey && fileRead ? w.fileRecord(fileRead) : null;
      // The key was counted by the put that recorded it; the end's file join, by its mark (or a recount).
      const charge = w.charge(counting, fileKey ? fileRead : null, null, 0, fileKey !== null);
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
      const createdOver = (base: Item | null) => base ?? created!;
      const holdCreated = w.holdsHeader(counting, null);
      if (created && !(await w.putItem(w.headers, created, null, cap, holdCreated, createdOver))) continue;
      header ??= { ...created, ver: 1 };
      const joined = await joinFile(w, fileKey!, fileRead, cb, counting, cap);
      fileChange = joined.change;
      fileJoin = joined;
      fileDone = true;
    }
    // An end written ahead of its batch's count says so, should the batch stop before it (items.ts): written at
    // once, or held and then written by another put of the header that comes first (a read, a file callback's
    // put, the held callbacks joined again over the header as stored). The count that carries a held put absorbs
    // it, and leaves the mark out (HeaderCounts.putHeld).
    const ahead = cb.type === 3 && marked(counting) ? counting.seq : null;
    markAhead(item, ahead);
    // The batch's count writes the header anyway: this put is held for it to carry (one write for both).
    const rebuild = (base: Item | null) => recordInHeader(headerKey, base, cb, ref, ahead);
    const hold = w.holdsHeader(counting, header);
    if (await w.putItem(w.headers, item, header, cap, hold, rebuild)) {
      const transition = fileJoin.transition;
      // A join found in place may be an earlier delivery's: without marks its change is not known.
      const charge = w.charge(counting, fileJoin.item, fileJoin.wrote ? transition : null, 0, !fileJoin.wrote);
      return { outcome: 'applied', transition, file: fileChange, headerBefore: before, charge };
    }
  }
}

/**
 * A start or an end joined into a header and recorded there, counted in the same put: how a held put of it
 * is joined again into the header as stored (./held-puts.ts). A header already holding its key is left as is.
 */
function recordInHeader(headerKey: Key, base: Item | null, cb: Callback, ref: BodyRef, ahead: string | null): Item {
  if (base && base.service !== cb.service) throw new ContentionError(`task ${cb.id} is of another service now`);
  const keys = keysOf(base);
  if (Object.hasOwn(keys, cb.key)) return base!;
  const before = base ? headerFromItem(base) : null;
  const recorded = { ...keys, [cb.key]: recordedValue(cb, ref) };
  const item = headerToItem(headerKey, applyToHeader(before, cb), tallyCallback(tallyOf(base), cb), recorded, base);
  if (typeof item.nEvents === 'number') item.nEvents += 1;
  markAhead(item, ahead);
  return item;
}

/** Marks a header put as recording an end ahead of its count (`ahead`: that end's sequence number; null: none). */
function markAhead(item: Item, ahead: string | null): void {
  if (ahead !== null && !(item[UNCOUNTED_END] >= ahead)) item[UNCOUNTED_END] = ahead;
}

/**
 * Joins a callback into its file without recording it there (a recording end is recorded in the header):
 * the change, the file item as left, and whether this join wrote it.
 */
async function joinFile(
  w: ItemWrites,
  fileKey: Key,
  read: Item | null,
  cb: Callback,
  counting: Counting,
  cap: Capacity,
): Promise<{ change: NonNullable<FileChange>; item: Item; wrote: boolean; transition: FileTransition }> {
  let file = read;
  for (let attempt = 1; ; attempt++) {
    if (attempt > 1) {
      await w.pause(attempt, cb);
      file = await w.readItem(w.files, fileKey, cap);
    }
    const before = file ? w.fileRecord(file) : null;
    const after = applyToFile(before, cb);
    const tally = tallyOf(file);
    const transition = transitionOf(before, after);
    // What events see of the file before: unknown when an uncounted writer left it (item-writes.ts, `unsettled`).
    const change = { before: unsettled(counting, file) ? null : before, after };
    if (file && sameFacts(before, after, tally, tally)) return { change, item: file, wrote: false, transition };
    const item = fileToItem(fileKey, after, tally, keysOf(file), w.markFor(counting, file, before, 0));
    if (file?.sp) item.sp = true;
    if (await w.putItem(w.files, item, file, cap)) return { change, item, wrote: true, transition };
  }
}
