// One sweep (docs/task-store.md, Deadlines): the DUE buckets from the sweep position (or now − the look-back)
// to the current one, each read with one Query, every task named swept once, then the position moved to the
// bucket before the current one (a worker may still arm the current one) on condition that it only grows. A
// bucket with a task left contended stops the position before it: the next sweep reads it again. A task whose
// writes DynamoDB refuses for good is logged and left behind: no later sweep would do better.
import { bucketStart, moveSweepPosition, readBucketEntries, readSweepPosition } from '../aws/dynamo/time-buckets.ts';
import { DUE_BUCKET_MS } from '../domain/deadlines.ts';
import { UnstorableCallbackError, type Capacity } from '../domain/task-store.ts';
import { refusedByDynamo } from '../aws/dynamo/limits.ts';
import type { Logger } from '../log.ts';
import { inParallel } from '../in-parallel.ts';
import { sweepTask, type SweepDeps } from './sweep-task.ts';
import { errorSentence } from '../text.ts';

export interface SweeperDeps extends SweepDeps {
  log: Logger;
  /** How far back the first sweep (no position yet) reads. */
  lookBackMs: number;
  /** Tasks swept at the same time. */
  concurrency?: number;
}

/** What one sweep did: the tasks it read and what it found. */
export interface SweepSummary {
  from: number;
  to: number;
  entries: number;
  swept: number;
  stale: number;
  leased: number;
  contended: number;
  failed: number;
  /** Tasks whose sweep DynamoDB refused for good (`task_sweep_refused`): left behind, the position not held. */
  refused: number;
  stalled: number;
  settled: number;
  warned: number;
  lost: number;
  published: number;
  readUnits: number;
  writeUnits: number;
  /** Stopped before the current bucket for want of time: the next sweep goes on from its position. */
  cutShort: boolean;
}

/**
 * Time a sweep keeps in hand when it stops reading buckets: for the tasks it has read and its position. A sweep
 * that has more to do than one invocation can (a backlog after an outage) stops at a bucket's start, moves its
 * position through the buckets before it, and the next sweep goes on from there: never the same buckets again and
 * again until each times out.
 */
export const SWEEP_RESERVE_MS = 20_000;

/**
 * The sweep of `now`: every DUE bucket up to now, each task named in one swept; `timeLeftMs` (the invocation's
 * time left) stops it early, at a bucket's start.
 */
export async function sweep(now: number, deps: SweeperDeps, timeLeftMs?: () => number): Promise<SweepSummary> {
  const cap: Capacity = { read: 0, write: 0 };
  const table = deps.sweeps.table;
  const position = await readSweepPosition(table, 'DUE', cap);
  const current = bucketStart('DUE', now);
  const from = position === null ? bucketStart('DUE', now - deps.lookBackMs) : position + DUE_BUCKET_MS;
  const summary: SweepSummary = {
    from,
    to: current,
    entries: 0,
    swept: 0,
    stale: 0,
    leased: 0,
    contended: 0,
    failed: 0,
    refused: 0,
    stalled: 0,
    settled: 0,
    warned: 0,
    lost: 0,
    published: 0,
    readUnits: 0,
    writeUnits: 0,
    cutShort: false,
  };
  // Tasks of one bucket are swept in parallel; a task named twice (in two buckets, or twice in one) once.
  const seen = new Set<string>();
  let firstUnfinished: number | null = null;
  let batch: { bucket: number; appKey: string; id: string }[] = [];
  const flush = async () => {
    const tasks = batch;
    batch = [];
    await inParallel(tasks, deps.concurrency ?? 4, async (e) => {
      try {
        const r = await sweepTask(e, now, deps, cap);
        summary.stalled += r.stalled;
        summary.settled += r.settled;
        summary.warned += r.warned;
        summary.lost += r.lost;
        summary.published += r.published;
        if (r.outcome === 'swept' || r.outcome === 'not_due') summary.swept += 1;
        else summary[r.outcome] += 1;
        if (r.outcome === 'contended' || r.outcome === 'leased') unfinished(e.bucket);
      } catch (err) {
        const fields = {
          appKey: e.appKey,
          id: e.id,
          bucket: new Date(e.bucket).toISOString(),
          error: errorSentence(err),
        };
        // A write DynamoDB can never take (a task written before its keys were checked, whose id leaves its entries'
        // keys too long): swept again, it would fail the same way at every run, and hold the position for good.
        if (refusedByDynamo(err) || err instanceof UnstorableCallbackError) {
          summary.refused += 1;
          deps.log.error('task_sweep_refused', fields);
          return;
        }
        summary.failed += 1;
        unfinished(e.bucket);
        deps.log.error('task_sweep_failed', fields);
      }
    });
  };
  const unfinished = (bucket: number) => {
    if (firstUnfinished === null || bucket < firstUnfinished) firstUnfinished = bucket;
  };
  let lastBucket: number | null = null;
  for await (const entry of readBucketEntries(table, 'DUE', from, current, cap)) {
    if (entry.bucket !== lastBucket && timeLeftMs !== undefined && timeLeftMs() < SWEEP_RESERVE_MS) {
      // At a bucket's start: the buckets before it are read whole, their tasks are swept by the flush below.
      unfinished(entry.bucket);
      summary.cutShort = true;
      break;
    }
    lastBucket = entry.bucket;
    summary.entries += 1;
    const key = `${entry.appKey.length}:${entry.appKey}#${entry.id}`;
    if (seen.has(key)) continue;
    seen.add(key);
    batch.push(entry);
    if (batch.length >= 25) await flush();
  }
  await flush();
  // Through the bucket before the current one, and before any bucket left unfinished.
  const through = Math.min(current - DUE_BUCKET_MS, (firstUnfinished ?? current) - DUE_BUCKET_MS);
  if (through >= from - DUE_BUCKET_MS && (position === null || through > position))
    await moveSweepPosition(table, 'DUE', through, cap);
  summary.readUnits = cap.read;
  summary.writeUnits = cap.write;
  return summary;
}
