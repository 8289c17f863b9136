// The counts a task's header keeps (files by upload state, distinct callbacks), and how the writes of one
// batch add to them exactly, whatever crashed before. Pure: the store (lib/aws/dynamo/) keeps the marks and
// the header; docs/task-store.md gives the argument.
//
// Two ways of charging a write to the header:
// - With an SQS sequence number (a FIFO queue, one batch of a task at a time, in order), each file item
//   carries a mark: the sequence number of its last writer, the state the header counts for it, and the
//   callbacks recorded on it that the header has not counted. The header keeps the sequence number of the
//   last message it absorbed; a batch charges each file whose last writer it holds (state now minus the
//   state counted, plus the uncounted callbacks), so a write redelivered after a crash is charged by the
//   batch that absorbs it, once.
// - Without one (a standard queue, older messages), each write charges its own change; a write that cannot
//   tell whether an earlier delivery of it was counted (a duplicate, a join found in place) asks for a
//   recount of its task.
import type { FileState, FileTransition } from './task.ts';

/** What a task's header counts. */
export interface TaskCounts {
  files: number;
  pending: number;
  uploaded: number;
  failed: number;
  /** Distinct callbacks recorded. */
  events: number;
}

export const zeroCounts = (): TaskCounts => ({ files: 0, pending: 0, uploaded: 0, failed: 0, events: 0 });

/** `c` with one file of `state` added (`by` = 1) or taken away (-1). */
function moveState(c: TaskCounts, state: FileState, by: number): void {
  if (state === null) return;
  c.files += by;
  c[state] += by;
}

/** The change of the counts when one file goes from one state to another and `events` callbacks are recorded. */
export function changeOf(from: FileState, to: FileState, events = 0): TaskCounts {
  const c = zeroCounts();
  moveState(c, from, -1);
  moveState(c, to, +1);
  c.events = events;
  return c;
}

export function addCounts(a: TaskCounts, b: TaskCounts): TaskCounts {
  return {
    files: a.files + b.files,
    pending: a.pending + b.pending,
    uploaded: a.uploaded + b.uploaded,
    failed: a.failed + b.failed,
    events: a.events + b.events,
  };
}

export const isZero = (c: TaskCounts): boolean =>
  c.files === 0 && c.pending === 0 && c.uploaded === 0 && c.failed === 0 && c.events === 0;

// ---------------------------------------------------------------------------------------------------
// Sequence numbers

/** Digits a stored sequence number is padded to: SQS's are up to 20+ digits, beyond 2^53, so never numbers. */
const SEQUENCE_DIGITS = 40;

/** An SQS SequenceNumber as a fixed-width string that sorts as the number does; null when absent or not one. */
export function sequenceOf(raw: string | null | undefined): string | null {
  if (typeof raw !== 'string' || !/^[0-9]{1,40}$/.test(raw)) return null;
  return raw.padStart(SEQUENCE_DIGITS, '0');
}

/** The sequence number just before `seq` (both fixed-width): what a header has absorbed when `seq` is next. */
export function sequenceBefore(seq: string): string {
  const n = BigInt(seq);
  return (n > 0n ? n - 1n : 0n).toString().padStart(SEQUENCE_DIGITS, '0');
}

/** Sequence numbers below this one were absorbed by a header that holds none. */
export const NONE_ABSORBED = ''.padStart(SEQUENCE_DIGITS, '0');

// ---------------------------------------------------------------------------------------------------
// Marks

/** What a file item says of the header's count of it (sequence-numbered writes only). */
export interface FileMark {
  /** The sequence number of the file's last writer. */
  seq: string;
  /** The state the header counts for the file until that writer is absorbed. */
  counted: FileState;
  /** Callbacks recorded on the file item since, not counted by the header. */
  events: number;
}

/**
 * The mark a write leaves on a file: `absorbed` is the last sequence number the task's header has counted
 * (the one before the batch's first, or as read when the batch is a redelivery). A mark whose writer was
 * absorbed is counted as the file stands; otherwise the header still counts what the mark says.
 */
export function markAfterWrite(
  mark: FileMark | null,
  before: FileState,
  seq: string,
  absorbed: string,
  newEvents: number,
): FileMark {
  if (mark === null || mark.seq <= absorbed) return { seq, counted: before, events: newEvents };
  return { seq: mark.seq > seq ? mark.seq : seq, counted: mark.counted, events: mark.events + newEvents };
}

