// The recount as it was first written, every item of the task in memory at once: the oracle the paged recount
// (lib/aws/dynamo/write/task-recount.ts) and the completion folded file by file (lib/domain/completion-time.ts) are
// checked against. Kept here verbatim in what it computes, never used by the code.
import { assemble } from '../../lib/aws/dynamo/table/assembled-task.ts';
import { fileFromItem, markOf } from '../../lib/aws/dynamo/table/items.ts';
import type { Item } from '../../lib/aws/dynamo/table/table-client.ts';
import { lostFiles } from '../../lib/domain/deadlines.ts';
import { NONE_ABSORBED, addCounts, changeOf, type TaskCounts } from '../../lib/domain/task-counts.ts';
import { toSummary, type TaskParts } from '../../lib/domain/task-parts.ts';
import { fileState, type FileRecord, type Tally } from '../../lib/domain/task.ts';

/** When a completed task completed: every moment from its end on tried in order, each against every file. */
export function completedAtByEveryMoment(end: number, files: readonly FileRecord[]): number {
  const rankTime = (rank: string) => Number(rank.slice(0, rank.indexOf('|')));
  const namedAt = (f: FileRecord) =>
    Math.min(
      ...[f.firstFailureAt, f.upload?.at, f.sizeRank === null ? null : rankTime(f.sizeRank)].filter(
        (t): t is number => typeof t === 'number',
      ),
    );
  const uploadedAt = (f: FileRecord) => f.upload?.at ?? Number.POSITIVE_INFINITY;
  const moments = [end, ...files.map(uploadedAt)].filter((t) => t >= end && t < Number.POSITIVE_INFINITY);
  moments.sort((a, b) => a - b);
  const done = (t: number) => files.every((f) => namedAt(f) > t || uploadedAt(f) <= t);
  return moments.find(done) ?? moments[moments.length - 1]!;
}

export interface WholeTaskRecount {
  absorbed: string;
  counts: TaskCounts;
  tally: Tally;
  lost: number;
  done: number | null;
}

/** The recount of a task from its header and every other item of it, read at once. */
export function wholeTaskRecount(header: Item, parts: readonly Item[], through: string | null): WholeTaskRecount {
  const stored = header.seq ?? NONE_ABSORBED;
  const absorbed = through !== null && through > stored ? through : stored;
  const whole = assemble(header, parts);
  const counts = zeroSafe(countedItems(whole.parts, parts, absorbed));
  const standing = { ...whole.parts, counts: countedItems(whole.parts, [], absorbed) };
  const completed = toSummary(standing).status === 'completed';
  const end = whole.parts.header.endedAt ?? whole.parts.header.identAt;
  const done = header.doneAt ?? (completed ? completedAtByEveryMoment(end, whole.parts.files) : null);
  return {
    absorbed,
    counts,
    tally: whole.parts.tally,
    lost: lostFiles(whole.parts.files),
    done,
  };
}

function zeroSafe(c: TaskCounts): TaskCounts {
  return {
    files: Math.max(0, c.files),
    pending: Math.max(0, c.pending),
    uploaded: Math.max(0, c.uploaded),
    failed: Math.max(0, c.failed),
    events: Math.max(0, c.events),
  };
}

function countedItems(parts: TaskParts, items: readonly Item[], absorbed: string): TaskCounts {
  let counts: TaskCounts = { files: 0, pending: 0, uploaded: 0, failed: 0, events: parts.eventCount };
  for (const f of parts.files) counts = addCounts(counts, changeOf(null, fileState(f)));
  for (const item of items) {
    const mark = markOf(item);
    if (mark && mark.seq > absorbed) {
      counts = addCounts(counts, changeOf(fileState(fileFromItem(item)), mark.counted, -mark.events));
    } else if (typeof item.q === 'string' && item.q > absorbed) {
      counts.events -= 1;
    }
  }
  return counts;
}
