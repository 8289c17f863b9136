// A slice or an upload recorded in its file item (./apply-callback.ts gives the write path): the file's
// join and the callback's key in one versioned put while the file keeps keys inline, further keys on items
// of their own after the join; the task's header is created or its identity improved first when needed.
import type { Callback } from '../../../domain/callback.ts';
import { applyToFile, applyToHeader, sameHeader, tallyCallback, type FileTransition } from '../../../domain/task.ts';
import { sameFacts, transitionOf } from '../../../domain/task-parts.ts';
import {
  fileToItem,
  headerFromItem,
  headerToItem,
  keysOf,
  recordedToItem,
  recordedValue,
  tallyOf,
} from '../table/items.ts';
import {
  marked,
  unsettled,
  type CallbackWrite,
  type FileChange,
  type HeaderBefore,
  type Outcome,
} from './item-writes.ts';
import { oversizedItem } from '../table/limits.ts';
import { ContentionError, toItem, type Item, type Key } from '../table/table-client.ts';
import { Keys } from '../table/table.ts';

/** The file a slice or an upload is recorded in: its key, its name, and the item as read (null: absent or not read). */
export interface FileTarget {
  key: Key;
  name: string;
  read: Item | null;
}

/** Where one write of a file stands across its attempts. */
interface FileAttempt {
  file: Item | null;
  /** The task's header is as this callback needs it (known, found, or written). */
  headerDone: boolean;
  headerBefore: HeaderBefore;
}

/** A slice or an upload: recorded in its file. `headerRead`: `known` when this writer knows the header. */
export async function applyToFileItem(
  c: CallbackWrite,
  target: FileTarget,
  headerRead: Item | null | 'known',
  optimistic: boolean,
): Promise<Outcome> {
  const at: FileAttempt = { file: target.read, headerDone: headerRead === 'known', headerBefore: 'unchanged' };
  for (let attempt = 1; ; attempt++) {
    if (attempt > 1) {
      await c.w.pause(attempt, c.cb, optimistic && attempt === 2);
      at.file = await c.w.readItem(c.w.files, target.key, c.cap);
    }
    if (Object.hasOwn(keysOf(at.file), c.cb.key)) return duplicateInFile(c, target, at, headerRead, attempt);
    const outcome = await recordInFile(c, target, at, headerRead);
    if (outcome) return outcome;
  }
}

/** The callback found recorded in its file: a duplicate, its header made if the delivery that recorded it did not. */
async function duplicateInFile(
  c: CallbackWrite,
  target: FileTarget,
  at: FileAttempt,
  headerRead: Item | null | 'known',
  attempt: number,
): Promise<Outcome> {
  const { w, counting } = c;
  // A remembered copy shows the key for good, not necessarily the mark an earlier delivery of this message
  // left (another worker may have written it). A message received for the first time needs no other mark
  // than the copy's: the marks its batch charges are those of its task's records in this batch (ordered
  // groups deliver a task's messages only once the earlier ones are done), and every write of this
  // worker's own is in its copy, or fails on its version.
  if (marked(counting) && counting.redelivered && attempt === 1 && target.read !== null)
    at.file = await w.readItem(w.files, target.key, c.cap);
  // The delivery that recorded it may have stopped before its task's header was written (a header put is
  // held for its batch's count): the header this callback would have made is made now, or its count of the
  // task would find none.
  if (!at.headerDone && headerRead === null) {
    const { header } = await ensureHeader(c, null);
    if (header.service !== c.cb.service) return w.serviceMismatch(c.cb, header);
    at.headerDone = true;
  }
  return {
    outcome: 'duplicate',
    file: { before: null, after: w.fileRecord(at.file!) },
    // Whoever recorded the key counted it, or left it on the file's mark.
    charge: w.charge(counting, at.file, { uncertain: true }),
  };
}