// ---------------------------------------------------------------------------------------------------
// What one write leaves its header to count

export interface WriteCharge {
  /** The delivery's sequence number (fixed-width); null without one. */
  sequence: string | null;
  /** The file the write concerns, as the write left or found it; null when it names none. */
  file: { name: string; state: FileState; mark: FileMark | null } | null;
  /** This write's own change of its file's state (null: none, or not known). */
  transition: FileTransition | null;
  /** Callbacks this write recorded that neither a mark nor the header's own put counts. */
  events: number;
  /** Without a sequence number: whether an earlier delivery of this write may have gone uncounted. */
  uncertain: boolean;
}

/**
 * What the writes of one task in one batch add to its header. `absorbed`: the header's sequence number as
 * the batch began (null without sequence numbers). A file whose mark is not absorbed is charged once, from
 * its last mark, by the batch holding the mark's writer, whichever writes of the batch (or of an earlier
 * delivery of it) it covers; any other write charges its own change: without sequence numbers, or written
 * late (its sequence number absorbed already, after a recount) onto a file whose mark is absorbed.
 */
export function batchChange(charges: readonly WriteCharge[], absorbed: string | null): TaskCounts {
  let total = zeroCounts();
  const lastMarks = new Map<string, { state: FileState; mark: FileMark }>();
  const last = lastSequence(charges);
  for (const c of charges) {
    const f = c.file;
    const byMark = absorbed !== null && f?.mark != null && f.mark.seq > absorbed;
    // A mark left by a later message (an earlier delivery of it wrote the file before this batch came apart
    // and came back in pieces): that message's batch charges it, from the state it says is counted.
    if (byMark && last !== null && f!.mark!.seq > last) {
      total.events += c.events;
      continue;
    }
    if (!byMark || !f?.mark) {
      const t = c.transition;
      total = addCounts(total, t ? changeOf(t.from, t.to, c.events) : changeOf(null, null, c.events));
      continue;
    }
    total.events += c.events;
    const seen = lastMarks.get(f.name);
    if (!seen || seen.mark.seq <= f.mark.seq) lastMarks.set(f.name, { state: f.state, mark: f.mark });
  }
  for (const { state, mark } of lastMarks.values())
    total = addCounts(total, changeOf(mark.counted, state, mark.events));
  return total;
}

/**
 * What the header still counts differently from how the batch's files stand once the batch is absorbed: the
 * files whose mark is a later message's (an earlier delivery of it wrote them before this batch came apart and
 * came back in pieces) stay counted as their marks say until that message's batch charges them (see
 * `batchChange`). The header's counts plus this are the counts of the files as they stand, and only those may
 * say the task's status: the header alone may hold an end whose file it does not count yet, a task that no
 * subset of the callbacks makes (an end with its file pending or failed, counted as no file: completed).
 */
export function laterMarksChange(
  charges: readonly WriteCharge[],
  absorbed: string | null,
  recountedThrough: string | null = null,
): TaskCounts {
  const charged = lastSequence(charges);
  // A recount through a later sequence number (a record given up, a copy sent again) counted those marks already.
  const last = charged !== null && recountedThrough !== null && recountedThrough > charged ? recountedThrough : charged;
  if (absorbed === null || last === null) return zeroCounts();
  const later = new Map<string, { state: FileState; mark: FileMark }>();
  for (const c of charges) {
    const f = c.file;
    if (!f?.mark || f.mark.seq <= absorbed || f.mark.seq <= last) continue;
    const seen = later.get(f.name);
    if (!seen || seen.mark.seq <= f.mark.seq) later.set(f.name, { state: f.state, mark: f.mark });
  }
  let total = zeroCounts();
  for (const { state, mark } of later.values()) total = addCounts(total, changeOf(mark.counted, state));
  return total;
}

/** The largest sequence number among the charges (null when none carries one). */
export function lastSequence(charges: readonly WriteCharge[]): string | null {
  let last: string | null = null;
  for (const c of charges) if (c.sequence !== null && (last === null || c.sequence > last)) last = c.sequence;
  return last;
}
