// A start or an end recorded in its task's header item (./apply-callback.ts gives the write path); a
// recording end first has what can refuse it settled, then joins its file's size, then is recorded.
import {
  applyIdentity,
  applyToFile,
  applyToHeader,
  emptyTally,
  tallyCallback,
  type FileTransition,
} from '../../../domain/task.ts';
import { sameFacts, transitionOf } from '../../../domain/task-parts.ts';
import {
  UNCOUNTED_END,
  fileToItem,
  headerFromItem,
  headerToItem,
  keysOf,
  recordedValue,
  tallyOf,
} from '../table/items.ts';
import { marked, unsettled, type CallbackWrite, type FileChange, type Outcome } from './item-writes.ts';
import { oversizedItem } from '../table/limits.ts';
import { ContentionError, toItem, type Item, type Key } from '../table/table-client.ts';

/** The file a recording end joins its size into, and its item as read. */
export interface EndFile {
  key: Key;
  read: Item | null;
}

/** What a recording end's join of its file left: the change, the item, whether the join wrote it. */
interface FileJoin {
  change: FileChange;
  item: Item | null;
  wrote: boolean;
  transition: FileTransition | null;
}

const NO_JOIN: FileJoin = { change: null, item: null, wrote: false, transition: null };

/** A start or an end: recorded in the header; a recording end first joins its file's size (`file`). */
export async function applyToHeaderItem(
  c: CallbackWrite,
  headerRead: Item | null,
  file: EndFile | null,
  optimistic: boolean,
): Promise<Outcome> {
  const { w, cb } = c;
  let header = headerRead;
  let join: FileJoin | null = file === null ? NO_JOIN : null;
  for (let attempt = 1; ; attempt++) {
    if (attempt > 1) {
      await w.pause(attempt, cb, optimistic && attempt === 2);
      header = await w.readItem(w.headers, c.headerKey, c.cap);
      if (header && header.service !== cb.service) return w.serviceMismatch(cb, header);
    }
    if (Object.hasOwn(keysOf(header), cb.key)) return duplicateInHeader(c, file);
    const before = header ? headerFromItem(header) : null;
    const item = recordInHeader(c, header, null);
    if (join === null) {
      // What can refuse the end is settled before its file is joined (a file its task would wait for): the
      // header's size, and its service, fixed once the task exists (created first without the end's facts).
      const refused = oversizedItem('header', toItem(item));
      if (refused) return { outcome: 'quarantined', reason: 'invalid_callback', detail: refused };
      const created = await createHeader(c, header);
      if (created === false) continue;
      header ??= created;
      join = await joinFile(c, file!);
    }
    // An end written ahead of its batch's count says so, should the batch stop before it (../table/items.ts): written
    // at once, or held and then written by another put of the header that comes first (a read, a file callback's
    // put, the held callbacks joined again over the header as stored). The count that carries a held put absorbs
    // it, and leaves the mark out (HeaderCounts.putHeld).
    const ahead = cb.type === 3 && marked(c.counting) ? c.counting.seq : null;
    markAhead(item, ahead);
    // The batch's count writes the header anyway: this put is held for it to carry (one write for both).
    const rebuild = (base: Item | null) => recordInHeader(c, base, ahead);
    if (await w.putItem(w.headers, item, header, c.cap, { hold: c.counting.holdHeader, rebuild })) {
      // A join found in place may be an earlier delivery's: without marks its change is not known.
      const of = { transition: join.wrote ? join.transition : null, uncertain: !join.wrote };
      const charge = w.charge(c.counting, join.item, of);
      return { outcome: 'applied', transition: join.transition, file: join.change, headerBefore: before, charge };
    }
  }
}

/** The start or end found recorded in the header: a duplicate. */
function duplicateInHeader(c: CallbackWrite, file: EndFile | null): Outcome {
  const record = file?.read ? c.w.fileRecord(file.read) : null;
  // The key was counted by the put that recorded it; the end's file join, by its mark (or a recount).
  const charge = c.w.charge(c.counting, file ? file.read : null, { uncertain: file !== null });
  return { outcome: 'duplicate', file: record ? { before: null, after: record } : null, charge };
}

/**
 * A recording end's task created first, without the end's facts, when it has no header: the end's facts join the
 * header it creates as they would have joined none. The header it stands on (null: none needed), or false when
 * the put found the task created meanwhile.
 */
async function createHeader(c: CallbackWrite, header: Item | null): Promise<Item | null | false> {
  if (header) return null;
  const created = headerToItem(c.headerKey, applyIdentity(null, c.cb), emptyTally(), {}, null);
  const held = { hold: c.counting.holdHeader, rebuild: (base: Item | null) => base ?? created };
  if (!(await c.w.putItem(c.w.headers, created, null, c.cap, held))) return false;
  return { ...created, ver: 1 };
}

/**
 * A start or an end joined into a header and recorded there, counted in the same put: the put, and how a held put
 * of it is joined again into the header as stored (./held-puts.ts). A header already holding its key is left as is.
 */
function recordInHeader(c: CallbackWrite, base: Item | null, ahead: string | null): Item {
  const { cb } = c;
  if (base && base.service !== cb.service) throw new ContentionError(`task ${cb.id} is of another service now`);
  const keys = keysOf(base);
  if (Object.hasOwn(keys, cb.key)) return base!;
  const before = base ? headerFromItem(base) : null;
  const recorded = { ...keys, [cb.key]: recordedValue(cb, c.ref) };
  const item = headerToItem(c.headerKey, applyToHeader(before, cb), tallyCallback(tallyOf(base), cb), recorded, base);
  // The header counts the callbacks it records in the very put that records them.
  item.nEvents += 1;
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
async function joinFile(c: CallbackWrite, target: EndFile): Promise<FileJoin> {
  const { w, cb, counting, cap } = c;
  const fileKey = target.key;
  let file = target.read;
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