/** One attempt at recording the callback in its file (null: the item changed meanwhile, try again). */
async function recordInFile(
  c: CallbackWrite,
  target: FileTarget,
  at: FileAttempt,
  headerRead: Item | null | 'known',
): Promise<Outcome | null> {
  const { w, cb, counting } = c;
  const file = at.file;
  const keys = keysOf(file);
  const before = file ? w.fileRecord(file) : null;
  const after = applyToFile(before, cb);
  const tally = tallyCallback(tallyOf(file), cb);
  const transition = transitionOf(before, after);
  const inline = Object.keys(keys).length < w.inlineKeys;
  const mark = w.markFor(counting, file, before, inline ? 1 : 0);
  const recorded = inline ? { ...keys, [cb.key]: recordedValue(cb, c.ref) } : keys;
  const item = fileToItem(target.key, after, tally, recorded, mark);
  // A file whose keys go on beyond it says so: readers count its attempts there only then.
  if (!inline || file?.sp) item.sp = true;
  if (!at.headerDone) {
    // A callback DynamoDB would refuse is refused before it writes the task's header.
    const refused = oversizedItem('file', toItem(item));
    if (refused) return { outcome: 'quarantined', reason: 'invalid_callback', detail: refused };
    const { header, created } = await ensureHeader(c, headerRead as Item | null);
    if (header.service !== cb.service) return w.serviceMismatch(cb, header);
    if (created) at.headerBefore = null;
    at.headerDone = true;
  }
  // What events see of the file before: unknown when an uncounted writer left it (item-writes.ts, `unsettled`).
  const change = { before: unsettled(counting, file) ? null : before, after };
  if (!inline)
    return recordBeyondFile(c, target, at, {
      item,
      transition,
      change,
      joined: !sameFacts(before, after, tallyOf(file), tally) || !file?.sp,
    });
  // Marks count the new key; without them (or for a write the header absorbed already) this write does.
  const charge = w.charge(counting, item, { transition, inline: 1, uncertain: false });
  // The next write of the file in this batch may carry this one (held): one write for both.
  if (!(await w.putItem(w.files, item, file, c.cap, { hold: counting.hold }))) return null;
  return { outcome: 'applied', transition, file: change, headerBefore: at.headerBefore, charge };
}

/**
 * A file that keeps no more keys: its join first (idempotent), then the key on an item of its own, whose
 * conditional put tells a new callback from one recorded before (null: the file changed meanwhile).
 */
async function recordBeyondFile(
  c: CallbackWrite,
  target: FileTarget,
  at: FileAttempt,
  put: { item: Item; transition: FileTransition | null; change: NonNullable<FileChange>; joined: boolean },
): Promise<Outcome | null> {
  const { w, cb, counting } = c;
  const { item, transition, change, joined } = put;
  if (joined && !(await w.putItem(w.files, item, at.file, c.cap))) return null;
  const written = joined ? item : at.file;
  const recordedKey = { pk: target.key.pk, sk: Keys.recordedSk(cb.appKey, target.name, cb.key) };
  const recordedItem = recordedToItem(recordedKey, target.name, cb, c.ref, counting.seq);
  if (!(await w.table.putIf(recordedItem, 'attribute_not_exists(pk)', undefined, c.cap))) {
    // Recorded by an earlier delivery of this very message that stopped before its batch was counted:
    // the key's item says which message recorded it.
    const own = marked(counting) && (await w.table.get(recordedKey, c.cap))?.q === counting.seq ? 1 : 0;
    const charge = w.charge(counting, written, { events: own, uncertain: true });
    return { outcome: 'duplicate', file: { before: null, after: change.after }, charge };
  }
  // A join found in place may be an earlier delivery's, stopped before it recorded the key: the file and
  // the task before this callback are then unknown, and its events are published again (same ids).
  const charge = w.charge(counting, written, { transition: joined ? transition : null, events: 1, uncertain: !joined });
  return joined
    ? { outcome: 'applied', transition, file: change, headerBefore: at.headerBefore, charge }
    : { outcome: 'applied', transition: null, file: { before: null, after: change.after }, headerBefore: null, charge };
}

/**
 * Creates the task's header, or improves its identity, when this callback would change it. `read` may
 * be stale (eventually consistent): it then shows less than the header holds, so a header it says is
 * good enough is; anything else is read again, strongly, before a versioned put. Returns the header, and
 * whether this callback created the task.
 */
async function ensureHeader(c: CallbackWrite, read: Item | null): Promise<{ header: Item; created: boolean }> {
  const { w, cb, headerKey, cap } = c;
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
      const rebuild = (base: Item | null) => headerWith(headerKey, base, cb);
      if (await w.putItem(w.headers, item, current, cap, { hold: c.counting.holdHeader, rebuild }))
        return { header: item, created: current === null };
      await w.pause(attempt, cb);
    }
    current = await w.readItem(w.headers, headerKey, cap);
    consistent = true;
  }
}

/** A header with a file callback's identity joined (./held-puts.ts: a held put joined again); as is if no better. */
function headerWith(headerKey: Key, base: Item | null, cb: Callback): Item {
  if (base && base.service !== cb.service) throw new ContentionError(`task ${cb.id} is of another service now`);
  const before = base ? headerFromItem(base) : null;
  const after = applyToHeader(before, cb);
  if (base && before && sameHeader(before, after)) return base;
  return headerToItem(headerKey, after, tallyOf(base), keysOf(base), base);
}
