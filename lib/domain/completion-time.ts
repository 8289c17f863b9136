// When a completed task completed, in platform time (what `task.completed` reports): the earliest moment, from its
// end on, at which every file named by then was uploaded (a file named later, already uploaded, does not move it).
// A file holds the task back from the moment it is named until its upload, so the moment is the first one from the
// end that no such span covers: the end, or an upload. Folded file by file, the spans sorted by where they start,
// so that a recount finds it a page of files at a time, in bounded memory (lib/aws/dynamo/write/task-recount.ts).
import type { FileRecord } from './task.ts';

/** The timestamp a rank encodes (rankOf). */
const rankTime = (rank: string): number => Number(rank.slice(0, rank.indexOf('|')));

/** When a file was first named: its first failed upload, its winning upload or the slice or end naming it. */
function namedAt(f: FileRecord): number {
  const times = [f.firstFailureAt, f.upload?.at, f.sizeRank === null ? null : rankTime(f.sizeRank)];
  return Math.min(...times.filter((t): t is number => typeof t === 'number'));
}

/** Where the next pass over the files starts, when more spans lay ahead than a pass keeps. */
export type CompletionPass = { at: number } | { from: number };

/**
 * One pass over a task's files, from `from` (the end, for the first): each file added once, in any order, then
 * `moment()`. A pass keeps at most `keep` spans that start after `from` (twice that while it reads); when it had to
 * leave some out and they may matter, `moment()` says where the next pass over the files starts.
 */
export class CompletionSweep {
  private readonly end: number;
  private readonly from: number;
  private readonly keep: number;
  /** The latest moment from the end on: the answer when no moment is free of every span (a file never uploaded). */
  private latest: number;
  /** How far the spans covering `from` reach. */
  private reach: number;
  /** Spans starting after `from`, `[named, uploaded]`: the `keep` earliest once more came. */
  private ahead: [number, number][] = [];
  /** The earliest start among the spans left out of `ahead`. */
  private leftOut = Number.POSITIVE_INFINITY;

  constructor(end: number, opts: { from?: number; keep?: number } = {}) {
    this.end = end;
    this.from = opts.from ?? end;
    this.keep = opts.keep ?? Number.POSITIVE_INFINITY;
    this.latest = end;
    this.reach = this.from;
  }

  add(f: FileRecord): void {
    const uploaded = f.upload?.at ?? Number.POSITIVE_INFINITY;
    if (uploaded >= this.end && uploaded < Number.POSITIVE_INFINITY && uploaded > this.latest) this.latest = uploaded;
    const named = namedAt(f);
    // An empty span, or one over before `from`, covers no moment this pass looks at.
    if (!(named < uploaded) || uploaded <= this.from) return;
    if (named <= this.from) {
      if (uploaded > this.reach) this.reach = uploaded;
      return;
    }
    this.ahead.push([named, uploaded]);
    if (this.ahead.length >= 2 * this.keep) this.trim();
  }

  /** The moment the task completed, or where the next pass starts (spans left out may cover what this one found). */
  moment(): CompletionPass {
    this.trim();
    let at = this.reach;
    let gap = false;
    for (const [named, uploaded] of this.ahead) {
      // No span kept covers `at`, and those left out start later still.
      if (named > at) {
        gap = true;
        break;
      }
      if (uploaded > at) at = uploaded;
    }
    if (at === Number.POSITIVE_INFINITY) return { at: this.latest };
    return !gap && this.leftOut <= at ? { from: at } : { at };
  }

  private trim(): void {
    this.ahead.sort((a, b) => a[0] - b[0]);
    if (this.ahead.length <= this.keep) return;
    this.leftOut = Math.min(this.leftOut, this.ahead[this.keep]![0]);
    this.ahead.length = this.keep;
  }
}
