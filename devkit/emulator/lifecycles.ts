// Pure generation of what the platform would send: recording and screenshot task lifecycles as an
// ordered list of scheduled sends. Two clocks are kept apart on purpose. Bodies carry realistic platform
// time (a 60-minute recording spans 60 minutes of `timestamp`s, upload retries are 10 s apart, a give-up
// comes 24 h after the first failure); the send schedule (`at`) is that time divided by a compression
// factor, so a whole run is sent in seconds.
import { RECORDING_MODES } from '../../lib/platform/modes.ts';
import type { Service } from '../../lib/platform/services.ts';
import { bodyOf } from './plan-bodies.ts';
import {
  MINUTE,
  makeSessions,
  planRecording,
  planScreenshot,
  type TaskFaults,
  type TaskPlan,
  type TaskShape,
} from './plans.ts';
import { createRandom } from './random.ts';
import { applyStorageOutage, type StorageOutage } from './storage-outage.ts';
import { reorderKeys } from './reorder-keys.ts';

export interface ScheduledSend {
  service: Service;
  /** The callback body; serialised as is, so key order is part of what is sent. */
  body: Record<string, unknown>;
  /** When to send it: milliseconds of wall-clock time from the start of the run. */
  at: number;
  /** recordId or imageId. */
  taskId: string;
  /** A repeat of a body sent before (fault injection). */
  duplicate: boolean;
}

export interface FaultOptions extends TaskFaults {
  /** Probability that a callback is delivered more than once (exact duplicate, sometimes keys reordered). */
  duplicates?: number;
  /** Sends whose `at` fall within this many milliseconds of each other are shuffled. */
  reorderWindowMs?: number;
  /**
   * Sends less than this many milliseconds of platform time apart are shuffled instead (the platform's
   * own reordering spans seconds, whatever the schedule's compression).
   */
  reorderPlatformMs?: number;
  /** A storage outage of the whole run: the uploads within it fail every 10 s until it ends. */
  storageOutage?: StorageOutage;
}

export interface LifecycleOptions extends FaultOptions, TaskShape {
  seed: number | string;
  recordings: number;
  screenshots: number;
  appKey: string;
  /** Platform milliseconds per wall-clock millisecond of the schedule (3600: an hour in a second). */
  compress: number;
  /** Platform time (ms) the run starts at; default: so that the run's last callback is just before `now`. */
  baseTime?: number;
  /** The current time, for the default base time. */
  now?: number;
}

export interface GeneratedRun {
  seed: string;
  baseTime: number;
  /** Part of every task id: different for every base time, so separate runs never share a task. */
  runId: string;
  sends: ScheduledSend[];
  tasks: { recording: number; screenshot: number };
  /** Platform time from the first to the last callback. */
  platformSpanMs: number;
  /** Wall-clock time from the first to the last scheduled send. */
  scheduleSpanMs: number;
}

export const DEFAULT_COMPRESS = 3600;
/**
 * Beyond this much platform time the schedule is compressed a further TAIL_COMPRESS times, so that a
 * 24-hour give-up does not dominate the length of a run.
 */
const TAIL_KNEE_MS = 4 * 60 * 60 * 1000;
const TAIL_COMPRESS = 24;

/** Wall-clock offset of a platform time offset. Monotonic, so the schedule keeps the platform's order. */
export function scheduleOffset(platformMs: number, compress: number): number {
  const warped = platformMs <= TAIL_KNEE_MS ? platformMs : TAIL_KNEE_MS + (platformMs - TAIL_KNEE_MS) / TAIL_COMPRESS;
  return Math.round(warped / compress);
}

const pad = (n: number) => String(n).padStart(4, '0');

function seedTag(seed: string): string {
  return seed.replace(/[^A-Za-z0-9]/g, '').slice(0, 16) || 'seed';
}

