// A slice or an upload recorded in its file item (./apply-callback.ts gives the write path): the file's
// join and the callback's key in one versioned put while the file keeps keys inline, further keys on items
// of their own after the join; the task's header is created or its identity improved first when needed.
import type { Callback } from '../../domain/callback.ts';
import type { Capacity } from '../../domain/task-store.ts';
import { applyToFile, applyToHeader, sameHeader, tallyCallback } from '../../domain/task.ts';
import { sameFacts, transitionOf } from '../../domain/task-parts.ts';
import {
  fileToItem,
  headerFromItem,
  headerToItem,
  keysOf,
  recordedToItem,
  recordedValue,
  tallyOf,
  type BodyRef,
} from './items.ts';
import { marked, unsettled, type Counting, type HeaderBefore, type ItemWrites, type Outcome } from './item-writes.ts';
import { oversizedItem } from './limits.ts';
import { ContentionError, toItem, type Item, type Key } from './table-client.ts';
import { Keys } from './table.ts';

/** A slice or an upload: recorded in its file. */
export async function applyToFileItem(
  w: ItemWrites,
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
      await w.pause(attempt, cb, optimistic && attempt === 2);
      file = await w.readItem(w.files, fileKey, cap);
    }
    const keys = keysOf(file);
    if (Object.hasOwn(keys, cb.key)) {
      // A remembered copy shows the key for good, not necessarily the mark an earlier delivery of this message
      // left (another worker may have written it). A message received for the first time needs no other mark
      // than the copy's: the marks its batch charges are those of its task's records in this batch (ordered
      // groups deliver a task's messages only once the earlier ones are done), and every write of this
      // worker's own is in its copy, or fails on its version.
      if (marked(counting) && counting.redelivered && attempt === 1 && fileRead !== null)
        file = await w.readItem(w.files, fileKey, cap);
      // The delivery that recorded it may have stopped before its task's header was written (a header put is
      // held for its batch's count): the header this callback would have made is made now, or its count of the
      // task would find none.
      if (!headerDone && headerRead === null) {
        const { header } = await ensureHeader(w, headerKey, null, cb, counting, cap);
        if (header.service !== cb.service) return w.serviceMismatch(cb, header);
        headerDone = true;
      }
      return {
        outcome: 'duplicate',
        file: { before: null, after: w.fileRecord(file!) },
        // Whoever recorded the key counted it, or left it on the file's mark.
        charge: w.charge(counting, file, null, 0, true),
      };
    }
    const before = file ? w.fileRecord(file) : null;
    const after = applyToFile(before, cb);
    const tally = tallyCallback(tallyOf(file), cb);
    const transition = transitionOf(before, after);
    // What events see of the file before: unknown when an uncounted writer left it (item-writes.ts, `unsettled`).
    const seen = unsettled(counting, file) ? null : before;
    const inline = Object.keys(keys).length < w.inlineKeys;
    const mark = w.markFor(counting, file, before, inline ? 1 : 0);
    const item = fileToItem(fileKey, after, tally, inline ? { ...keys, [cb.key]: recordedValue(cb, ref) } : keys, mark);
    // A file whose keys go on beyond it says so: readers count its attempts there only then.
    if (!inline || file?.sp) item.sp = true;
    if (!headerDone) {
      // A callback DynamoDB would refuse is refused before it writes the task's header.
      const refused = oversizedItem('file', toItem(item));
      if (refused) return { outcome: 'quarantined', reason: 'invalid_callback', detail: refused };
      const { header, created } = await ensureHeader(w, headerKey, headerRead as Item | null, cb, counting, cap);
      if (header.service !== cb.service) return w.serviceMismatch(cb, header);
      if (created) headerBefore = null;
      headerDone = true;
    }
    if (inline) {
      // Marks count the new key; without them (or for a write the header absorbed already) this write does.
      const charge = w.charge(counting, item, transition, 0, false, 1);
      // The next write of the file in this batch may carry this one (held): one write for both.
      if (await w.putItem(w.files, item, file, cap, counting.hold))
        return { outcome: 'applied', transition, file: { before: seen, after }, headerBefore, charge };
      continue;
    }
    // The file keeps no more keys: its join first (idempotent), then the key on an item of its own,
    // whose conditional put tells a new callback from one recorded before.
    const joined = !sameFacts(before, after, tallyOf(file), tally) || !file?.sp;
    if (joined && !(await w.putItem(w.files, item, file, cap))) continue;
    const written = joined ? item : file;
    const recordedKey = { pk: fileKey.pk, sk: Keys.recordedSk(cb.appKey, fileName, cb.key) };
    const recorded = await w.table.putIf(
      recordedToItem(recordedKey, fileName, cb, ref, counting.seq),
      'attribute_not_exists(pk)',
      undefined,
      cap,
    );
    if (!recorded) {
      // Recorded by an earlier delivery of this very message that stopped before its batch was counted:
      // the key's item says which message recorded it.
      const own = marked(counting) && (await w.table.get(recordedKey, cap))?.q === counting.seq ? 1 : 0;
      return {
        outcome: 'duplicate',
        file: { before: null, after },
        charge: w.charge(counting, written, null, own, true),
      };
    }
    // A join found in place may be an earlier delivery's, stopped before it recorded the key: the file and
    // the task before this callback are then unknown, and its events are published again (same ids).
    const charge = w.charge(counting, written, joined ? transition : null, 1, !joined);
    return joined
      ? { outcome: 'applied', transition, file: { before: seen, after }, headerBefore, charge }
      : { outcome: 'applied', transition: null, file: { before: null, after }, headerBefore: null, charge };
  }
}

/**
 * Creates the task's header, or improves its identity, when this callback would change it. `read` may
 * be stale (eventually consistent): it then shows less than the header holds, so a header it says is
 * good enough is; anything else is read again, strongly, before a versioned put. Returns the header, and
 * whether this callback created the task.
 */
async function ensureHeader(
  w: ItemWrites,
  headerKey: Key,
  read: Item | null,
  cb: Callback,
  counting: Counting,
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
      const hold = w.holdsHeader(counting, current);
      const rebuild = (base: Item | null) => headerWith(headerKey, base, cb);
      if (await w.putItem(w.headers, item, current, cap, hold, rebuild))
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