export function generateRun(opts: LifecycleOptions): GeneratedRun {
  if (!(opts.compress > 0)) throw new Error('compress must be a positive number');
  const seed = String(opts.seed);
  const rng = createRandom(seed);
  const recordings = Math.max(0, Math.trunc(opts.recordings));
  const screenshots = Math.max(0, Math.trunc(opts.screenshots));
  const sessions = makeSessions(rng, Math.max(1, Math.ceil((recordings + screenshots) / 4)));
  // Modes rotate from a seeded start, so that every mode appears once there are as many recordings.
  const modes = RECORDING_MODES.map((m) => m.mode);
  const firstMode = rng.int(0, modes.length - 1);
  // Tasks start at different moments within half an hour of platform time.
  const spread = 30 * MINUTE;

  const plans: TaskPlan[] = [];
  for (let i = 0; i < recordings; i++) {
    const plan = planRecording(rng, i, modes[(firstMode + i) % modes.length]!, rng.pick(sessions), opts);
    plan.offset = rng.int(0, spread);
    plans.push(plan);
  }
  for (let i = 0; i < screenshots; i++) {
    const plan = planScreenshot(rng, i, rng.pick(sessions), opts);
    plan.offset = rng.int(0, spread);
    plans.push(plan);
  }

  if (opts.storageOutage) for (const plan of plans) applyStorageOutage(plan, opts.storageOutage);
  let span = 0;
  for (const plan of plans) for (const ev of plan.events) span = Math.max(span, plan.offset + ev.rel);
  // Drawn whether or not a base time is given, so that the rest of the run does not depend on it.
  const slack = rng.int(0, 5 * MINUTE);
  const baseTime = Math.trunc(opts.baseTime ?? (opts.now ?? Date.now()) - span - slack);
  const runId = baseTime.toString(36);
  const idPrefix = `${seedTag(seed)}-${runId}`;

  interface Pending extends ScheduledSend {
    seq: number;
    /** When it is sent, in platform time from the run's start. */
    platformAt: number;
  }
  const sends: Pending[] = [];
  let seq = 0;
  for (const plan of plans) {
    const recording = plan.service === 'recording';
    const taskId = `${recording ? 'rec' : 'img'}-${idPrefix}-${pad(plan.index + 1)}`;
    const t0 = baseTime + plan.offset;
    for (const ev of plan.events) {
      const body = bodyOf(plan, ev, t0, opts.appKey, taskId);
      sends.push({
        service: plan.service,
        body,
        at: scheduleOffset(plan.offset + ev.rel, opts.compress),
        taskId,
        duplicate: false,
        seq: seq++,
        platformAt: plan.offset + ev.rel,
      });
    }
  }
  const byTime = (a: Pending, b: Pending) =>
    a.at - b.at || (a.body.timestamp as number) - (b.body.timestamp as number) || a.seq - b.seq;
  sends.sort(byTime);

  const duplicates = opts.duplicates ?? 0;
  if (duplicates > 0) {
    const originals = sends.length;
    for (let i = 0; i < originals; i++) {
      const original = sends[i]!;
      if (!rng.chance(duplicates)) continue;
      const copies = rng.chance(0.2) ? 2 : 1;
      for (let c = 0; c < copies; c++) {
        // A repeat comes a little later, as a sender's re-delivery would; half of them with keys reordered.
        const body = rng.chance(0.5) ? reorderKeys(original.body, rng) : structuredClone(original.body);
        const delay = rng.int(1, 250);
        sends.push({
          ...original,
          body,
          at: original.at + delay,
          duplicate: true,
          seq: seq++,
          platformAt: original.platformAt + delay * opts.compress,
        });
      }
    }
    sends.sort(byTime);
  }

  const platformWindow = opts.reorderPlatformMs ?? 0;
  const window = opts.reorderWindowMs ?? 0;
  const near = (a: Pending, b: Pending) =>
    platformWindow > 0 ? b.platformAt - a.platformAt < platformWindow : b.at - a.at < window;
  if (window > 0 || platformWindow > 0) {
    // Shuffle which send goes out in which slot, group by group of sends close enough to each other.
    for (let start = 0; start < sends.length; ) {
      let end = start + 1;
      while (end < sends.length && near(sends[start]!, sends[end]!)) end++;
      if (end - start > 1) {
        const slots = sends.slice(start, end).map((s) => s.at);
        const group = rng.shuffle(sends.slice(start, end));
        group.forEach((s, k) => {
          s.at = slots[k]!;
          sends[start + k] = s;
        });
      }
      start = end;
    }
  }

  // The first send goes out at once, whenever in the half-hour spread its task started.
  const origin = sends[0]?.at ?? 0;
  const out: ScheduledSend[] = sends.map(({ seq: _seq, platformAt: _p, ...send }) => ({
    ...send,
    at: send.at - origin,
  }));
  let firstTs = Infinity;
  let lastTs = -Infinity;
  for (const s of out) {
    const ts = s.body.timestamp as number;
    if (ts < firstTs) firstTs = ts;
    if (ts > lastTs) lastTs = ts;
  }
  return {
    seed,
    baseTime,
    runId,
    sends: out,
    tasks: { recording: recordings, screenshot: screenshots },
    platformSpanMs: out.length ? lastTs - firstTs : 0,
    scheduleSpanMs: out.length ? out[out.length - 1]!.at - out[0]!.at : 0,
  };
}
